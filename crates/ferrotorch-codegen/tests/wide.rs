//! Wide stage loops (Note [Wide stage loops]) against the 128-bit code
//! Cranelift generates for the same expression: bit for bit (any NaN
//! matches any NaN), on every op they cover, the special values, full and
//! short blocks, broadcast scalars, outputs written over their input, and
//! the stages they leave to Cranelift (strided inputs, `pow`, more live
//! values than registers).

use ferrotorch_codegen::expr::{Binary, Cmp, Unary};
use ferrotorch_codegen::{Access, Elem, Expr, Kernel, Strategy};

mod common;
use common::{same, EDGES};

/// Whether this machine runs wide loops (AVX-512, not turned off).
fn wide_here() -> bool {
    ferrotorch_kernels::cpu::level() == ferrotorch_kernels::cpu::Level::Avx512
        && std::env::var("FERROTORCH_FUSER_WIDE").as_deref() != Ok("0")
}

fn specials() -> Vec<f32> {
    let mut v = EDGES.to_vec();
    v.extend([-f32::NAN, 0.5, -0.5, 1.5, -2.5, 2.5, 1.0, -1.0]);
    for i in 0..997 {
        v.push(((i as f32) * 0.731).sin() * 40.0 - 3.0);
    }
    v
}

/// `n` values cycling through `vals`, from `start`.
fn cycle(vals: &[f32], n: usize, start: usize, step: usize) -> Vec<f32> {
    (0..n)
        .map(|i| vals[(start + i * step) % vals.len()])
        .collect()
}

/// Run `k` over `n` elements of `ins` (each contiguous, or its first
/// element for a broadcast one).
fn run(k: &Kernel, ins: &[Vec<f32>], strides: &[i64], n: usize) -> Vec<Vec<f32>> {
    let mut outs = vec![vec![0f32; n]; k.n_outputs()];
    let ip: Vec<*const u8> = ins.iter().map(|v| v.as_ptr().cast()).collect();
    let op: Vec<*mut u8> = outs.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
    unsafe { k.run(&ip, strides, &op, n) };
    outs
}

/// Blocked (wide where it can) against inline, on `n` elements; returns
/// how many stages ran wide.
fn check(e: &Expr, access: &[Access], ins: &[Vec<f32>], n: usize, what: &str) -> usize {
    let strides: Vec<i64> = access
        .iter()
        .map(|a| match a {
            Access::Contiguous => 1,
            Access::Broadcast => 0,
            Access::Strided => 2,
        })
        .collect();
    let wide = Kernel::compile_with(e, Elem::F32, access, Strategy::Blocked).unwrap();
    let narrow = Kernel::compile_with(e, Elem::F32, access, Strategy::Inline).unwrap();
    let got = run(&wide, ins, &strides, n);
    let want = run(&narrow, ins, &strides, n);
    for (j, (g, w)) in got.iter().zip(&want).enumerate() {
        for i in 0..n {
            let x: Vec<f32> = ins
                .iter()
                .zip(&strides)
                .map(|(v, &s)| v[i * s as usize])
                .collect();
            assert!(
                same(g[i], w[i]),
                "{what}: output {j} at {i} (inputs {x:?}): wide {:e} ({:#x}), 128-bit {:e} ({:#x})",
                g[i],
                g[i].to_bits(),
                w[i],
                w[i].to_bits()
            );
        }
    }
    wide.wide_stages()
}

const UNARY: [Unary; 10] = [
    Unary::Neg,
    Unary::Abs,
    Unary::Relu,
    Unary::Sqrt,
    Unary::Rsqrt,
    Unary::Reciprocal,
    Unary::Floor,
    Unary::Ceil,
    Unary::Trunc,
    Unary::Round,
];
const BINARY: [Binary; 6] = [
    Binary::Add,
    Binary::Sub,
    Binary::Mul,
    Binary::Div,
    Binary::Max,
    Binary::Min,
];
const CMP: [Cmp; 6] = [Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne];

#[test]
fn every_op_agrees_with_the_128_bit_loop() {
    let s = specials();
    // full blocks, then a short last block
    for n in [256usize, 1024 + 77] {
        let x = cycle(&s, n, 0, 1);
        // every pair of specials meets somewhere: a different walk
        let y = cycle(&s, n, 5, 7);
        for f in UNARY {
            let mut e = Expr::new(1);
            let a = e.input(0);
            let r = e.unary(f, a);
            e.outputs.push(r);
            let w = check(
                &e,
                &[Access::Contiguous],
                std::slice::from_ref(&x),
                n,
                &format!("{f:?}"),
            );
            assert_eq!(w > 0, wide_here(), "{f:?} ran wide: {w}");
        }
        for f in BINARY {
            let mut e = Expr::new(2);
            let a = e.input(0);
            let b = e.input(1);
            let r = e.binary(f, a, b);
            e.outputs.push(r);
            let acc = [Access::Contiguous, Access::Contiguous];
            let w = check(&e, &acc, &[x.clone(), y.clone()], n, &format!("{f:?}"));
            assert_eq!(w > 0, wide_here());
            // ±0 pairs both ways round for max / min
            let z = cycle(&[0.0, -0.0, f32::NAN, 1.0], n, 0, 1);
            let z2 = cycle(&[-0.0, 0.0, 2.0, f32::NAN, -0.0], n, 0, 1);
            check(&e, &acc, &[z, z2], n, &format!("{f:?} of zeros"));
        }
        for c in CMP {
            let mut e = Expr::new(2);
            let a = e.input(0);
            let b = e.input(1);
            let m = e.binary(Binary::Mul, a, b);
            let r = e.select(c, a, b, m, b);
            e.outputs.push(r);
            let acc = [Access::Contiguous, Access::Contiguous];
            check(
                &e,
                &acc,
                &[x.clone(), y.clone()],
                n,
                &format!("select {c:?}"),
            );
        }
    }
}

/// W9 and a longer chain: stages between transcendentals, a broadcast
/// scalar, two outputs, constants.
#[test]
fn stages_around_transcendentals_with_scalars_and_two_outputs() {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let s = e.input(1);
    let sg = e.unary(Unary::Sigmoid, x);
    let a = e.binary(Binary::Mul, x, sg);
    let a = e.binary(Binary::Mul, a, s);
    let t = e.unary(Unary::Tanh, x);
    let o0 = e.binary(Binary::Add, a, t);
    let k = e.constant(0.3);
    let y = e.binary(Binary::Sub, o0, k);
    let y = e.unary(Unary::Abs, y);
    let one = e.constant(1.0);
    let y = e.binary(Binary::Add, y, one);
    let l = e.unary(Unary::Log, y);
    let r = e.unary(Unary::Relu, l);
    let o1 = e.unary(Unary::Sqrt, r);
    e.outputs = vec![o0, o1];
    let sp = specials();
    let n = 3 * 256 + 5;
    let xs = cycle(&sp, n, 3, 1);
    let w = check(
        &e,
        &[Access::Contiguous, Access::Broadcast],
        &[xs, vec![0.5]],
        n,
        "w9 and a chain",
    );
    assert_eq!(w > 0, wide_here());
}

/// An output written over its own input (an in-place op) reads every
/// element before the element is written.
#[test]
fn output_over_its_input() {
    let mut e = Expr::new(1);
    let x = e.input(0);
    let k = e.constant(2.0);
    let y = e.binary(Binary::Mul, x, k);
    let y = e.unary(Unary::Neg, y);
    e.outputs.push(y);
    let k = Kernel::compile_with(&e, Elem::F32, &[Access::Contiguous], Strategy::Blocked).unwrap();
    let n = 1000;
    let mut buf: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let p = buf.as_mut_ptr();
    unsafe { k.run(&[p as *const u8], &[1], &[p.cast()], n) };
    for (i, v) in buf.iter().enumerate() {
        assert_eq!(*v, -2.0 * i as f32);
    }
}

/// What wide loops leave to Cranelift still runs, and agrees: a strided
/// input, `pow`, and a stage with more live values than registers.
#[test]
fn stages_left_to_cranelift() {
    let sp = specials();
    let n = 600;
    let xs = cycle(&sp, 2 * n, 0, 1);
    let ys = cycle(&sp, n, 2, 3);

    let mut e = Expr::new(2);
    let a = e.input(0);
    let b = e.input(1);
    let r = e.binary(Binary::Add, a, b);
    e.outputs.push(r);
    let acc = [Access::Strided, Access::Contiguous];
    assert_eq!(check(&e, &acc, &[xs.clone(), ys.clone()], n, "strided"), 0);

    let mut e = Expr::new(2);
    let a = e.input(0);
    let b = e.input(1);
    let r = e.binary(Binary::Pow, a, b);
    e.outputs.push(r);
    let acc = [Access::Contiguous, Access::Contiguous];
    let xs1 = cycle(&sp, n, 0, 1);
    assert_eq!(check(&e, &acc, &[xs1.clone(), ys.clone()], n, "pow"), 0);

    // 40 values live at once: x·c_i for 40 constants, then their sum
    let mut e = Expr::new(1);
    let x = e.input(0);
    let parts: Vec<usize> = (0..40)
        .map(|i| {
            let c = e.constant(1.0 + i as f64 / 8.0);
            e.binary(Binary::Mul, x, c)
        })
        .collect();
    let mut s = parts[0];
    for &p in &parts[1..] {
        s = e.binary(Binary::Add, s, p);
    }
    e.outputs.push(s);
    assert_eq!(
        check(&e, &[Access::Contiguous], &[xs1], n, "40 live values"),
        0
    );
}

/// `Kernel::compile` blocks an arithmetic-only f32 expression where wide
/// loops run (one wide stage), keeps it inline for a strided input, for
/// f64, and without AVX-512; results agree with the inline kernel.
#[test]
fn arithmetic_kernels_take_the_wide_loop() {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let k = e.constant(1.1);
    let a = e.binary(Binary::Mul, x, k);
    let a = e.unary(Unary::Relu, a);
    let r = e.binary(Binary::Add, a, y);
    e.outputs.push(r);
    let acc = [Access::Contiguous, Access::Broadcast];
    let k = Kernel::compile(&e, Elem::F32, &acc).unwrap();
    let want = if wide_here() {
        Strategy::Blocked
    } else {
        Strategy::Inline
    };
    assert_eq!(k.strategy(), want);
    assert_eq!(k.wide_stages() > 0, wide_here());
    let n = 3 * 256 + 9;
    let xs = cycle(&specials(), n, 1, 1);
    let got = run(&k, &[xs.clone(), vec![0.25]], &[1, 0], n);
    let inline = Kernel::compile_with(&e, Elem::F32, &acc, Strategy::Inline).unwrap();
    let want = run(&inline, &[xs, vec![0.25]], &[1, 0], n);
    for (g, w) in got[0].iter().zip(&want[0]) {
        assert!(same(*g, *w), "{g:e} against {w:e}");
    }
    let strided = Kernel::compile(&e, Elem::F32, &[Access::Strided, Access::Broadcast]).unwrap();
    assert_eq!(strided.strategy(), Strategy::Inline);
    let f64k = Kernel::compile(&e, Elem::F64, &acc).unwrap();
    assert_eq!(f64k.strategy(), Strategy::Inline);
}

/// Outputs that are an input itself, a constant, and one value twice;
/// a scalar used twice; a value nobody reads.
#[test]
fn odd_outputs_and_operands() {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let s = e.input(1);
    let two = e.constant(2.0);
    let p = e.binary(Binary::Mul, x, s);
    let q = e.binary(Binary::Add, p, s);
    let _unused = e.binary(Binary::Sub, x, two);
    e.outputs = vec![x, two, q, q, p];
    let n = 2 * 256 + 3;
    let xs = cycle(&specials(), n, 4, 1);
    let w = check(
        &e,
        &[Access::Contiguous, Access::Broadcast],
        &[xs, vec![-1.5]],
        n,
        "odd outputs",
    );
    assert_eq!(w > 0, wide_here());
}
