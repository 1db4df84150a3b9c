//! Compiled kernels against the eager kernels' scalar functions
//! (`ferrotorch_kernels::math`, bit for bit where the same polynomial is
//! emitted) and against f64 `std` (the ulp bounds), on grids that include
//! NaN, ±inf, ±0, subnormals and the overflow edges.

use ferrotorch_codegen::expr::{Binary, Cmp, Unary};
use ferrotorch_codegen::{Access, Elem, Expr, Kernel, Strategy};
use ferrotorch_kernels::math as km;

mod common;
use common::{same, EDGES};

/// An op and the scalar function it must agree with.
type Case = (Unary, fn(f32) -> f32);

fn special_f32() -> Vec<f32> {
    let mut v = EDGES.to_vec();
    v.extend([
        88.7, 88.8, -87.5, -104.0, -110.0, 9.5, -9.5, 0.5, -0.75, 0.74,
    ]);
    // a dense grid over the interesting range, odd length for the tail
    for i in 0..4001 {
        v.push(-30.0 + 60.0 * i as f32 / 4000.0);
    }
    v
}

/// `f(x)` compiled inline, over `xs` (contiguous).
fn run_unary(f: Unary, xs: &[f32]) -> Vec<f32> {
    run_unary_with(f, xs, Strategy::Inline)
}

fn run_unary_with(f: Unary, xs: &[f32], strategy: Strategy) -> Vec<f32> {
    let mut e = Expr::new(1);
    let x = e.input(0);
    let y = e.unary(f, x);
    e.outputs.push(y);
    run(&e, xs, strategy).remove(0)
}

/// `f32` kernel `e` (one contiguous input) run over `xs`.
fn run(e: &Expr, xs: &[f32], strategy: Strategy) -> Vec<Vec<f32>> {
    let k = Kernel::compile_with(e, Elem::F32, &[Access::Contiguous], strategy).unwrap();
    let mut outs = vec![vec![0.0f32; xs.len()]; e.outputs.len()];
    let ptrs: Vec<*mut u8> = outs.iter_mut().map(|o| o.as_mut_ptr().cast()).collect();
    unsafe { k.run(&[xs.as_ptr().cast()], &[1], &ptrs, xs.len()) };
    outs
}

#[test]
fn inline_transcendentals_match_the_eager_functions_bit_for_bit() {
    let xs = special_f32();
    let cases: [Case; 8] = [
        (Unary::Exp, km::exp),
        (Unary::Expm1, km::expm1),
        (Unary::Tanh, km::tanh),
        (Unary::Sigmoid, km::sigmoid),
        (Unary::Log, km::ln),
        (Unary::Erf, km::erf),
        (Unary::Gelu, km::gelu),
        (Unary::GeluTanh, km::gelu_tanh),
    ];
    let pos: Vec<f32> = xs.iter().map(|x| x.abs()).chain([1e-42, 3.0e38]).collect();
    for (f, reference) in cases {
        let input = if f == Unary::Log { &pos } else { &xs };
        let got = run_unary(f, input);
        for (x, g) in input.iter().zip(&got) {
            let want = reference(*x);
            assert!(same(*g, want), "{f:?}({x:e}) = {g:e}, eager gives {want:e}");
        }
    }
}

/// Blocked kernels (Note [Blocked kernels]) run the eager loops: the
/// same values, GELU included (its tiered form, as eager's).
#[test]
fn blocked_transcendentals_match_the_eager_functions() {
    let xs = special_f32();
    let cases: [Case; 10] = [
        (Unary::Exp, km::exp),
        (Unary::Expm1, km::expm1),
        (Unary::Tanh, km::tanh),
        (Unary::Sigmoid, km::sigmoid),
        (Unary::Erf, km::erf),
        (Unary::GeluTanh, km::gelu_tanh),
        (Unary::Gelu, |x| {
            if km::gelu_fast_ok(x) {
                km::gelu_fast(x)
            } else {
                km::gelu(x)
            }
        }),
        (Unary::Sin, f32::sin),
        (Unary::Cos, f32::cos),
        (Unary::Log1p, f32::ln_1p),
    ];
    for (f, reference) in cases {
        let got = run_unary_with(f, &xs, Strategy::Blocked);
        for (i, (x, g)) in xs.iter().zip(&got).enumerate() {
            let want = if f == Unary::Gelu {
                // a 16-element block is tiered as a whole
                let blk = &xs[i / 16 * 16..(i / 16 * 16 + 16).min(xs.len())];
                if blk.iter().all(|v| km::gelu_fast_ok(*v)) {
                    km::gelu_fast(*x)
                } else {
                    km::gelu(*x)
                }
            } else {
                reference(*x)
            };
            assert!(same(*g, want), "{f:?}({x:e}) = {g:e}, eager gives {want:e}");
        }
    }
    let pos: Vec<f32> = xs.iter().map(|x| x.abs()).collect();
    let got = run_unary_with(Unary::Log, &pos, Strategy::Blocked);
    for (x, g) in pos.iter().zip(&got) {
        assert!(same(*g, km::ln(*x)));
    }
}

/// Note [Paired transcendentals]: an f32 kernel with sigmoid and tanh of
/// one value computes both as `math::sigmoid_tanh` does, blocked and
/// inline alike, in either order, of an input or of a computed value, on
/// full blocks and tails.
#[test]
fn sigmoid_and_tanh_of_one_value_share_an_exponential() {
    let mut xs = EDGES.to_vec();
    xs.extend((0..690).map(|i| -10.0 + 20.0 * i as f32 / 689.0));
    for n in [0usize, 1, 17, 255, 256, 257, 700] {
        let xs = &xs[..n];
        // tanh first, of the input itself
        let mut e = Expr::new(1);
        let x = e.input(0);
        let t = e.unary(Unary::Tanh, x);
        let s = e.unary(Unary::Sigmoid, x);
        e.outputs = vec![t, s];
        for strategy in [Strategy::Blocked, Strategy::Inline] {
            let got = run(&e, xs, strategy);
            for (i, &x) in xs.iter().enumerate() {
                let (sg, th) = km::sigmoid_tanh(x);
                let g = (got[0][i], got[1][i]);
                assert!(same(g.0, th) && same(g.1, sg), "{strategy:?} {x:e}: {g:?}");
            }
        }
        // W9 of a computed value, sigmoid first
        let mut e = Expr::new(1);
        let x = e.input(0);
        let two = e.constant(2.0);
        let y = e.binary(Binary::Mul, x, two);
        let s = e.unary(Unary::Sigmoid, y);
        let a = e.binary(Binary::Mul, y, s);
        let half = e.constant(0.5);
        let a = e.binary(Binary::Mul, a, half);
        let t = e.unary(Unary::Tanh, y);
        let w9 = e.binary(Binary::Add, a, t);
        e.outputs = vec![w9];
        for strategy in [Strategy::Blocked, Strategy::Inline] {
            let got = run(&e, xs, strategy);
            for (i, &x) in xs.iter().enumerate() {
                let y = x * 2.0;
                let (sg, th) = km::sigmoid_tanh(y);
                let want = y * sg * 0.5 + th;
                assert!(same(got[0][i], want), "{strategy:?} {y:e}: {}", got[0][i]);
            }
        }
    }
    // the pair is not the rational tanh: some inputs tell them apart
    let xs = special_f32();
    let got = run(
        &{
            let mut e = Expr::new(1);
            let x = e.input(0);
            let s = e.unary(Unary::Sigmoid, x);
            let t = e.unary(Unary::Tanh, x);
            e.outputs = vec![s, t];
            e
        },
        &xs,
        Strategy::Blocked,
    );
    let differ = xs
        .iter()
        .zip(&got[1])
        .filter(|(x, g)| !same(**g, km::tanh(**x)));
    assert!(differ.count() > 100);
}

#[test]
fn libcall_and_exact_ops_agree_with_std() {
    let xs = special_f32();
    let cases: [Case; 11] = [
        (Unary::Sin, f32::sin),
        (Unary::Cos, f32::cos),
        (Unary::Log1p, f32::ln_1p),
        (Unary::Sqrt, f32::sqrt),
        (Unary::Abs, f32::abs),
        (Unary::Neg, |x| -x),
        (Unary::Floor, f32::floor),
        (Unary::Ceil, f32::ceil),
        (Unary::Trunc, f32::trunc),
        (Unary::Round, f32::round_ties_even),
        (Unary::Reciprocal, |x| 1.0 / x),
    ];
    for (f, reference) in cases {
        let got = run_unary(f, &xs);
        for (x, g) in xs.iter().zip(&got) {
            let want = reference(*x);
            assert!(same(*g, want), "{f:?}({x:e}) = {g:e}, want {want:e}");
        }
    }
    // relu keeps NaN, as torch.relu does
    let got = run_unary(Unary::Relu, &[f32::NAN, -1.0, 2.0, f32::NEG_INFINITY]);
    assert!(got[0].is_nan());
    assert_eq!(&got[1..], &[0.0, 2.0, 0.0]);
}

/// W9's expression with a broadcast input, a strided input and two
/// outputs, for every row length around the vector and unroll widths.
#[test]
fn broadcast_strided_and_tails_f32_and_f64() {
    // out0 = x*sigmoid(x)*s + tanh(y);  out1 = max(x, y) where x > 0 else -x
    let mut e = Expr::new(3);
    let x = e.input(0);
    let y = e.input(1);
    let s = e.input(2);
    let sg = e.unary(Unary::Sigmoid, x);
    let a = e.binary(Binary::Mul, x, sg);
    let a = e.binary(Binary::Mul, a, s);
    let t = e.unary(Unary::Tanh, y);
    let o0 = e.binary(Binary::Add, a, t);
    let m = e.binary(Binary::Max, x, y);
    let nx = e.unary(Unary::Neg, x);
    let zero = e.constant(0.0);
    let o1 = e.select(Cmp::Gt, x, zero, m, nx);
    e.outputs = vec![o0, o1];
    for (float, strategy) in [
        (Elem::F32, Strategy::Inline),
        (Elem::F64, Strategy::Inline),
        (Elem::F32, Strategy::Blocked),
        (Elem::F64, Strategy::Blocked),
    ] {
        let k = Kernel::compile_with(
            &e,
            float,
            &[Access::Contiguous, Access::Strided, Access::Broadcast],
            strategy,
        )
        .unwrap();
        for n in [
            0usize, 1, 3, 7, 8, 9, 15, 16, 17, 33, 100, 255, 256, 257, 700,
        ] {
            let xs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 6.0).collect();
            // y read every third element
            let ys: Vec<f64> = (0..3 * n).map(|i| (i as f64 * 0.11).cos() * 4.0).collect();
            let sv = [0.5f64];
            let want: Vec<Vec<f64>> = (0..n).map(|i| e.eval(&[xs[i], ys[3 * i], 0.5])).collect();
            let (o0, o1) = match float {
                Elem::F32 => {
                    let c = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
                    let (xs, ys, sv) = (c(&xs), c(&ys), c(&sv));
                    let mut o0 = vec![0f32; n];
                    let mut o1 = vec![0f32; n];
                    unsafe {
                        k.run(
                            &[xs.as_ptr().cast(), ys.as_ptr().cast(), sv.as_ptr().cast()],
                            &[1, 3, 0],
                            &[o0.as_mut_ptr().cast(), o1.as_mut_ptr().cast()],
                            n,
                        )
                    };
                    let w = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
                    (w(o0), w(o1))
                }
                Elem::F64 => {
                    let mut o0 = vec![0f64; n];
                    let mut o1 = vec![0f64; n];
                    unsafe {
                        k.run(
                            &[xs.as_ptr().cast(), ys.as_ptr().cast(), sv.as_ptr().cast()],
                            &[1, 3, 0],
                            &[o0.as_mut_ptr().cast(), o1.as_mut_ptr().cast()],
                            n,
                        )
                    };
                    (o0, o1)
                }
                _ => unreachable!("float kernels only"),
            };
            let tol = if float == Elem::F32 { 1e-6 } else { 1e-14 };
            for i in 0..n {
                assert!(
                    (o0[i] - want[i][0]).abs() <= tol * 4.0,
                    "{float:?} n={n} i={i}"
                );
                assert!(
                    (o1[i] - want[i][1]).abs() <= tol * 8.0,
                    "{float:?} n={n} i={i}"
                );
            }
        }
    }
}

#[test]
fn malformed_expressions_are_errors_not_code() {
    let mut e = Expr::new(1);
    let x = e.input(0);
    e.push(ferrotorch_codegen::expr::Op::Unary(Unary::Exp, x + 5));
    e.outputs.push(1);
    assert!(Kernel::compile(&e, Elem::F32, &[Access::Contiguous]).is_err());
    let mut e = Expr::new(1);
    e.push(ferrotorch_codegen::expr::Op::Input(3));
    e.outputs.push(0);
    assert!(ferrotorch_codegen::ScalarFn::compile(&e).is_err());
    let mut e = Expr::new(1);
    let x = e.input(0);
    e.outputs.push(x);
    assert!(Kernel::compile(&e, Elem::F32, &[]).is_err());
}

/// Integer kernels: wrapping arithmetic, neg, abs, relu, max, min,
/// compares and selects, for i32 and i64, with a broadcast and a strided
/// input; integer division and transcendentals are refused.
#[test]
fn integer_kernels_wrap_and_select_like_torch() {
    // out = max(x * y - 7, -x) if x > y else relu(-(x + y)) + |y|
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let xy = e.binary(Binary::Mul, x, y);
    let seven = e.constant(7.0);
    let a = e.binary(Binary::Sub, xy, seven);
    let nx = e.unary(Unary::Neg, x);
    let m = e.binary(Binary::Max, a, nx);
    let s = e.binary(Binary::Add, x, y);
    let ns = e.unary(Unary::Neg, s);
    let r = e.unary(Unary::Relu, ns);
    let ay = e.unary(Unary::Abs, y);
    let other = e.binary(Binary::Add, r, ay);
    let o = e.select(Cmp::Gt, x, y, m, other);
    let lo = e.binary(Binary::Min, o, ay);
    e.outputs = vec![o, lo];
    let want = |x: i64, y: i64, wrap: fn(i64) -> i64| {
        let o = if x > y {
            wrap(wrap(x * y) - 7).max(-x)
        } else {
            wrap((-(x + y)).max(0) + y.abs())
        };
        (o, o.min(y.abs()))
    };
    let xs: Vec<i64> = (0..37).map(|i| (i * 7919 % 201) - 100).collect();
    let ys: Vec<i64> = (0..74).map(|i| (i * 104_729 % 151) - 75).collect();
    // i64, y strided (every other element), then y broadcast
    for (access, stride) in [(Access::Strided, 2i64), (Access::Broadcast, 0)] {
        let k = Kernel::compile(&e, Elem::I64, &[Access::Contiguous, access]).unwrap();
        let mut o0 = vec![0i64; xs.len()];
        let mut o1 = vec![0i64; xs.len()];
        unsafe {
            k.run(
                &[xs.as_ptr().cast(), ys.as_ptr().cast()],
                &[1, stride],
                &[o0.as_mut_ptr().cast(), o1.as_mut_ptr().cast()],
                xs.len(),
            )
        };
        for i in 0..xs.len() {
            let y = ys[(i as i64 * stride) as usize];
            assert_eq!((o0[i], o1[i]), want(xs[i], y, |v| v), "i64 {i}");
        }
    }
    // i32 wraps on overflow, as torch's int32
    let k = Kernel::compile(&e, Elem::I32, &[Access::Contiguous; 2]).unwrap();
    let x32: Vec<i32> = vec![70_000, -3, 5, i32::MAX, 0, 100_000, 9];
    let y32: Vec<i32> = vec![60_000, 4, -5, 2, 0, -100_000, 9];
    let mut o0 = vec![0i32; 7];
    let mut o1 = vec![0i32; 7];
    unsafe {
        k.run(
            &[x32.as_ptr().cast(), y32.as_ptr().cast()],
            &[1, 1],
            &[o0.as_mut_ptr().cast(), o1.as_mut_ptr().cast()],
            7,
        )
    };
    for i in 0..7 {
        let (x, y) = (x32[i], y32[i]);
        let o = if x > y {
            x.wrapping_mul(y).wrapping_sub(7).max(x.wrapping_neg())
        } else {
            x.wrapping_add(y)
                .wrapping_neg()
                .max(0)
                .wrapping_add(y.wrapping_abs())
        };
        assert_eq!((o0[i], o1[i]), (o, o.min(y.wrapping_abs())), "i32 {i}");
    }
    // refused: division, a transcendental, a fractional constant
    for bad in [Binary::Div, Binary::Pow] {
        let mut e = Expr::new(1);
        let x = e.input(0);
        let y = e.binary(bad, x, x);
        e.outputs.push(y);
        assert!(Kernel::compile(&e, Elem::I64, &[Access::Contiguous]).is_err());
    }
    let mut e = Expr::new(1);
    let x = e.input(0);
    let h = e.constant(0.5);
    let y = e.binary(Binary::Add, x, h);
    e.outputs.push(y);
    assert!(Kernel::compile(&e, Elem::I32, &[Access::Contiguous]).is_err());
}
