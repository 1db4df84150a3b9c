//! The layer functions of `torch.nn.functional` that need more than a
//! native op: `rms_norm`, and `embedding` with `padding_idx`. (Convolution,
//! pooling, normalisation, `one_hot`, `pad`, `interpolate` and attention
//! are native `Tensor` methods, re-exported here under their PyTorch names.)

use ferrotorch_core::native::where_;
use ferrotorch_core::{ensure, DType, Result, Tensor};

/// `F.rms_norm(input, normalized_shape, weight=None, eps=None)`:
/// `x / sqrt(mean(x², trailing dims) + eps) · weight`; `eps: None` is the
/// dtype's machine epsilon.
pub fn rms_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    let k = normalized_shape.len();
    ensure!(
        k >= 1 && input.dim() >= k && input.shape()[input.dim() - k..] == *normalized_shape,
        Runtime,
        "rms_norm: Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size {:?}",
        normalized_shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", "),
        input.shape()
    );
    let eps = eps.unwrap_or(match input.dtype() {
        DType::F64 => f64::EPSILON,
        DType::F16 => 0.0009765625,
        DType::BF16 => 0.0078125,
        _ => f32::EPSILON as f64,
    });
    let dims: Vec<i64> = (-(k as i64)..0).collect();
    let ms = input.mul(input)?.mean_dim(Some(&dims), true, None)?;
    let y = input.mul(&ms.add(eps)?.rsqrt()?)?;
    match weight {
        Some(w) => y.mul(w),
        None => Ok(y),
    }
}

/// `F.embedding(input, weight, padding_idx=None)`: rows of `weight` picked
/// by `input`; positions equal to `padding_idx` send no gradient to the
/// weight.
pub fn embedding(input: &Tensor, weight: &Tensor, padding_idx: Option<i64>) -> Result<Tensor> {
    let out = weight.embedding(input)?;
    match padding_idx {
        Some(p) if out.requires_grad() => {
            let n = weight.shape()[0] as i64;
            let p = if p < 0 { p + n } else { p };
            let pad = input.eq(p)?.unsqueeze(-1)?;
            where_(&pad, out.detach(), &out)
        }
        _ => Ok(out),
    }
}
