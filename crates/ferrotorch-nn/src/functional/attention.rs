//! `F.multi_head_attention_forward`: PyTorch's multi-head attention with
//! packed input projections, attention/key-padding masks and averaged
//! attention weights.

use ferrotorch_core::{ensure, DType, Result, Tensor};

/// The projections and options of one multi-head attention call.
pub struct MhaParams<'a> {
    /// Number of heads.
    pub num_heads: usize,
    /// `[3E, E]` packed q/k/v projection.
    pub in_proj_weight: &'a Tensor,
    /// `[3E]` packed bias.
    pub in_proj_bias: Option<&'a Tensor>,
    /// `[E, E]` output projection.
    pub out_proj_weight: &'a Tensor,
    /// `[E]` output bias.
    pub out_proj_bias: Option<&'a Tensor>,
    /// Dropout on the attention weights (training only).
    pub dropout_p: f64,
    /// Whether dropout is active.
    pub training: bool,
}

/// A bool mask (true = masked out) as an additive float mask.
fn additive(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    if mask.dtype() == DType::Bool {
        Tensor::zeros(mask.shape(), dtype)?.masked_fill(mask, f64::NEG_INFINITY)
    } else {
        mask.to_dtype(dtype)
    }
}

/// `F.multi_head_attention_forward` for sequence-first inputs
/// (`query [L, N, E]`, `key`/`value [S, N, E]`): returns the output
/// `[L, N, E]` and, with `need_weights`, the attention weights `[N, L, S]`
/// (averaged over heads) or `[N, H, L, S]`. In `attn_mask` (`[L, S]` or
/// `[N·H, L, S]`) and `key_padding_mask` (`[N, S]`), a bool `true` masks a
/// position out; float masks are added.
#[allow(clippy::too_many_arguments)]
pub fn multi_head_attention_forward(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    p: &MhaParams<'_>,
    key_padding_mask: Option<&Tensor>,
    need_weights: bool,
    attn_mask: Option<&Tensor>,
    average_attn_weights: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    ensure!(
        query.dim() == 3 && key.dim() == 3 && value.dim() == 3,
        Runtime,
        "multi_head_attention_forward: expected 3-D (seq, batch, embed) query, key and value, got {:?}, {:?}, {:?}",
        query.shape(),
        key.shape(),
        value.shape()
    );
    let (l, n, e) = (query.shape()[0], query.shape()[1], query.shape()[2]);
    let s = key.shape()[0];
    let h = p.num_heads;
    ensure!(
        h > 0 && e % h == 0,
        Runtime,
        "embed_dim {e} not divisible by num_heads {h}"
    );
    ensure!(
        key.shape() == value.shape() && key.shape()[1] == n && key.shape()[2] == e,
        Runtime,
        "multi_head_attention_forward: key {:?} and value {:?} must be [S, {n}, {e}]",
        key.shape(),
        value.shape()
    );
    let hd = e / h;
    let w = p.in_proj_weight.chunk(3, 0)?;
    let b: Vec<Option<Tensor>> = match p.in_proj_bias {
        Some(b) => b.chunk(3, 0)?.into_iter().map(Some).collect(),
        None => vec![None, None, None],
    };
    let proj = |x: &Tensor, i: usize| super::linear(x, &w[i], b[i].as_ref());
    // [T, N, E] -> [N·H, T, hd]
    let heads = |x: Tensor, t: usize| -> Result<Tensor> {
        x.reshape(&[t as i64, (n * h) as i64, hd as i64])?
            .transpose(0, 1)
    };
    let q = heads(proj(query, 0)?, l)?;
    let k = heads(proj(key, 1)?, s)?;
    let v = heads(proj(value, 2)?, s)?;
    let mut mask: Option<Tensor> = match attn_mask {
        Some(m) => {
            ensure!(
                m.shape() == [l, s] || m.shape() == [n * h, l, s],
                Runtime,
                "The shape of the 2D attn_mask is {:?}, but should be ({l}, {s}) (or ({}, {l}, {s}) for 3D).",
                m.shape(),
                n * h
            );
            Some(additive(m, q.dtype())?)
        }
        None => None,
    };
    if let Some(kpm) = key_padding_mask {
        ensure!(
            kpm.shape() == [n, s],
            Runtime,
            "expecting key_padding_mask shape of ({n}, {s}), but got {:?}",
            kpm.shape()
        );
        let kpm = additive(kpm, q.dtype())?
            .reshape(&[n as i64, 1, 1, s as i64])?
            .expand(&[n as i64, h as i64, 1, s as i64])?
            .reshape(&[(n * h) as i64, 1, s as i64])?;
        mask = Some(match mask {
            Some(m) => m.add(&kpm)?,
            None => kpm,
        });
    }
    let q = q.mul((1.0 / hd as f64).sqrt())?;
    let mut scores = q.bmm(&k.transpose(-2, -1)?)?;
    if let Some(m) = &mask {
        scores = scores.add(m)?;
    }
    let mut weights = scores.softmax(-1, None)?;
    if p.dropout_p > 0.0 {
        weights = super::dropout(&weights, p.dropout_p, p.training)?;
    }
    let out = weights
        .bmm(&v)?
        .transpose(0, 1)?
        .contiguous()?
        .reshape(&[(l * n) as i64, e as i64])?;
    let out = super::linear(&out, p.out_proj_weight, p.out_proj_bias)?
        .reshape(&[l as i64, n as i64, e as i64])?;
    let weights = if need_weights {
        let w = weights.reshape(&[n as i64, h as i64, l as i64, s as i64])?;
        Some(if average_attn_weights {
            w.mean_dim(Some(&[1]), false, None)?
        } else {
            w
        })
    } else {
        None
    };
    Ok((out, weights))
}
