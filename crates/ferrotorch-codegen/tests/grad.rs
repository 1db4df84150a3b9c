//! The backward expressions (Note [Fused backward]) against numerical
//! derivatives of the forward (central differences in f64, the
//! gradcheck of the code generator), evaluated by the reference and as
//! compiled kernels.

use ferrotorch_codegen::expr::{Binary, Cmp, Unary};
use ferrotorch_codegen::grad::backward;
use ferrotorch_codegen::{Access, Elem, Expr, Kernel};

/// `f(x, y)` built with `op` in the middle, two outputs so gradients from
/// both reach the inputs.
fn with_unary(f: Unary) -> Expr {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let s = e.binary(Binary::Mul, x, y);
    let u = e.unary(f, s);
    let c = e.constant(0.7);
    let o0 = e.binary(Binary::Add, u, c);
    let o1 = e.binary(Binary::Mul, u, x);
    e.outputs = vec![o0, o1];
    e
}

fn with_binary(f: Binary) -> Expr {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let t = e.unary(Unary::Tanh, y);
    let two = e.constant(2.0);
    let yy = e.binary(Binary::Add, t, two); // positive, for pow and log
    let b = e.binary(f, x, yy);
    let o1 = e.binary(Binary::Mul, b, y);
    e.outputs = vec![b, o1];
    e
}

/// d/dx_k of sum_j w_j out_j by central differences.
fn numeric(e: &Expr, at: &[f64], w: &[f64]) -> Vec<f64> {
    let h = 1e-6;
    (0..at.len())
        .map(|k| {
            let f = |d: f64| {
                let mut p = at.to_vec();
                p[k] += d;
                e.eval(&p).iter().zip(w).map(|(o, w)| o * w).sum::<f64>()
            };
            (f(h) - f(-h)) / (2.0 * h)
        })
        .collect()
}

fn check(e: &Expr, name: &str, points: &[[f64; 2]]) {
    let b = backward(e);
    assert_eq!(b.n_inputs, 4);
    assert_eq!(b.outputs.len(), 2);
    let w = [0.3, -1.1];
    let k = Kernel::compile(&b, Elem::F64, &[Access::Contiguous; 4]).unwrap();
    for p in points {
        let want = numeric(e, p, &w);
        let got = b.eval(&[p[0], p[1], w[0], w[1]]);
        let mut out = [[0f64; 1]; 2];
        let ins = [[p[0]], [p[1]], [w[0]], [w[1]]];
        unsafe {
            k.run(
                &ins.iter().map(|v| v.as_ptr().cast()).collect::<Vec<_>>(),
                &[1; 4],
                &[out[0].as_mut_ptr().cast(), out[1].as_mut_ptr().cast()],
                1,
            )
        };
        for i in 0..2 {
            let tol = 1e-5 * (1.0 + want[i].abs());
            assert!(
                (got[i] - want[i]).abs() < tol,
                "{name} at {p:?}: d/dx{i} {} vs {}",
                got[i],
                want[i]
            );
            assert!(
                (out[i][0] - got[i]).abs() < 1e-12 * (1.0 + got[i].abs()),
                "{name}: kernel"
            );
        }
    }
}

#[test]
fn every_unary_derivative_matches_finite_differences() {
    let pts = [[0.6, 0.9], [-0.4, 1.3], [1.2, -0.7]];
    for f in [
        Unary::Neg,
        Unary::Abs,
        Unary::Relu,
        Unary::Sigmoid,
        Unary::Tanh,
        Unary::Exp,
        Unary::Expm1,
        Unary::Erf,
        Unary::Gelu,
        Unary::GeluTanh,
        Unary::Sin,
        Unary::Cos,
        Unary::Reciprocal,
    ] {
        check(&with_unary(f), &format!("{f:?}"), &pts);
    }
    // positive arguments for the logarithms and roots
    let pos = [[0.6, 0.9], [1.4, 1.3], [2.0, 0.2]];
    for f in [Unary::Log, Unary::Log1p, Unary::Sqrt, Unary::Rsqrt] {
        check(&with_unary(f), &format!("{f:?}"), &pos);
    }
}

#[test]
fn every_binary_derivative_matches_finite_differences() {
    let pts = [[0.6, 0.9], [-0.4, 1.3], [1.2, -0.7]];
    for f in [
        Binary::Add,
        Binary::Sub,
        Binary::Mul,
        Binary::Div,
        Binary::Max,
        Binary::Min,
    ] {
        check(&with_binary(f), &format!("{f:?}"), &pts);
    }
    check(
        &with_binary(Binary::Pow),
        "Pow",
        &[[0.6, 0.9], [1.4, 1.3], [2.0, -0.7]],
    );
}

#[test]
fn selects_route_the_gradient_and_ties_split_it() {
    // leaky-relu-like select, and the (x > 0) mask of relu at 0
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let zero = e.constant(0.0);
    let s = e.constant(0.1);
    let xs = e.binary(Binary::Mul, x, s);
    let sel = e.select(Cmp::Gt, x, zero, x, xs);
    let o = e.binary(Binary::Mul, sel, y);
    e.outputs = vec![o, y];
    check(&e, "select", &[[0.6, 0.9], [-0.4, 1.3]]);
    // maximum at a tie: half each, as torch
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let m = e.binary(Binary::Max, x, y);
    e.outputs = vec![m, x];
    let b = backward(&e);
    assert_eq!(b.eval(&[1.0, 1.0, 1.0, 0.0]), vec![0.5, 0.5]);
    // relu at 0 passes nothing, as torch
    let mut e = Expr::new(1);
    let x = e.input(0);
    let r = e.unary(Unary::Relu, x);
    e.outputs = vec![r];
    let b = backward(&e);
    assert_eq!(b.eval(&[0.0, 1.0]), vec![0.0]);
    // torch's threshold_backward: a NaN result passes its gradient, an
    // infinite gradient where the result is <= 0 gives 0 (values from
    // torch 2.x: relu backward of [nan, -1, 2] with grads [1, inf, 4])
    assert_eq!(b.eval(&[f64::NAN, 1.0]), vec![1.0]);
    assert_eq!(b.eval(&[-1.0, f64::INFINITY]), vec![0.0]);
    assert_eq!(b.eval(&[2.0, 4.0]), vec![4.0]);
    // and the compiled kernel agrees with the reference
    let k = Kernel::compile(&b, Elem::F32, &[Access::Contiguous; 2]).unwrap();
    let xs = [f32::NAN, -1.0, 0.0, 2.0, f32::INFINITY, f32::NEG_INFINITY];
    let gs = [1.0, f32::INFINITY, 3.0, 4.0, 5.0, 6.0];
    let mut out = [7.0f32; 6];
    // SAFETY: six contiguous f32s per input and for the output
    unsafe {
        k.run(
            &[xs.as_ptr().cast(), gs.as_ptr().cast()],
            &[1, 1],
            &[out.as_mut_ptr().cast()],
            6,
        )
    };
    assert_eq!(out, [1.0, 0.0, 0.0, 4.0, 5.0, 0.0]);
}

#[test]
fn the_divisors_gradient_does_not_square_a_tiny_divisor() {
    // d(x / y)/dy = -(x / y) / y: with y² first, y = 1e-30 underflows to 0
    // in f32 and the gradient was NaN (x = 0) or -inf (x = 1e-30)
    let mut e = Expr::new(2);
    let (x, y) = (e.input(0), e.input(1));
    let q = e.binary(Binary::Div, x, y);
    e.outputs = vec![q];
    let b = backward(&e);
    let k = Kernel::compile(&b, Elem::F32, &[Access::Contiguous; 3]).unwrap();
    let xs = [0.0f32, 1e-30, 2.0];
    let ys = [1e-30f32, 1e-30, 1e-30];
    let g = [1.0f32; 3];
    let (mut gx, mut gy) = ([0f32; 3], [0f32; 3]);
    unsafe {
        k.run(
            &[xs.as_ptr().cast(), ys.as_ptr().cast(), g.as_ptr().cast()],
            &[1; 3],
            &[gx.as_mut_ptr().cast(), gy.as_mut_ptr().cast()],
            3,
        )
    };
    assert_eq!(gy[0], 0.0);
    assert_eq!(gy[1], -1e30);
    assert_eq!(gy[2], f32::NEG_INFINITY);
    assert_eq!(gx, [1e30; 3]);
}
