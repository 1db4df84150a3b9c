//! Linear maps and distances of `torch.nn.functional`: `linear`,
//! `bilinear`, `normalize`, `cosine_similarity`, `pairwise_distance`.

use ferrotorch_core::{Result, Tensor};

/// `x Wᵀ + b` (`weight` is `[out, in]`): [`Tensor::linear`].
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    input.linear(weight, bias)
}

/// `y_k = x1ᵀ W_k x2 + b_k` (`weight` is `[out, in1, in2]`).
pub fn bilinear(
    input1: &Tensor,
    input2: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    ferrotorch_core::ensure!(
        weight.dim() == 3
            && input1.shape().last() == Some(&weight.shape()[1])
            && input2.shape().last() == Some(&weight.shape()[2]),
        Runtime,
        "bilinear: input1 {:?}, input2 {:?} and weight {:?} do not match (weight must be [out, in1, in2])",
        input1.shape(),
        input2.shape(),
        weight.shape()
    );
    let y = ferrotorch_core::native::einsum(
        "...i,kij,...j->...k",
        &[input1.clone(), weight.clone(), input2.clone()],
    )?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}

/// `x / max(‖x‖_p, eps)` along `dim` (defaults p = 2, dim = 1, eps = 1e-12).
pub fn normalize(input: &Tensor, p: f64, dim: i64, eps: f64) -> Result<Tensor> {
    let n = input.norm(p, Some(&[dim]), true)?.clamp_min(eps)?;
    input.div(&n)
}

/// `x1·x2 / max(‖x1‖ ‖x2‖, eps)` along `dim` (defaults dim 1, eps 1e-8),
/// broadcasting the inputs.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: i64, eps: f64) -> Result<Tensor> {
    // PyTorch clamps each norm, then divides: (x1 / ‖x1‖) · (x2 / ‖x2‖)
    let n1 = x1.norm(2.0, Some(&[dim]), true)?.clamp_min(eps)?;
    let n2 = x2.norm(2.0, Some(&[dim]), true)?.clamp_min(eps)?;
    x1.div(&n1)?
        .mul(&x2.div(&n2)?)?
        .sum_dim(Some(&[dim]), false, None)
}

/// `‖x1 - x2 + eps‖_p` along the last dim (defaults p 2, eps 1e-6).
pub fn pairwise_distance(
    x1: &Tensor,
    x2: &Tensor,
    p: f64,
    eps: f64,
    keepdim: bool,
) -> Result<Tensor> {
    x1.sub(x2)?.add(eps)?.norm(p, Some(&[-1]), keepdim)
}
