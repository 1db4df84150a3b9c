//! The recurrent ops (`gru`, `lstm`, `rnn_tanh`, `rnn_relu` and their
//! cells) and the multi-output view node of `split`/`chunk`/`unbind`:
//! float64 runs the composed formulas, checked by gradcheck and
//! gradgradcheck; float32 runs the fused kernels (Note [Fused recurrent
//! cells]), checked against the float64 results for values, gradients and
//! second derivatives.

use super::{check, input};
use ferrotorch_core::autograd;
use ferrotorch_core::native::{rnn, rnn_cell, RnnArgs, RnnMode};
use ferrotorch_core::{DType, Result, Tensor};

fn args(num_layers: usize, bidirectional: bool, batch_first: bool) -> RnnArgs {
    RnnArgs {
        has_biases: true,
        num_layers,
        dropout: 0.0,
        train: false,
        bidirectional,
        batch_first,
    }
}

/// Parameters of `mode` for input size `inp`, hidden `hid` (projection
/// `proj` for the LSTM when nonzero), `layers` x `dirs`, float64.
fn params(
    mode: RnnMode,
    inp: usize,
    hid: usize,
    proj: usize,
    layers: usize,
    dirs: usize,
) -> Vec<Tensor> {
    let g = match mode {
        RnnMode::Gru => 3,
        RnnMode::Lstm => 4,
        _ => 1,
    } * hid;
    let real = if proj > 0 { proj } else { hid };
    let mut out = Vec::new();
    for l in 0..layers {
        for d in 0..dirs {
            let seed = 10 * l + d;
            let i = if l == 0 { inp } else { real * dirs };
            out.push(input(&[g, i], -0.6, 0.6, seed + 1));
            out.push(input(&[g, real], -0.6, 0.6, seed + 2));
            out.push(input(&[g], -0.3, 0.3, seed + 3));
            out.push(input(&[g], -0.3, 0.3, seed + 4));
            if proj > 0 {
                out.push(input(&[proj, hid], -0.6, 0.6, seed + 5));
            }
        }
    }
    out
}

/// Run the sequence op on `t = [x, h0, (c0), params...]`, returning the
/// output and states.
fn run(mode: RnnMode, a: RnnArgs, t: &[Tensor]) -> Result<Vec<Tensor>> {
    let ns = if mode == RnnMode::Lstm { 2 } else { 1 };
    let (y, s) = rnn(mode, &t[0], &t[1..1 + ns], &t[1 + ns..], a)?;
    let mut out = vec![y];
    out.extend(s);
    Ok(out)
}

#[test]
fn sequence_ops_gradcheck_in_f64() {
    let x = input(&[3, 2, 3], -1.0, 1.0, 7);
    let h = |n: usize, k: usize, s: usize| input(&[n, 2, k], -0.5, 0.5, s);
    let mut t = vec![x.clone(), h(1, 4, 8)];
    t.extend(params(RnnMode::Gru, 3, 4, 0, 1, 1));
    check(
        "gru",
        |t| run(RnnMode::Gru, args(1, false, false), t),
        &t,
        true,
    );

    let mut t = vec![x.clone(), h(4, 2, 9), h(4, 3, 10)];
    t.extend(params(RnnMode::Lstm, 3, 3, 2, 2, 2));
    check(
        "lstm proj, 2 layers, bidirectional",
        |t| run(RnnMode::Lstm, args(2, true, false), t),
        &t,
        false,
    );

    // batch first: [batch 2, seq 3, 3]
    let mut t = vec![input(&[2, 3, 3], -1.0, 1.0, 12), h(1, 3, 11)];
    t.extend(params(RnnMode::Tanh, 3, 3, 0, 1, 1));
    check(
        "rnn_tanh batch_first",
        |t| run(RnnMode::Tanh, args(1, false, true), t),
        &t,
        true,
    );
}

/// The same computation in float32 (fused) and float64 (composed).
fn compare_f32(mode: RnnMode, a: RnnArgs, t64: &[Tensor], tol: f64) -> Result<()> {
    let t32: Vec<Tensor> = t64
        .iter()
        .map(|t| t.detach().to_dtype(DType::F32)?.requires_grad_(true))
        .collect::<Result<_>>()?;
    let (o64, o32) = (run(mode, a, t64)?, run(mode, a, &t32)?);
    // a weighted sum of every output, so each output's gradient differs
    let loss = |o: &[Tensor]| -> Result<Tensor> {
        let mut l = Tensor::zeros(&[], o[0].dtype())?;
        for (k, y) in o.iter().enumerate() {
            let w = y.detach().mul(0.0)?.add((k + 1) as f64)?.cumsum(-1, None)?;
            l = l.add(&y.mul(&w)?.sum()?)?;
        }
        Ok(l)
    };
    for (a, b) in o64.iter().zip(&o32) {
        assert!(
            b.to_dtype(DType::F64)?.allclose(a, tol, tol, false)?,
            "{mode:?} forward"
        );
    }
    let g64 = autograd::grad(&[loss(&o64)?], t64, None, None, true, false)?;
    let g32 = autograd::grad(&[loss(&o32)?], &t32, None, None, true, false)?;
    for (i, (a, b)) in g64.iter().zip(&g32).enumerate() {
        let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
        assert!(
            b.to_dtype(DType::F64)?.allclose(a, tol, tol, false)?,
            "{mode:?} grad {i}: {b:?} vs {a:?}"
        );
    }
    // second order through the fused nodes' create_graph formulas: the
    // gradient of the input's gradient norm with respect to everything
    let gg = |g: &[Option<Tensor>], t: &[Tensor]| -> Result<Vec<Option<Tensor>>> {
        let s = g[0].as_ref().unwrap().pow(2.0)?.sum()?;
        autograd::grad(&[s], t, None, None, false, true)
    };
    for (i, (a, b)) in gg(&g64, t64)?.iter().zip(&gg(&g32, &t32)?).enumerate() {
        if let (Some(a), Some(b)) = (a, b) {
            assert!(
                b.to_dtype(DType::F64)?
                    .allclose(a, 10.0 * tol, 10.0 * tol, false)?,
                "{mode:?} second order {i}"
            );
        }
    }
    Ok(())
}

#[test]
fn fused_f32_steps_match_composed_f64() -> Result<()> {
    let x = input(&[5, 3, 4], -1.5, 1.5, 21);
    let h = |n: usize, k: usize, s: usize| input(&[n, 3, k], -0.8, 0.8, s);
    let mut t = vec![x.clone(), h(2, 6, 22)];
    t.extend(params(RnnMode::Gru, 4, 6, 0, 1, 2));
    compare_f32(RnnMode::Gru, args(1, true, false), &t, 1e-5)?;

    let mut t = vec![
        x.transpose(0, 1)?
            .contiguous()?
            .detach()
            .requires_grad_(true)?,
        h(2, 5, 23),
        h(2, 5, 24),
    ];
    t.extend(params(RnnMode::Lstm, 4, 5, 0, 2, 1));
    compare_f32(RnnMode::Lstm, args(2, false, true), &t, 1e-5)?;

    // the fused GRU step records one node
    let t32: Vec<Tensor> = t[..1]
        .iter()
        .map(|t| t.to_dtype(DType::F32))
        .collect::<Result<_>>()?;
    let p: Vec<Tensor> = params(RnnMode::Gru, 3, 4, 0, 1, 1)
        .iter()
        .map(|p| p.to_dtype(DType::F32))
        .collect::<Result<_>>()?;
    let x = t32[0].narrow(2, 0, 3)?;
    let (_, hs) = rnn(
        RnnMode::Gru,
        &x,
        &[Tensor::zeros(&[1, 3, 4], DType::F32)?],
        &p,
        args(1, false, true),
    )?;
    assert_eq!(hs[0].grad_fn().unwrap().name(), "StackBackward0");
    let first = hs[0].grad_fn().unwrap().next_functions()[0]
        .clone()
        .unwrap()
        .0;
    assert_eq!(first.name(), "ThnnFusedGruCellBackward0");
    Ok(())
}

#[test]
fn cells_match_sequence_ops() -> Result<()> {
    for mode in [RnnMode::Tanh, RnnMode::Relu, RnnMode::Gru, RnnMode::Lstm] {
        let p = params(mode, 3, 4, 0, 1, 1);
        let x = input(&[1, 2, 3], -1.0, 1.0, 31);
        let mut hx = vec![input(&[1, 2, 4], -0.5, 0.5, 32)];
        if mode == RnnMode::Lstm {
            hx.push(input(&[1, 2, 4], -0.5, 0.5, 33));
        }
        let (_, want) = rnn(mode, &x, &hx, &p, args(1, false, false))?;
        let hx2: Vec<Tensor> = hx.iter().map(|h| h.select(0, 0)).collect::<Result<_>>()?;
        let got = rnn_cell(
            mode,
            &x.select(0, 0)?,
            &hx2,
            &p[0],
            &p[1],
            Some(&p[2]),
            Some(&p[3]),
        )?;
        for (g, w) in got.iter().zip(&want) {
            assert!(
                g.allclose(&w.select(0, 0)?, 1e-12, 1e-12, false)?,
                "{mode:?}"
            );
        }
        // unbatched: 1-D input and state
        let h1: Vec<Tensor> = hx2.iter().map(|h| h.select(0, 1)).collect::<Result<_>>()?;
        let one = rnn_cell(
            mode,
            &x.select(0, 0)?.select(0, 1)?,
            &h1,
            &p[0],
            &p[1],
            Some(&p[2]),
            Some(&p[3]),
        )?;
        assert!(one[0].allclose(&got[0].select(0, 1)?, 1e-12, 1e-12, false)?);
    }
    check(
        "gru_cell",
        |t| {
            rnn_cell(
                RnnMode::Gru,
                &t[0],
                &t[1..2],
                &t[2],
                &t[3],
                Some(&t[4]),
                Some(&t[5]),
            )
        },
        &[input(&[2, 3], -1.0, 1.0, 40), input(&[2, 4], -1.0, 1.0, 41)]
            .into_iter()
            .chain(params(RnnMode::Gru, 3, 4, 0, 1, 1))
            .collect::<Vec<_>>(),
        true,
    );
    Ok(())
}

#[test]
fn recurrent_op_errors_name_the_op() -> Result<()> {
    let p = params(RnnMode::Gru, 3, 4, 0, 1, 1);
    let h = Tensor::zeros(&[1, 2, 4], DType::F64)?;
    let e = rnn(
        RnnMode::Gru,
        &Tensor::zeros(&[2, 3], DType::F64)?,
        &[h.clone()],
        &p,
        args(1, false, false),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("gru: input must have 3 dimensions"),
        "{e}"
    );
    let e = rnn(
        RnnMode::Gru,
        &Tensor::zeros(&[5, 2, 3], DType::F64)?,
        &[h.clone()],
        &p[..3],
        args(1, false, false),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("expected 4 parameter tensors"),
        "{e}"
    );
    let e = rnn(
        RnnMode::Gru,
        &Tensor::zeros(&[5, 2, 7], DType::F64)?,
        &[h.clone()],
        &p,
        args(1, false, false),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("weight_ih_l0 should have shape [12, 7]"),
        "{e}"
    );
    let e = rnn(
        RnnMode::Gru,
        &Tensor::zeros(&[0, 2, 3], DType::F64)?,
        &[h.clone()],
        &p,
        args(1, false, false),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("sequence length to be larger than 0"),
        "{e}"
    );
    let e = rnn(
        RnnMode::Gru,
        &Tensor::zeros(&[5, 2, 3], DType::F32)?,
        &[h.clone()],
        &p,
        args(1, false, false),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("does not match weight_ih_l0 dtype"),
        "{e}"
    );
    let e = rnn_cell(
        RnnMode::Lstm,
        &Tensor::zeros(&[2, 3], DType::F64)?,
        &[h.select(0, 0)?],
        &p[0],
        &p[1],
        None,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("lstm_cell:"), "{e}");
    Ok(())
}

/// `split`, `chunk` and `unbind` record one node for all pieces (Note [One
/// node for all pieces]); a piece without a gradient contributes zeros.
#[test]
fn split_and_unbind_record_one_node() -> Result<()> {
    let x = input(&[4, 6], -1.0, 1.0, 50);
    let parts = x.split(4, 1)?;
    assert_eq!(parts[0].grad_fn().unwrap().name(), "SplitBackward0");
    assert!(std::sync::Arc::ptr_eq(
        &parts[0].grad_fn().unwrap(),
        &parts[1].grad_fn().unwrap()
    ));
    assert_eq!(
        x.split_with_sizes(&[1, 5], 1)?[1].grad_fn().unwrap().name(),
        "SplitWithSizesBackward0"
    );
    assert_eq!(
        x.chunk(3, 1)?[2].grad_fn().unwrap().name(),
        "SplitBackward0"
    );
    let rows = x.unbind(0)?;
    assert_eq!(rows[3].grad_fn().unwrap().name(), "UnbindBackward0");
    // only row 2 used: the gradient is 2·x there and zero elsewhere
    let g = autograd::grad(
        &[rows[2].pow(2.0)?.sum()?],
        &[x.clone()],
        None,
        None,
        false,
        false,
    )?;
    let want = x
        .detach()
        .mul(2.0)?
        .mul(&Tensor::from_vec(vec![0.0, 0.0, 1.0, 0.0], &[4, 1])?)?;
    assert!(g[0].as_ref().unwrap().allclose(&want, 0.0, 0.0, false)?);
    check(
        "split",
        |t| t[0].split(4, 1)?.into_iter().map(|p| p.sin()).collect(),
        &[x.clone()],
        true,
    );
    check(
        "unbind",
        |t| Ok(vec![t[0].unbind(1)?[3].exp()?]),
        &[x.clone()],
        true,
    );
    // pieces stay views of the input
    let y = x.detach();
    y.unbind(0)?[1].fill_(5.0)?;
    assert_eq!(y.select(0, 1)?.to_vec::<f64>()?, vec![5.0; 6]);
    Ok(())
}
