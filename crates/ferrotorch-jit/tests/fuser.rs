//! Fusion groups run as native kernels (Note [Fusion runtime]) give the
//! eager results: every float dtype, odd sizes, broadcasting, strided
//! inputs, empty tensors, NaN and ±inf; groups the code generator cannot
//! take, and groups whose inputs require grad, run in the interpreter.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::ir::NodeKind;
use ferrotorch_jit::{fuser, passes, trace, ScriptModule};
use ferrotorch_nn::functional as F;
use std::sync::Mutex;

/// The counters are global: tests that read them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A pointwise chain touching every lowering: W9, gelu both ways,
/// clamp, leaky_relu, softplus, pow, maximum, division, alpha.
fn chain(t: &[Tensor]) -> Result<Vec<Tensor>> {
    let (x, y) = (&t[0], &t[1]);
    let w9 = x.mul(&x.sigmoid()?)?.mul(0.5)?.add(&x.tanh()?)?;
    let a = x.gelu("none")?.add(&y.gelu("tanh")?)?;
    let b = F::leaky_relu(&y.clamp(Some(-2.0), Some(3.0))?, 0.1)?;
    let c = F::softplus(x, 2.0, 5.0)?.sub(&y.pow(2.0)?)?;
    let d = x.maximum(y)?.div(&y.abs()?.add(1.5)?)?;
    let e = x.exp()?.add(&y.neg()?.relu()?.sqrt()?)?.log()?;
    let out = w9.add(&a)?.add(&b)?.add(&c)?.add(&d)?.add(&e)?;
    Ok(vec![out, x.erf()?.mul(&y.silu()?)?])
}

/// `chain` traced on `inputs` and fused.
fn fused(inputs: &[Tensor]) -> Result<ScriptModule> {
    let mut m = trace(chain, inputs)?;
    passes::optimize(m.graph_mut())?;
    assert!(passes::fuse_elementwise(m.graph_mut()) >= 1);
    Ok(m)
}

fn groups(m: &ScriptModule) -> usize {
    m.graph()
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::FusionGroup(_)))
        .count()
}

fn close(got: &Tensor, want: &Tensor, tol: f64) -> Result<()> {
    assert_eq!(got.shape(), want.shape());
    assert_eq!(got.dtype(), want.dtype());
    let g = got.to_dtype(DType::F64)?.to_vec::<f64>()?;
    let w = want.to_dtype(DType::F64)?.to_vec::<f64>()?;
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * (1.0 + b.abs());
        assert!(ok, "element {i}: compiled {a}, eager {b}");
    }
    Ok(())
}

#[test]
fn compiled_groups_match_eager_for_every_float_dtype() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(0);
    for (dtype, tol) in [
        (DType::F32, 2e-6),
        (DType::F64, 1e-13),
        (DType::BF16, 2e-2),
        (DType::F16, 4e-3),
    ] {
        let x = Tensor::randn(&[37, 29], DType::F32)?
            .mul(3.0)?
            .to_dtype(dtype)?;
        let y = Tensor::randn(&[37, 29], DType::F32)?
            .mul(3.0)?
            .to_dtype(dtype)?;
        let m = fused(&[x.clone(), y.clone()])?;
        assert!(groups(&m) >= 1, "{dtype}: {}", m.graph());
        let before = fuser::stats();
        let got = m.forward(&[x.clone(), y.clone()])?;
        assert!(
            fuser::stats().kernel_runs > before.kernel_runs,
            "{dtype}: no group ran natively"
        );
        if dtype == DType::F32 || dtype == DType::F64 {
            let want = chain(&[x, y])?;
            for (g, w) in got.iter().zip(&want) {
                close(g, w, tol)?;
            }
        } else {
            // halves compute in f32 and round when a group ends (as
            // torch.compile's kernels), where eager rounds after every
            // op: compare with the f32 computation, to the outputs' scale
            let want = chain(&[x.to_dtype(DType::F32)?, y.to_dtype(DType::F32)?])?;
            for (g, w) in got.iter().zip(&want) {
                let scale = w.abs()?.max()?.item()?.to_f64();
                let g = g.to_dtype(DType::F64)?.to_vec::<f64>()?;
                let w = w.to_dtype(DType::F64)?.to_vec::<f64>()?;
                for (i, (a, b)) in g.iter().zip(&w).enumerate() {
                    assert!(
                        (a - b).abs() <= tol * scale || (a.is_nan() && b.is_nan()),
                        "{dtype} element {i}: compiled {a}, f32 {b}"
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn shapes_broadcasting_strides_and_special_values() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(1);
    let m = fused(&[
        Tensor::randn(&[4, 5], DType::F32)?,
        Tensor::randn(&[4, 5], DType::F32)?,
    ])?;
    let specials = Tensor::from_vec(
        vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1e-40,
            -1e-40,
            88.8,
            -104.0,
            3.0e38,
            -7.0,
        ],
        &[11],
    )?;
    let big = Tensor::randn(&[3, 1000], DType::F32)?;
    let cases: Vec<(Tensor, Tensor)> = vec![
        // odd lengths around the vector and unroll widths
        (
            Tensor::randn(&[1], DType::F32)?,
            Tensor::randn(&[1], DType::F32)?,
        ),
        (
            Tensor::randn(&[7], DType::F32)?,
            Tensor::randn(&[7], DType::F32)?,
        ),
        (
            Tensor::randn(&[100_003], DType::F32)?,
            Tensor::randn(&[100_003], DType::F32)?,
        ),
        // broadcasting: a row, a column, a scalar tensor
        (
            Tensor::randn(&[6, 1, 9], DType::F32)?,
            Tensor::randn(&[5, 1], DType::F32)?,
        ),
        (
            Tensor::randn(&[], DType::F32)?,
            Tensor::randn(&[3, 4], DType::F32)?,
        ),
        // strided: a transpose and a stepped slice
        (big.t()?, Tensor::randn(&[1000, 3], DType::F32)?),
        (
            big.slice(1, Some(1), None, 3)?,
            big.slice(1, None, Some(333), 1)?,
        ),
        // empty
        (
            Tensor::randn(&[0, 4], DType::F32)?,
            Tensor::randn(&[4], DType::F32)?,
        ),
        // NaN, ±inf, ±0, subnormals, overflow edges
        (specials.clone(), specials.flip(&[0])?),
    ];
    for (x, y) in cases {
        let before = fuser::stats();
        let got = m.forward(&[x.clone(), y.clone()])?;
        assert!(fuser::stats().kernel_runs > before.kernel_runs);
        let want = chain(&[x.clone(), y.clone()])?;
        for (g, w) in got.iter().zip(&want) {
            close(g, w, 2e-6)?;
        }
    }
    Ok(())
}

#[test]
fn groups_needing_grad_run_natively_with_a_fused_backward() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(2);
    let x = Tensor::randn(&[8, 3], DType::F32)?;
    let y = Tensor::randn(&[3], DType::F32)?;
    let m = fused(&[x.clone(), Tensor::randn(&[8, 3], DType::F32)?])?;
    // x requires grad, y is broadcast: its gradient is summed back
    let xg = x.detach().requires_grad_(true)?;
    let yg = y.detach().requires_grad_(true)?;
    let before = fuser::stats();
    let out = m.forward(&[xg.clone(), yg.clone()])?;
    assert!(fuser::stats().kernel_runs > before.kernel_runs);
    assert_eq!(
        out[0].grad_fn().unwrap().name(),
        "DifferentiableGraphBackward"
    );
    let forward_runs = fuser::stats().kernel_runs;
    out[0].sum()?.backward()?;
    // the backward ran as kernels too
    assert!(fuser::stats().kernel_runs > forward_runs);
    let (xe, ye) = (
        x.detach().requires_grad_(true)?,
        y.detach().requires_grad_(true)?,
    );
    chain(&[xe.clone(), ye.clone()])?[0].sum()?.backward()?;
    close(&xg.grad().unwrap(), &xe.grad().unwrap(), 2e-5)?;
    close(&yg.grad().unwrap(), &ye.grad().unwrap(), 2e-5)?;
    Ok(())
}

#[test]
fn fused_groups_pass_gradcheck_and_double_backward() -> Result<()> {
    use ferrotorch_core::autograd::{grad, gradcheck::gradcheck, gradcheck::GradcheckOptions};
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(4);
    let x = Tensor::randn(&[4, 3], DType::F64)?;
    let y = Tensor::randn(&[4, 3], DType::F64)?;
    let m = fused(&[x.clone(), y.clone()])?;
    let before = fuser::stats();
    gradcheck(
        |t| m.forward(t),
        &[x.requires_grad_(true)?, y.requires_grad_(true)?],
        GradcheckOptions::default(),
    )?;
    assert!(fuser::stats().kernel_runs > before.kernel_runs);
    // create_graph: the gradient is differentiable (eager ops), and its
    // own gradient matches eager's
    let w9 = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let x = &t[0];
        Ok(vec![x.mul(&x.sigmoid()?)?.mul(0.5)?.add(&x.tanh()?)?])
    };
    let mut t = trace(w9, &[x.detach()])?;
    passes::fuse_elementwise(t.graph_mut());
    let second = |f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>| -> Result<Tensor> {
        let xg = x.detach().requires_grad_(true)?;
        let y = f(&[xg.clone()])?.remove(0).sum()?;
        let g = grad(&[y], &[xg.clone()], None, None, true, false)?
            .remove(0)
            .unwrap();
        Ok(grad(&[g.sum()?], &[xg], None, None, false, false)?
            .remove(0)
            .unwrap())
    };
    close(&second(&|i| t.forward(i))?, &second(&w9)?, 1e-10)
}

#[test]
fn unsupported_groups_run_in_the_interpreter() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = Tensor::randn(&[8, 3], DType::F32)?;
    let y = Tensor::randn(&[8, 3], DType::F32)?;
    let m = fused(&[x.clone(), y.clone()])?;
    // int64 and int32 groups run natively, wrapping as torch's integers
    let xi = Tensor::from_vec(vec![1i64, -2, 3, i64::MAX], &[4])?;
    let int_chain = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![t[0]
            .mul(2)?
            .add(&t[0])?
            .neg()?
            .abs()?
            .clamp(Some(-5), Some(8))?])
    };
    let mut t = trace(int_chain, &[xi.clone()])?;
    passes::fuse_elementwise(t.graph_mut());
    let before = fuser::stats();
    let got = t.forward(&[xi.clone()])?;
    assert!(fuser::stats().kernel_runs > before.kernel_runs);
    assert_eq!(
        got[0].to_vec::<i64>()?,
        int_chain(&[xi.clone()])?[0].to_vec::<i64>()?
    );
    let x32 = Tensor::from_vec(vec![7i32, -9, 2_000_000_000], &[3])?;
    let got = t.forward(&[x32.clone()])?;
    assert_eq!(
        got[0].to_vec::<i32>()?,
        int_chain(&[x32])?[0].to_vec::<i32>()?
    );
    // an integer chain ending in true division computes floats: mixed
    // dtypes, interpreted
    let mut t = trace(
        |t| Ok(vec![t[0].mul(2)?.add(&t[0])?.div(4)?]),
        &[xi.clone()],
    )?;
    passes::fuse_elementwise(t.graph_mut());
    let before = fuser::stats();
    let got = t.forward(&[xi])?;
    assert_eq!(fuser::stats().kernel_runs, before.kernel_runs);
    assert_eq!(got[0].to_vec::<f32>()?[..3], [0.75, -1.5, 2.25]);
    // switched off: interpreted
    fuser::set_enabled(false);
    let before = fuser::stats();
    let got = m.forward(&[x.clone(), y.clone()]);
    fuser::set_enabled(true);
    assert_eq!(fuser::stats().kernel_runs, before.kernel_runs);
    close(&got?[0], &chain(&[x, y])?[0], 1e-6)?;
    Ok(())
}

#[test]
fn a_saved_program_holds_no_kernels_and_fuses_again_when_loaded() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = Tensor::randn(&[16], DType::F32)?;
    let y = Tensor::randn(&[16], DType::F32)?;
    let m = fused(&[x.clone(), y.clone()])?;
    let bytes = m.save_to_bytes()?;
    let mut back = ferrotorch_jit::load_bytes(&bytes)?;
    assert_eq!(groups(&back), 0, "groups are inlined in the file");
    passes::fuse_elementwise(back.graph_mut());
    assert!(groups(&back) >= 1);
    let before = fuser::stats();
    let got = back.forward(&[x.clone(), y.clone()])?;
    assert!(fuser::stats().kernel_runs > before.kernel_runs);
    close(&got[0], &chain(&[x, y])?[0], 2e-6)
}

/// Typed Rust calls of `neg`, `abs` and `where` (and so `leaky_relu`,
/// `softplus`) were not recorded: the trace kept their results as
/// constants, fixed to the example inputs.
#[test]
fn rust_neg_abs_and_where_are_traced() -> Result<()> {
    let x = Tensor::randn(&[4, 5], DType::F32)?;
    let y = Tensor::randn(&[4, 5], DType::F32)?;
    let m = trace(chain, &[x.clone(), y.clone()])?;
    let consts = m
        .graph()
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                &n.kind,
                NodeKind::Constant(ferrotorch_core::dispatch::IValue::Tensor(_))
            )
        })
        .count();
    assert_eq!(consts, 0, "{}", m.graph());
    let text = m.graph().to_string();
    for op in [
        "aten::neg",
        "aten::abs",
        "aten::leaky_relu",
        "aten::softplus",
    ] {
        assert!(text.contains(op), "{op} missing:\n{text}");
    }
    // leaky_relu is one op now (as PyTorch's trace shows it): `where`
    // and `gt` called from Rust are traced too
    let pick = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![ferrotorch_core::native::where_(
            &t[0].gt(0.0)?,
            &t[0],
            &t[1],
        )?])
    };
    let w = trace(pick, &[x.clone(), y.clone()])?;
    let wt = w.graph().to_string();
    for op in ["aten::where", "aten::gt"] {
        assert!(wt.contains(op), "{op} missing:\n{wt}");
    }
    close(
        &w.forward(&[y.clone(), x.clone()])?[0],
        &pick(&[y.clone(), x.clone()])?[0],
        0.0,
    )?;
    // and the trace follows new inputs
    let (x2, y2) = (x.mul(2.0)?, y.add(1.0)?);
    close(
        &m.forward(&[x2.clone(), y2.clone()])?[0],
        &chain(&[x2, y2])?[0],
        1e-6,
    )
}

/// A pointwise prologue and a reduction over the last dimension, each
/// as one row group (Note [Row kernels]).
fn row_cases() -> Vec<(&'static str, RowFn)> {
    vec![
        ("softmax", |t| t[0].mul(2.0)?.add(&t[1])?.softmax(-1, None)),
        ("log_softmax", |t| {
            t[0].mul(0.7)?.add(&t[1])?.log_softmax(-1, None)
        }),
        ("sum", |t| {
            t[0].mul(&t[1])?.abs()?.sum_dim(Some(&[-1]), false, None)
        }),
        ("mean", |t| {
            t[0].sub(&t[1])?.abs()?.mean_dim(Some(&[1]), true, None)
        }),
        ("amax", |t| t[0].add(&t[1])?.relu()?.amax(&[-1], false)),
        ("layer_norm", |t| {
            let d = t[0].size_at(-1)?;
            let w = Tensor::linspace(0.5, 1.5, d, DType::F32)?;
            let b = Tensor::linspace(-0.2, 0.2, d, DType::F32)?;
            t[0].mul(2.0)?
                .sub(&t[1])?
                .layer_norm(&[d], Some(&w), Some(&b), 1e-5)
        }),
    ]
}

type RowFn = fn(&[Tensor]) -> Result<Tensor>;

#[test]
fn reductions_over_the_last_dim_end_a_group_and_match_eager() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(9);
    for (name, f) in row_cases() {
        let x = Tensor::randn(&[6, 37], DType::F32)?;
        let y = Tensor::randn(&[6, 37], DType::F32)?;
        let mut m = trace(|t| Ok(vec![f(t)?]), &[x.clone(), y.clone()])?;
        passes::optimize(m.graph_mut())?;
        assert_eq!(
            passes::fuse_elementwise(m.graph_mut()),
            1,
            "{name}: {}",
            m.graph()
        );
        let cases = [
            (x.clone(), y.clone()),
            // a broadcast row and a transposed input
            (
                Tensor::randn(&[6, 37], DType::F32)?,
                Tensor::randn(&[37], DType::F32)?,
            ),
            (Tensor::randn(&[37, 6], DType::F32)?.t()?, y.clone()),
            // more rows than traced, and a NaN
            (
                Tensor::randn(&[50, 37], DType::F32)?,
                Tensor::randn(&[50, 37], DType::F32)?,
            ),
        ];
        for (i, (a, b)) in cases.into_iter().enumerate() {
            let a = if i == 3 {
                let mut v = a.to_vec::<f32>()?;
                v[40] = f32::NAN;
                Tensor::from_vec(v, &[50, 37])?
            } else {
                a
            };
            let before = fuser::stats();
            let got = m.forward(&[a.clone(), b.clone()])?;
            assert!(
                fuser::stats().kernel_runs > before.kernel_runs,
                "{name} case {i}: not native"
            );
            close(&got[0], &f(&[a, b])?, 2e-5)?;
        }
        // halves: computed in f32, rounded once
        let xh = x.to_dtype(DType::BF16)?;
        let yh = y.to_dtype(DType::BF16)?;
        if name != "layer_norm" {
            let got = m.forward(&[xh.clone(), yh.clone()])?;
            let want = f(&[xh.to_dtype(DType::F32)?, yh.to_dtype(DType::F32)?])?;
            close(&got[0].to_dtype(DType::F32)?, &want, 1e-2)?;
        }
    }
    Ok(())
}

/// A residual stream and its layer norm (`h = x + f(y); h + ln(h)`, the
/// pre-LN transformer's shape): the group returns `h` and `ln(h)` from
/// one kernel.
#[test]
fn a_row_group_returns_its_input_when_later_nodes_read_it() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let w = Tensor::linspace(0.5, 1.5, 24, DType::F32)?;
        let h = t[0].add(&t[1].mul(0.5)?)?;
        let n = h.layer_norm(&[24], Some(&w), None, 1e-5)?;
        Ok(vec![h.add(&n)?.mul(&h)?])
    };
    let x = Tensor::randn(&[5, 24], DType::F32)?;
    let y = Tensor::randn(&[5, 24], DType::F32)?;
    let mut m = trace(f, &[x.clone(), y.clone()])?;
    passes::optimize(m.graph_mut())?;
    passes::fuse_elementwise(m.graph_mut());
    let text = m.graph().to_string();
    let group = text.split("with prim::FusionGroup").nth(1).unwrap_or("");
    assert!(group.contains("aten::layer_norm"), "{text}");
    let before = fuser::stats();
    let got = m.forward(&[x.clone(), y.clone()])?;
    assert!(fuser::stats().kernel_runs > before.kernel_runs);
    close(&got[0], &f(&[x, y])?[0], 2e-5)
}

/// Row groups under autograd: the forward runs natively, the gradients
/// (of the inputs and of layer norm's weight and bias) are eager's, and
/// pass gradcheck in f64.
#[test]
fn row_groups_differentiate_like_eager() -> Result<()> {
    use ferrotorch_core::autograd::gradcheck::{gradcheck, GradcheckOptions};
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(12);
    let w = Tensor::linspace(0.5, 1.5, 7, DType::F64)?.requires_grad_(true)?;
    let b = Tensor::linspace(-0.3, 0.3, 7, DType::F64)?.requires_grad_(true)?;
    let cases: Vec<(&str, RowFn)> = vec![
        ("softmax", |t| t[0].mul(&t[1])?.mul(0.5)?.softmax(-1, None)),
        ("log_softmax", |t| t[0].sub(&t[1])?.log_softmax(-1, None)),
        ("sum", |t| {
            t[0].mul(&t[1])?
                .sub(&t[0])?
                .sum_dim(Some(&[-1]), true, None)
        }),
        ("mean", |t| {
            t[0].add(&t[1])?
                .mul(&t[0])?
                .mean_dim(Some(&[-1]), false, None)
        }),
        // weight and bias as inputs (a trace makes captured tensors constants)
        ("layer_norm", |t| {
            t[0].add(&t[1].mul(0.3)?)?
                .layer_norm(&[7], Some(&t[2]), Some(&t[3]), 1e-5)
        }),
    ];
    for (name, f) in cases {
        let x = Tensor::randn(&[4, 7], DType::F64)?;
        let y = Tensor::randn(&[4, 7], DType::F64)?;
        let ins = [x.clone(), y.clone(), w.detach(), b.detach()];
        let mut m = trace(|t| Ok(vec![f(t)?]), &ins)?;
        passes::fuse_elementwise(m.graph_mut());
        let xg = x.detach().requires_grad_(true)?;
        let before = fuser::stats();
        let out = m.forward(&[xg.clone(), y.clone(), w.clone(), b.clone()])?;
        assert!(
            fuser::stats().kernel_runs > before.kernel_runs,
            "{name}: not native"
        );
        let gw = Tensor::randn(out[0].shape(), DType::F64)?;
        let got = ferrotorch_core::autograd::grad(
            &[out[0].clone()],
            &[xg.clone(), w.clone(), b.clone()],
            Some(&[gw.clone()]),
            None,
            false,
            true,
        )?;
        let xe = x.detach().requires_grad_(true)?;
        let want = ferrotorch_core::autograd::grad(
            &[f(&[xe.clone(), y.clone(), w.clone(), b.clone()])?],
            &[xe, w.clone(), b.clone()],
            Some(&[gw]),
            None,
            false,
            true,
        )?;
        for (g, e) in got.iter().zip(&want) {
            match (g, e) {
                (Some(g), Some(e)) => close(g, e, 1e-10)?,
                (None, None) => {}
                _ => panic!("{name}: a gradient is missing"),
            }
        }
        gradcheck(
            |t| m.forward(t),
            &[
                x.requires_grad_(true)?,
                y.requires_grad_(true)?,
                w.clone(),
                b.clone(),
            ],
            GradcheckOptions::default(),
        )?;
    }
    Ok(())
}

/// A prologue with a transcendental is fused without its reduction: a
/// row kernel would evaluate it in 128-bit registers, slower than the
/// eager wide loops (Note [Blocked kernels]).
#[test]
fn transcendental_prologues_leave_the_reduction_out() -> Result<()> {
    let x = Tensor::randn(&[4, 9], DType::F32)?;
    let mut m = trace(
        |t| Ok(vec![t[0].mul(2.0)?.gelu("none")?.softmax(-1, None)?]),
        &[x.clone()],
    )?;
    assert_eq!(passes::fuse_elementwise(m.graph_mut()), 1);
    let text = m.graph().to_string();
    let (outer, group) = text.split_once("with prim::FusionGroup").unwrap();
    assert!(
        outer.contains("aten::softmax") && !group.contains("aten::softmax"),
        "{text}"
    );
    close(
        &m.forward(&[x.clone()])?[0],
        &x.mul(2.0)?.gelu("none")?.softmax(-1, None)?,
        1e-6,
    )
}

/// Random pointwise programs (a fixed-seed generator over the fusable
/// ops, random shapes, broadcasting and transposed inputs), traced,
/// fused and run natively, against eager.
#[test]
fn random_pointwise_programs_match_eager() -> Result<()> {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut seed: u64 = 0x5eed_2026_1125;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    type Step = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let unary: [(&str, Step); 12] = [
        ("sigmoid", |a, _| a.sigmoid()),
        ("tanh", |a, _| a.tanh()),
        ("exp", |a, _| a.clamp(Some(-20.0), Some(20.0))?.exp()),
        ("relu", |a, _| a.relu()),
        ("neg", |a, _| a.neg()),
        ("abs", |a, _| a.abs()),
        ("gelu", |a, _| a.gelu("none")),
        ("gelu_tanh", |a, _| a.gelu("tanh")),
        ("erf", |a, _| a.erf()),
        ("log", |a, _| a.abs()?.add(1.0)?.log()),
        ("sqrt", |a, _| a.abs()?.sqrt()),
        ("square", |a, _| a.mul(a)),
    ];
    let binary: [(&str, Step); 7] = [
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(&b.abs()?.add(0.5)?)),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("where", |a, b| {
            ferrotorch_core::native::where_(&a.gt(b)?, a, b)
        }),
    ];
    let before = fuser::stats();
    for case in 0..100 {
        let len = 1 + next(6) as usize;
        let ops: Vec<(bool, usize)> = (0..len)
            .map(|_| {
                if next(2) == 0 {
                    (true, next(unary.len() as u64) as usize)
                } else {
                    (false, next(binary.len() as u64) as usize)
                }
            })
            .collect();
        let program = |t: &[Tensor]| -> Result<Vec<Tensor>> {
            let (mut v, y) = (t[0].clone(), &t[1]);
            for &(is_unary, k) in &ops {
                v = if is_unary {
                    unary[k].1(&v, y)?
                } else {
                    binary[k].1(&v, y)?
                };
            }
            Ok(vec![v])
        };
        let rows = 1 + next(9) as usize;
        let cols = 1 + next(70) as usize;
        let x = Tensor::randn(&[rows, cols], DType::F32)?.mul(2.0)?;
        // y: same shape, a broadcast row, or a transposed view
        let y = match next(3) {
            0 => Tensor::randn(&[rows, cols], DType::F32)?,
            1 => Tensor::randn(&[cols], DType::F32)?,
            _ => Tensor::randn(&[cols, rows], DType::F32)?.t()?,
        };
        let mut m = trace(program, &[x.clone(), y.clone()])?;
        passes::fuse_elementwise(m.graph_mut());
        let got = m.forward(&[x.clone(), y.clone()])?;
        let want = program(&[x, y])?;
        let names: Vec<&str> = ops
            .iter()
            .map(|&(u, k)| if u { unary[k].0 } else { binary[k].0 })
            .collect();
        let g = got[0].to_vec::<f32>()?;
        let w = want[0].to_vec::<f32>()?;
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            let ok = (a.is_nan() && b.is_nan()) || (a - b).abs() <= 2e-5 * (1.0 + b.abs());
            assert!(
                ok,
                "case {case} {names:?}: element {i}: fused {a}, eager {b}"
            );
        }
    }
    // most programs have a group of two or more ops, run natively
    assert!(fuser::stats().kernel_runs >= before.kernel_runs + 50);
    Ok(())
}
