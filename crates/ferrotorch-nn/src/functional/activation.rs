//! Every activation of `torch.nn.functional`, with PyTorch's formulas,
//! parameters and defaults: the core ops (those of activation rows,
//! Note [Activation rows]) and compositions of native ops.

use ferrotorch_core::native::where_;
use ferrotorch_core::{Result, Tensor};

/// `max(x, 0)`.
pub fn relu(input: &Tensor) -> Result<Tensor> {
    input.relu()
}

/// `min(max(x, 0), 6)`.
pub fn relu6(input: &Tensor) -> Result<Tensor> {
    input.relu6()
}

/// `x` for `x > 0`, `negative_slope · x` otherwise (default 0.01).
pub fn leaky_relu(input: &Tensor, negative_slope: f64) -> Result<Tensor> {
    input.leaky_relu(negative_slope)
}

/// `x` for `x > 0`, `alpha (eˣ - 1)` otherwise (default alpha 1).
pub fn elu(input: &Tensor, alpha: f64) -> Result<Tensor> {
    input.elu(alpha, 1.0, 1.0)
}

/// `scale · elu(x, alpha)` with the self-normalising constants.
pub fn selu(input: &Tensor) -> Result<Tensor> {
    input.selu()
}

/// `max(0, x) + min(0, alpha (e^(x/alpha) - 1))` (default alpha 1).
pub fn celu(input: &Tensor, alpha: f64) -> Result<Tensor> {
    input.celu(alpha)
}

/// Gaussian error linear unit; `approximate` is `"none"` or `"tanh"`.
pub fn gelu(input: &Tensor, approximate: &str) -> Result<Tensor> {
    input.gelu(approximate)
}

/// `x · sigmoid(x)`.
pub fn silu(input: &Tensor) -> Result<Tensor> {
    input.silu()
}

/// `x · tanh(softplus(x))`, with PyTorch's `mish_backward`.
pub fn mish(input: &Tensor) -> Result<Tensor> {
    input.mish()
}

/// `log(1 + e^(beta x)) / beta`, linear where `beta x > threshold`
/// (defaults 1 and 20), with PyTorch's `softplus_backward`.
pub fn softplus(input: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    input.softplus(beta, threshold)
}

/// `x / (1 + |x|)`.
pub fn softsign(input: &Tensor) -> Result<Tensor> {
    input.div(&input.abs()?.add(1.0)?)
}

/// `clamp(x, min_val, max_val)` (defaults -1, 1), the gradient 1
/// strictly inside and 0 at the bounds, as PyTorch's `hardtanh_backward`.
pub fn hardtanh(input: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    input.hardtanh(min_val, max_val)
}

/// `x · relu6(x + 3) / 6`, with PyTorch's `hardswish_backward`.
pub fn hardswish(input: &Tensor) -> Result<Tensor> {
    input.hardswish()
}

/// `relu6(x + 3) / 6`.
pub fn hardsigmoid(input: &Tensor) -> Result<Tensor> {
    input.hardsigmoid()
}

/// `1 / (1 + e⁻ˣ)`.
pub fn sigmoid(input: &Tensor) -> Result<Tensor> {
    input.sigmoid()
}

/// Hyperbolic tangent.
pub fn tanh(input: &Tensor) -> Result<Tensor> {
    input.tanh()
}

/// `log(sigmoid(x))` as `min(x, 0) - log1p(e^-|x|)` (stable for large
/// |x|), with PyTorch's `log_sigmoid_backward`.
pub fn logsigmoid(input: &Tensor) -> Result<Tensor> {
    input.log_sigmoid()
}

/// Gated linear unit: halves `a`, `b` of `dim`, `a · sigmoid(b)`.
pub fn glu(input: &Tensor, dim: i64) -> Result<Tensor> {
    ferrotorch_core::ensure!(
        input.dim() > 0,
        Runtime,
        "glu does not support scalars because halving size must be even"
    );
    let d = ferrotorch_core::tensor::layout::wrap_dim(dim, input.dim())?;
    let n = input.shape()[d];
    ferrotorch_core::ensure!(
        n.is_multiple_of(2),
        Runtime,
        "Halving dimension must be even, but dimension {d} is size {n}"
    );
    let a = input.narrow(d as i64, 0, n / 2)?;
    let b = input.narrow(d as i64, (n / 2) as i64, n / 2)?;
    a.mul(&b.sigmoid()?)
}

/// `x` for `x > 0`, `weight · x` otherwise (so at ±0 the input gradient
/// is `weight · g`, as PyTorch's); `weight` has one element or one per
/// channel (dim 1).
pub fn prelu(input: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let c = if input.dim() >= 2 {
        input.shape()[1]
    } else {
        1
    };
    ferrotorch_core::ensure!(
        weight.numel() == 1 || weight.numel() == c,
        Runtime,
        "prelu: mismatch of parameter numbers and input channel size. Found parameter numbers = {} and channel size = {c}.",
        weight.numel()
    );
    let w = if weight.numel() == 1 || input.dim() < 2 {
        weight.reshape(&[])?
    } else {
        let mut shape = vec![1i64; input.dim()];
        shape[1] = -1;
        weight.reshape(&shape)?
    };
    where_(&input.gt(0.0)?, input, &input.mul(&w)?)
}

/// `x` where `x > threshold`, else `value`.
pub fn threshold(input: &Tensor, threshold: f64, value: f64) -> Result<Tensor> {
    input.masked_fill(&input.le(threshold)?, value)
}

/// Softmax along `dim`.
pub fn softmax(input: &Tensor, dim: i64) -> Result<Tensor> {
    input.softmax(dim, None)
}

/// Log-softmax along `dim`.
pub fn log_softmax(input: &Tensor, dim: i64) -> Result<Tensor> {
    input.log_softmax(dim, None)
}

/// `softmax(-x)` along `dim`.
pub fn softmin(input: &Tensor, dim: i64) -> Result<Tensor> {
    input.neg()?.softmax(dim, None)
}
