//! `_native_multi_head_attention`: the fused multi-head attention
//! `nn.MultiheadAttention` calls in inference (batch-first inputs,
//! packed input projection), as tracing records it; made of `linear`,
//! attention and the output projection.

use crate::dispatch::{IValue, Registry};
use crate::error::Result;
use crate::tensor::Tensor;
use crate::DType;

/// `(out, weights)`: `weights` is empty unless `need_weights`, averaged
/// over heads when `average`. A bool `mask` is true where attention is
/// not allowed (`mask_type` 1: a `(batch, source)` key padding mask),
/// a float one is added to the scores.
#[allow(clippy::too_many_arguments)]
fn native_mha(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    embed: i64,
    heads: i64,
    w: &Tensor,
    b: Option<&Tensor>,
    pw: &Tensor,
    pb: Option<&Tensor>,
    mask: Option<Tensor>,
    need_weights: bool,
    average: bool,
    mask_type: Option<i64>,
) -> Result<(Tensor, Tensor)> {
    crate::ensure!(
        q.dim() == 3 && k.dim() == 3 && v.dim() == 3,
        Runtime,
        "_native_multi_head_attention: expected 3-D (batch, length, embed) query, key and value, got {:?}, {:?}, {:?}",
        q.shape(),
        k.shape(),
        v.shape()
    );
    crate::ensure!(
        heads > 0 && embed > 0 && embed % heads == 0 && q.shape()[2] as i64 == embed,
        Runtime,
        "_native_multi_head_attention: embed_dim {embed} with {heads} heads for a query of shape {:?}",
        q.shape()
    );
    let e = embed as usize;
    let h = heads as usize;
    let hd = e / h;
    let part = |x: &Tensor, i: usize| -> Result<Tensor> {
        let wi = w.narrow(0, (i * e) as i64, e)?;
        let bi = b.map(|b| b.narrow(0, (i * e) as i64, e)).transpose()?;
        let y = x.linear(&wi, bi.as_ref())?;
        let (n, l) = (x.shape()[0] as i64, x.shape()[1] as i64);
        y.reshape(&[n, l, heads, hd as i64])?.transpose(1, 2)
    };
    let (qh, kh, vh) = (part(q, 0)?, part(k, 1)?, part(v, 2)?);
    // the mask as attention scores take it: (batch or 1, 1, L or 1, S)
    let mask = match mask {
        None => None,
        Some(m) => {
            let m = match (m.dim(), mask_type) {
                (2, Some(1)) => m.unsqueeze(1)?.unsqueeze(1)?,
                (2, _) => m.unsqueeze(0)?.unsqueeze(0)?,
                (3, _) => m.unsqueeze(1)?,
                _ => m,
            };
            Some(if m.dtype() == DType::Bool {
                Tensor::zeros(m.shape(), q.dtype())?.masked_fill(&m, f64::NEG_INFINITY)?
            } else {
                m
            })
        }
    };
    let scale = 1.0 / (hd as f64).sqrt();
    let scores = qh.matmul(&kh.transpose(-2, -1)?)?.mul(scale)?;
    let scores = match &mask {
        Some(m) => scores.add(m)?,
        None => scores,
    };
    let att = scores.softmax(-1, None)?;
    let out = att.matmul(&vh)?.transpose(1, 2)?;
    let (n, l) = (q.shape()[0] as i64, q.shape()[1] as i64);
    let out = out.reshape(&[n, l, embed])?.linear(pw, pb)?;
    let weights = if !need_weights {
        Tensor::empty(&[0], q.dtype())?
    } else if average {
        att.mean_dim(Some(&[1]), false, None)?
    } else {
        att
    };
    Ok((out, weights))
}

pub(crate) fn register(r: &mut Registry) {
    // thirteen arguments, past the typed binder's ten: read by position
    r.add(
        "_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)",
        |a| {
            let (out, w) = native_mha(
                &a.tensor(0)?,
                &a.tensor(1)?,
                &a.tensor(2)?,
                a.int(3)?,
                a.int(4)?,
                &a.tensor(5)?,
                Some(&a.tensor(6)?),
                &a.tensor(7)?,
                Some(&a.tensor(8)?),
                a.opt_tensor(9)?,
                a.bool(10)?,
                a.bool(11)?,
                a.opt_int(12)?,
            )?;
            Ok(IValue::Tuple(vec![out.into(), w.into()]))
        },
    )
    .expect("a valid schema");
}
