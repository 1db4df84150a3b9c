//! Derivatives of the fused float32 GRU and LSTM steps (Note [Fused
//! recurrent cells] in `native/nn/rnn.rs`).
//!
//! Without `create_graph` the backward pass is one kernel
//! (`ferrotorch_kernels::rnn`) over the activated gates the forward pass
//! kept; with it, the same formulas in differentiable ops, the gates
//! recomputed from the saved inputs so that double backward sees their
//! dependence on them.

use super::want;
use crate::autograd::mode::is_grad_enabled;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record, record1, Ctx};
use crate::error::Result;
use crate::native::cat;
use crate::tensor::access::contiguous_slices_mut;
use crate::tensor::Tensor;
use crate::DType;

/// `1 - t`.
fn one_minus(t: &Tensor) -> Result<Tensor> {
    t.neg()?.add(1.0)
}

/// `σ'(pre)` from `s = σ(pre)`: `s·(1 - s)`.
fn dsigmoid(s: &Tensor) -> Result<Tensor> {
    s.mul(&one_minus(s)?)
}

/// Record `out = gru_step(gi, gh, h)` made by the kernel, with its
/// workspace `ws` (`[r, z, n]` per row).
pub(crate) fn gru_step(
    gi: &Tensor,
    gh: &Tensor,
    h: &Tensor,
    ws: Tensor,
    out: Tensor,
) -> Result<Tensor> {
    if !needs_grad(&[gi, gh, h]) {
        return Ok(out);
    }
    record1(
        "ThnnFusedGruCellBackward0",
        &[gi, gh, h],
        out,
        smallvec::smallvec![
            Save::Tensor(gi),
            Save::Tensor(gh),
            Save::Tensor(h),
            Save::Tensor(&ws)
        ],
        |c: &Ctx| {
            let (gi, gh, h, ws) = (c.saved(0), c.saved(1), c.saved(2), c.saved(3));
            let g = c.grad();
            if !is_grad_enabled() && g.dtype() == DType::F32 {
                let g = g.contiguous()?;
                let dgi = Tensor::empty(gh.shape(), DType::F32)?;
                let dgh = Tensor::empty(gh.shape(), DType::F32)?;
                let dh = Tensor::empty(h.shape(), DType::F32)?;
                let n = h.shape()[1];
                contiguous_slices_mut::<f32>(
                    "gru_cell_backward",
                    &[&dgi, &dgh, &dh],
                    &[&g, gh, h, ws],
                    |o, r| {
                        let (a, rest) = o.split_at_mut(1);
                        let (b, d) = rest.split_at_mut(1);
                        ferrotorch_kernels::rnn::gru_backward(
                            r[0], r[1], r[2], r[3], a[0], b[0], d[0], n,
                        );
                    },
                )?;
                return Ok(smallvec::smallvec![
                    want(c, 0, || Ok(dgi))?,
                    want(c, 1, || Ok(dgh))?,
                    want(c, 2, || Ok(dh))?
                ]);
            }
            let (i, hh) = (gi.chunk(3, 1)?, gh.chunk(3, 1)?);
            let r = i[0].add(&hh[0])?.sigmoid()?;
            let z = i[1].add(&hh[1])?.sigmoid()?;
            let nn = i[2].add(&r.mul(&hh[2])?)?.tanh()?;
            let da = g.mul(&one_minus(&z)?)?.mul(&one_minus(&nn.mul(&nn)?)?)?;
            let dpr = da.mul(&hh[2])?.mul(&dsigmoid(&r)?)?;
            let dpz = g.mul(&h.sub(&nn)?)?.mul(&dsigmoid(&z)?)?;
            let dgi = || cat(&[dpr.clone(), dpz.clone(), da.clone()], 1);
            let dgh = || cat(&[dpr.clone(), dpz.clone(), da.mul(&r)?], 1);
            Ok(smallvec::smallvec![
                want(c, 0, dgi)?,
                want(c, 1, dgh)?,
                want(c, 2, || g.mul(&z))?
            ])
        },
    )
}

/// Record `(h, c') = lstm_step(gates, c)` made by the kernel, with its
/// workspace `ws` (`[i, f, g, o, tanh(c')]` per row).
pub(crate) fn lstm_step(
    gates: &Tensor,
    c: &Tensor,
    ws: Tensor,
    h: Tensor,
    cn: Tensor,
) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[gates, c]) {
        return Ok((h, cn));
    }
    record(
        "ThnnFusedLstmCellBackward0",
        &[gates, c],
        &[&h, &cn],
        smallvec::smallvec![Save::Tensor(gates), Save::Tensor(c), Save::Tensor(&ws)],
        |cx: &Ctx| {
            let (x, c, ws) = (cx.saved(0), cx.saved(1), cx.saved(2));
            let (gh, gc) = (cx.grad_at(0), cx.grad_at(1));
            if !is_grad_enabled() && gh.dtype() == DType::F32 && gc.dtype() == DType::F32 {
                let (gh, gc) = (gh.contiguous()?, gc.contiguous()?);
                let dx = Tensor::empty(x.shape(), DType::F32)?;
                let dc = Tensor::empty(c.shape(), DType::F32)?;
                let n = c.shape()[1];
                contiguous_slices_mut::<f32>(
                    "lstm_cell_backward",
                    &[&dx, &dc],
                    &[&gh, &gc, c, ws],
                    |o, r| {
                        let (a, b) = o.split_at_mut(1);
                        ferrotorch_kernels::rnn::lstm_backward(
                            r[0], r[1], r[2], r[3], a[0], b[0], n,
                        );
                    },
                )?;
                return Ok(smallvec::smallvec![
                    want(cx, 0, || Ok(dx))?,
                    want(cx, 1, || Ok(dc))?
                ]);
            }
            let q = x.chunk(4, 1)?;
            let (i, f, g, o) = (
                q[0].sigmoid()?,
                q[1].sigmoid()?,
                q[2].tanh()?,
                q[3].sigmoid()?,
            );
            let tc = f.mul(c)?.add(&i.mul(&g)?)?.tanh()?;
            let dcn = gc.add(&gh.mul(&o)?.mul(&one_minus(&tc.mul(&tc)?)?)?)?;
            let dx = || {
                cat(
                    &[
                        dcn.mul(&g)?.mul(&dsigmoid(&i)?)?,
                        dcn.mul(c)?.mul(&dsigmoid(&f)?)?,
                        dcn.mul(&i)?.mul(&one_minus(&g.mul(&g)?)?)?,
                        gh.mul(&tc)?.mul(&dsigmoid(&o)?)?,
                    ],
                    1,
                )
            };
            Ok(smallvec::smallvec![
                want(cx, 0, dx)?,
                want(cx, 1, || dcn.mul(&f))?
            ])
        },
    )?;
    Ok((h, cn))
}
