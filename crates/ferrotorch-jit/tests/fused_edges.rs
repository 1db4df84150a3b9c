//! Fused backward kernels at the edges: NaN, ±inf, ±0 and the bounds
//! themselves give eager's gradients (PyTorch's rules) for relu and the
//! clamps, with number bounds and with tensor bounds.

#![allow(clippy::cloned_ref_to_slice_refs)]

use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::{fuser, passes, trace};
use std::sync::Mutex;

/// The counters are global: tests that read them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// `got == want` elementwise, NaN matching NaN.
fn same(got: &Tensor, want: &Tensor, what: &str) -> Result<()> {
    assert_eq!(got.shape(), want.shape(), "{what}");
    assert_eq!(got.dtype(), want.dtype(), "{what}");
    let g = got.to_dtype(DType::F64)?.to_vec::<f64>()?;
    let w = want.to_dtype(DType::F64)?.to_vec::<f64>()?;
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a.is_nan() && b.is_nan()) || a == b,
            "{what}: element {i}: compiled {a}, eager {b}"
        );
    }
    Ok(())
}

#[test]
fn fused_backward_of_relu_and_clamps_is_eagers_at_the_edges() -> Result<()> {
    // NaN, the bounds themselves, ±0 and ±inf: relu passes a NaN's
    // gradient (threshold_backward), number-bound clamps (hardtanh lowers
    // as one) pass it strictly inside (0 at a bound and at NaN), lo > hi clamps to hi:
    // compiled and eager give the same values and gradients (PyTorch's)
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let x = &t[0];
        let a = x.relu()?.mul(1.5)?;
        let b = x.clamp(Some(-1.0), Some(2.0))?.mul(2.0)?;
        let c = x.clamp(Some(-0.5), Some(0.5))?.mul(3.0)?;
        let d = x
            .clamp_min(0.0)?
            .mul(4.0)?
            .add(&x.clamp_max(1.0)?.mul(5.0)?)?;
        let e = x.clamp(Some(1.0), Some(0.0))?.mul(6.0)?;
        Ok(vec![a.add(&b)?.add(&c)?.add(&d)?.add(&e)?])
    };
    let inf = f64::INFINITY;
    let vals = [
        f64::NAN,
        -inf,
        -2.0,
        -1.0,
        -0.5,
        -0.0,
        0.0,
        0.5,
        1.0,
        2.0,
        3.0,
        inf,
    ];
    for dt in [DType::F32, DType::F64] {
        let x = Tensor::from_vec(vals.repeat(3), &[36])?.to_dtype(dt)?;
        let mut m = trace(f, &[x.clone()])?;
        passes::optimize(m.graph_mut())?;
        assert!(passes::fuse_elementwise(m.graph_mut()) >= 1);
        let before = fuser::stats();
        let xc = x.detach().requires_grad_(true)?;
        let out = m.forward(&[xc.clone()])?.remove(0);
        out.sum()?.backward()?;
        assert!(fuser::stats().kernel_runs > before.kernel_runs);
        let xe = x.detach().requires_grad_(true)?;
        let want = f(&[xe.clone()])?.remove(0);
        want.sum()?.backward()?;
        same(&out.detach(), &want.detach(), "value")?;
        same(&xc.grad().unwrap(), &xe.grad().unwrap(), "x grad")?;
        // the gradient at the first copy, worked out from PyTorch's rules:
        // relu 1.5 (x > 0 or NaN), clamp 2 (-1 < x < 2), clamp 3
        // (-0.5 < x < 0.5), clamp_min 4 (x > 0), clamp_max 5 (x < 1), 0
        let g = xe.grad().unwrap().to_dtype(DType::F64)?.to_vec::<f64>()?;
        let expect = [
            1.5, 5.0, 5.0, 5.0, 7.0, 10.0, 10.0, 12.5, 7.5, 5.5, 5.5, 5.5,
        ];
        assert_eq!(&g[..12], &expect, "{dt:?}");
    }
    Ok(())
}

#[test]
fn fused_backward_of_clamps_with_tensor_bounds_is_eagers() -> Result<()> {
    // every combination of NaN, ±inf, below, equal and above for x, min
    // and max (Note [Compiled clamp with tensor bounds]): ties halve the
    // gradient, a NaN x passes it (to max as well where max < min), a
    // NaN bound stops it where x is past the other bound
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let inf = f64::INFINITY;
    let vals = [f64::NAN, -inf, -1.0, 0.0, 1.0, inf];
    let (mut xs, mut los, mut his) = (vec![], vec![], vec![]);
    for &x in &vals {
        for &lo in &vals {
            for &hi in &vals {
                xs.push(x);
                los.push(lo);
                his.push(hi);
            }
        }
    }
    let n = xs.len();
    // both bounds, and each alone (`maximum`'s and `minimum`'s gradients)
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let (x, lo, hi) = (&t[0], &t[1], &t[2]);
        let both = x.mul(2.0)?.clamp(Some(lo), Some(hi))?.mul(3.0)?;
        let lower = x.clamp(Some(lo), None::<&Tensor>)?.mul(5.0)?;
        let upper = x.clamp_max(hi)?.mul(7.0)?;
        Ok(vec![both.add(&lower)?.add(&upper)?])
    };
    for dt in [DType::F32, DType::F64] {
        let ins = [&xs, &los, &his]
            .iter()
            .map(|v| Tensor::from_vec(v.to_vec(), &[n])?.to_dtype(dt))
            .collect::<Result<Vec<_>>>()?;
        let mut m = trace(f, &ins)?;
        passes::optimize(m.graph_mut())?;
        assert!(passes::fuse_elementwise(m.graph_mut()) >= 1);
        let leaves = |ins: &[Tensor]| -> Result<Vec<Tensor>> {
            ins.iter()
                .map(|t| t.detach().requires_grad_(true))
                .collect()
        };
        let before = fuser::stats();
        let c = leaves(&ins)?;
        let out = m.forward(&c)?.remove(0);
        out.sum()?.backward()?;
        assert!(fuser::stats().kernel_runs > before.kernel_runs);
        let e = leaves(&ins)?;
        let want = f(&e)?.remove(0);
        want.sum()?.backward()?;
        same(&out.detach(), &want.detach(), "value")?;
        for (k, name) in ["x", "min", "max"].iter().enumerate() {
            let what = format!("{dt:?} {name} grad");
            same(&c[k].grad().unwrap(), &e[k].grad().unwrap(), &what)?;
        }
        // PyTorch's gradients at a few points (x, min, max as indices into
        // `vals`; `both` gives x 3·2 = 6 and a bound 3 where it passes in full)
        let gx = c[0].grad().unwrap().to_dtype(DType::F64)?.to_vec::<f64>()?;
        let gmax = c[2].grad().unwrap().to_dtype(DType::F64)?.to_vec::<f64>()?;
        let at = |x: usize, lo: usize, hi: usize| x * 36 + lo * 6 + hi;
        // x = 0, min = 0, max = 1: 2x ties min below max, half of 6; x ties
        // min alone, half of 5; x under max, 7
        assert_eq!(gx[at(3, 3, 4)], 3.0 + 2.5 + 7.0, "{dt:?} ties");
        // x = NaN, min = 1, max = -1: max < min takes 3 as well as x
        // taking 6; a NaN x passes to both sides of `minimum`, 7
        assert_eq!(gmax[at(0, 4, 2)], 3.0 + 7.0, "{dt:?} NaN x, max < min");
        assert_eq!(gx[at(0, 4, 2)], 6.0 + 5.0 + 7.0, "{dt:?} NaN x");
        // x = 1, min = NaN, max = 0: 2x past max with a NaN min stops
        // (0); maximum with a NaN passes (5); x > max (0)
        assert_eq!(gx[at(4, 0, 3)], 5.0, "{dt:?} NaN min, x past max");
    }
    Ok(())
}
