//! Dropout and its alpha and feature (channel-wise) variants, following
//! PyTorch's `_dropout_impl` step for step, so a seeded run draws the same
//! masks as PyTorch.

use ferrotorch_core::native::random::Generator;
use ferrotorch_core::{ensure, Result, Tensor};

/// `F.dropout(input, p=0.5, training=True)`: zero elements with
/// probability `p`, scale the rest by `1/(1-p)`.
pub fn dropout(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    input.dropout(p, training, None)
}

/// `F.alpha_dropout(input, p=0.5, training=False)`: dropout that keeps
/// SELU's zero mean and unit variance.
pub fn alpha_dropout(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    dropout_impl(input, p, training, false, true, "alpha_dropout")
}

/// `F.feature_alpha_dropout(input, p=0.5, training=False)`: alpha dropout
/// of whole channels.
pub fn feature_alpha_dropout(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    dropout_impl(input, p, training, true, true, "feature_alpha_dropout")
}

/// `F.dropout1d(input, p=0.5, training=True)`: zero whole channels of a
/// `(N, C, L)` or `(C, L)` input.
pub fn dropout1d(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    channel_dropout(input, p, training, 1, "dropout1d")
}

/// `F.dropout2d(input, p=0.5, training=True)`: zero whole channels of a
/// `(N, C, H, W)` or `(C, H, W)` input.
pub fn dropout2d(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    channel_dropout(input, p, training, 2, "dropout2d")
}

fn channel_dropout(
    input: &Tensor,
    p: f64,
    training: bool,
    spatial: usize,
    op: &str,
) -> Result<Tensor> {
    let d = input.dim();
    ensure!(
        d == spatial + 1 || d == spatial + 2,
        Runtime,
        "{op}: Expected {}D or {}D input, but received a {d}D input. Note that {op} exists to provide channel-wise dropout on inputs with {spatial} spatial dimension{}, a channel dimension, and an optional batch dimension (i.e. {}D or {}D inputs).",
        spatial + 1,
        spatial + 2,
        if spatial == 1 { "" } else { "s" },
        spatial + 1,
        spatial + 2
    );
    if d == spatial + 1 {
        let out = dropout_impl(&input.unsqueeze(0)?, p, training, true, false, op)?;
        out.squeeze_dims(&[0])
    } else {
        dropout_impl(input, p, training, true, false, op)
    }
}

fn dropout_impl(
    input: &Tensor,
    p: f64,
    train: bool,
    feature: bool,
    alpha: bool,
    op: &str,
) -> Result<Tensor> {
    ensure!(
        (0.0..=1.0).contains(&p),
        Value,
        "dropout probability has to be between 0 and 1, but got {p}"
    );
    if p == 0.0 || !train || input.numel() == 0 {
        return Ok(input.clone());
    }
    if p == 1.0 {
        return input.mul(0.0);
    }
    let noise_shape: Vec<usize> = if feature {
        ensure!(
            input.dim() >= 2,
            Runtime,
            "{op}: Feature dropout requires at least 2 dimensions in the input"
        );
        let mut s = vec![1; input.dim()];
        s[..2].copy_from_slice(&input.shape()[..2]);
        s
    } else {
        input.shape().to_vec()
    };
    let noise = Tensor::empty(&noise_shape, input.dtype())?;
    noise.bernoulli_(1.0 - p, None::<&Generator>)?;
    if alpha {
        const ALPHA: f64 = 1.7580993408473766;
        let a = 1.0 / ((ALPHA * ALPHA * p + 1.0) * (1.0 - p)).sqrt();
        let b = noise.add(-1.0)?.mul(ALPHA * a)?.add(ALPHA * a * p)?;
        noise.mul_(a)?;
        input.mul(&noise)?.add(&b)
    } else {
        noise.div_(1.0 - p)?;
        input.mul(&noise)
    }
}
