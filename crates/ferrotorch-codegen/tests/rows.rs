//! Row kernels (Note [Row kernels]) against f64 references computed
//! here: softmax, log-softmax, layer norm (with and without affine),
//! sum, mean, max, after a pointwise expression, for row lengths around
//! the vector width, with a broadcast and a strided input.

use ferrotorch_codegen::expr::{Binary, Unary};
use ferrotorch_codegen::{Access, Elem, Expr, RowKernel, RowOp};

/// `v = tanh(x) * 2 + y` (y broadcast or strided).
fn pre() -> Expr {
    let mut e = Expr::new(4);
    let x = e.input(0);
    let y = e.input(1);
    let t = e.unary(Unary::Tanh, x);
    let two = e.constant(2.0);
    let a = e.binary(Binary::Mul, t, two);
    let v = e.binary(Binary::Add, a, y);
    e.outputs.push(v);
    e
}

fn reference(op: RowOp, v: &[f64], w: &[f64], b: &[f64]) -> Vec<f64> {
    let n = v.len() as f64;
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = v.iter().sum();
    match op {
        RowOp::Sum => vec![sum],
        RowOp::Mean => vec![sum / n],
        RowOp::Max => vec![max],
        RowOp::Softmax | RowOp::LogSoftmax => {
            let s: f64 = v.iter().map(|x| (x - max).exp()).sum();
            v.iter()
                .map(|x| {
                    if op == RowOp::Softmax {
                        (x - max).exp() / s
                    } else {
                        x - max - s.ln()
                    }
                })
                .collect()
        }
        RowOp::LayerNorm {
            eps, weight, bias, ..
        } => {
            let mean = sum / n;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
            v.iter()
                .enumerate()
                .map(|(i, x)| {
                    let mut r = (x - mean) / (var + eps).sqrt();
                    if weight.is_some() {
                        r *= w[i];
                    }
                    if bias.is_some() {
                        r += b[i];
                    }
                    r
                })
                .collect()
        }
    }
}

#[test]
fn row_ops_after_a_pointwise_prologue_match_f64_references() {
    let ops = [
        RowOp::Sum,
        RowOp::Mean,
        RowOp::Max,
        RowOp::Softmax,
        RowOp::LogSoftmax,
        RowOp::LayerNorm {
            eps: 1e-5,
            weight: Some(2),
            bias: Some(3),
        },
        RowOp::LayerNorm {
            eps: 1e-3,
            weight: None,
            bias: None,
        },
    ];
    let e = pre();
    for float in [Elem::F32, Elem::F64] {
        for (ya, ystride) in [(Access::Broadcast, 0i64), (Access::Strided, 2)] {
            let access = [ya == Access::Broadcast, false]
                .map(|_| Access::Contiguous)
                .to_vec();
            let access = vec![access[0], ya, Access::Contiguous, Access::Contiguous];
            for op in ops {
                let k = RowKernel::compile(&e, float, &access, op, false).unwrap();
                for n in [1usize, 3, 4, 5, 8, 13, 64, 1001] {
                    let x: Vec<f64> = (0..n)
                        .map(|i| ((i * 7 % 23) as f64 - 11.0) * 0.31)
                        .collect();
                    let y: Vec<f64> = (0..2 * n + 1).map(|i| (i as f64 * 0.13).cos()).collect();
                    let w: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 * 0.01).collect();
                    let bb: Vec<f64> = (0..n).map(|i| -0.5 + i as f64 * 0.02).collect();
                    let v: Vec<f64> = (0..n)
                        .map(|i| e.eval(&[x[i], y[(i as i64 * ystride) as usize], 0.0, 0.0])[0])
                        .collect();
                    let want = reference(op, &v, &w, &bb);
                    let got: Vec<f64> = match float {
                        Elem::F32 => {
                            let c = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
                            let (x, y, w, bb) = (c(&x), c(&y), c(&w), c(&bb));
                            let mut out = vec![0f32; n];
                            unsafe {
                                k.run(
                                    &[
                                        x.as_ptr().cast(),
                                        y.as_ptr().cast(),
                                        w.as_ptr().cast(),
                                        bb.as_ptr().cast(),
                                    ],
                                    &[1, ystride, 1, 1],
                                    &[out.as_mut_ptr().cast()],
                                    n,
                                )
                            };
                            out.into_iter().map(f64::from).collect()
                        }
                        Elem::F64 => {
                            let mut out = vec![0f64; n];
                            unsafe {
                                k.run(
                                    &[
                                        x.as_ptr().cast(),
                                        y.as_ptr().cast(),
                                        w.as_ptr().cast(),
                                        bb.as_ptr().cast(),
                                    ],
                                    &[1, ystride, 1, 1],
                                    &[out.as_mut_ptr().cast()],
                                    n,
                                )
                            };
                            out
                        }
                        _ => unreachable!("float kernels only"),
                    };
                    let tol = if float == Elem::F32 { 2e-5 } else { 1e-11 };
                    for (i, w) in want.iter().enumerate() {
                        let scale = 1.0 + w.abs() + if op == RowOp::Sum { n as f64 } else { 0.0 };
                        assert!(
                            (got[i] - w).abs() <= tol * scale,
                            "{float:?} {op:?} n={n} i={i}: {} vs {w}",
                            got[i]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn nan_rows_stay_nan() {
    let e = pre();
    let access = [Access::Contiguous; 4];
    for op in [RowOp::Softmax, RowOp::Max] {
        let k = RowKernel::compile(&e, Elem::F32, &access, op, false).unwrap();
        let x = [0.5f32, f32::NAN, 1.0, 2.0, 3.0];
        let y = [0f32; 5];
        let mut out = [0f32; 5];
        unsafe {
            k.run(
                &[
                    x.as_ptr().cast(),
                    y.as_ptr().cast(),
                    y.as_ptr().cast(),
                    y.as_ptr().cast(),
                ],
                &[1; 4],
                &[out.as_mut_ptr().cast()],
                5,
            )
        };
        assert!(out[0].is_nan(), "{op:?}: {out:?}");
    }
}

/// `k` (with `keep_input`) over four contiguous inputs of one row:
/// `(output, kept input)`.
fn run_kept(k: &RowKernel, ins: [&[f32]; 4]) -> (Vec<f32>, Vec<f32>) {
    let n = ins[0].len();
    let mut out = vec![0f32; n];
    let mut kept = vec![0f32; n];
    let ptrs = ins.map(|v| v.as_ptr().cast::<u8>());
    let outs = [out.as_mut_ptr().cast(), kept.as_mut_ptr().cast()];
    unsafe { k.run(&ptrs, &[1; 4], &outs, n) };
    (out, kept)
}

/// With `keep_input` the pre-reduction values are a second output (a
/// residual stream and its layer norm from one pass).
#[test]
fn the_reductions_input_can_be_kept() {
    let e = pre();
    let access = [Access::Contiguous; 4];
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let y: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
    let ones = vec![1f32; n];
    let zeros = vec![0f32; n];
    for op in [
        RowOp::Sum,
        RowOp::Softmax,
        RowOp::LayerNorm {
            eps: 1e-5,
            weight: Some(2),
            bias: Some(3),
        },
    ] {
        let k = RowKernel::compile(&e, Elem::F32, &access, op, true).unwrap();
        assert!(k.keeps_input());
        let (out, kept) = run_kept(&k, [&x, &y, &ones, &zeros]);
        for i in 0..n {
            let v = e.eval(&[x[i] as f64, y[i] as f64, 0.0, 0.0])[0];
            assert!((kept[i] as f64 - v).abs() < 1e-6, "{op:?} {i}");
        }
        let vals: Vec<f64> = kept.iter().map(|&v| v as f64).collect();
        let want = reference(op, &vals, &vec![1.0; n], &vec![0.0; n]);
        for (i, w) in want.iter().enumerate() {
            assert!(
                (out[i] as f64 - w).abs()
                    < 2e-5 * (1.0 + w.abs() + n as f64 * f64::from(u8::from(op == RowOp::Sum))),
                "{op:?} {i}"
            );
        }
    }
}

/// Where blocked kernels run (AVX2 or AVX-512), f32 softmax and
/// log-softmax rows finish with the eager kernel's row function, so they
/// give eager softmax of the same values to the bit: odd lengths, -inf
/// entries (exp gives 0), large values, and rows that are NaN throughout
/// (+inf, NaN).
#[test]
fn f32_softmax_rows_are_eagers_of_their_values() {
    use ferrotorch_kernels::cpu::{level, Level};
    let e = pre();
    let access = [Access::Contiguous; 4];
    for op in [RowOp::Softmax, RowOp::LogSoftmax] {
        let log = op == RowOp::LogSoftmax;
        let k = RowKernel::compile(&e, Elem::F32, &access, op, true).unwrap();
        for (n, special) in [
            (1usize, None),
            (17, Some(f32::NEG_INFINITY)),
            (256, Some(80.0)),
            (1000, Some(f32::INFINITY)),
            (1024, Some(f32::NAN)),
            (1031, None),
        ] {
            let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
            let mut y: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 4.0).collect();
            if let Some(s) = special {
                y[n / 2] = s;
            }
            let zeros = vec![0f32; n];
            let (out, kept) = run_kept(&k, [&x, &y, &zeros, &zeros]);
            let mut want = vec![0f32; n];
            unsafe {
                ferrotorch_kernels::softmax::softmax_row_f32(
                    kept.as_ptr(),
                    want.as_mut_ptr(),
                    n,
                    log,
                )
            };
            let nan_row = matches!(special, Some(s) if s.is_nan() || s == f32::INFINITY);
            for i in 0..n {
                if nan_row {
                    assert!(out[i].is_nan(), "{op:?} n={n} i={i}: {}", out[i]);
                } else if level() != Level::Baseline {
                    assert_eq!(out[i].to_bits(), want[i].to_bits(), "{op:?} n={n} i={i}");
                } else {
                    assert!((out[i] - want[i]).abs() <= 1e-5 * (1.0 + want[i].abs()));
                }
            }
        }
    }
}
