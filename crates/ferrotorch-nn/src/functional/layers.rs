//! The layer functions of `torch.nn.functional`: `rms_norm` and
//! `embedding` (with `padding_idx`) composed here, and convolution,
//! pooling, normalisation, `one_hot`, `pad`, `interpolate` and attention
//! under their PyTorch names and argument order, calling the native ops.

use ferrotorch_core::native::where_;
use ferrotorch_core::{ensure, Result, Tensor};

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
    let eps = eps.or(input.dtype().eps()).unwrap_or(f32::EPSILON as f64);
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

/// `F.conv1d(input, weight, bias, stride, padding, dilation, groups)`.
#[allow(clippy::too_many_arguments)]
pub fn conv1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
) -> Result<Tensor> {
    input.conv1d(weight, bias, stride, padding, dilation, groups)
}

/// `F.conv2d(input, weight, bias, stride, padding, dilation, groups)`.
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    groups: usize,
) -> Result<Tensor> {
    input.conv2d(weight, bias, stride, padding, dilation, groups)
}

/// `F.conv_transpose2d(input, weight, bias, stride, padding,
/// output_padding, groups, dilation)`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[usize],
    padding: &[usize],
    output_padding: &[usize],
    groups: usize,
    dilation: &[usize],
) -> Result<Tensor> {
    input.conv_transpose2d(
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// `F.max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,
/// ceil_mode=False, return_indices=True)`: values and indices.
pub fn max_pool1d_with_indices(
    input: &Tensor,
    kernel_size: usize,
    stride: Option<usize>,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    input.max_pool1d_with_indices(kernel_size, stride, padding, dilation, ceil_mode)
}

/// `F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)`;
/// pass `stride = kernel_size` for PyTorch's default.
pub fn max_pool2d(
    input: &Tensor,
    kernel_size: &[usize],
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    ceil_mode: bool,
) -> Result<Tensor> {
    input.max_pool2d(kernel_size, stride, padding, dilation, ceil_mode)
}

/// `F.max_pool2d(..., return_indices=True)`: values and flat indices.
pub fn max_pool2d_with_indices(
    input: &Tensor,
    kernel_size: &[usize],
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    input.max_pool2d_with_indices(kernel_size, stride, padding, dilation, ceil_mode)
}

/// `F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)`.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    input: &Tensor,
    kernel_size: &[usize],
    stride: &[usize],
    padding: &[usize],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Tensor> {
    input.avg_pool2d(
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
}

/// `F.adaptive_avg_pool2d(input, output_size)`.
pub fn adaptive_avg_pool2d(input: &Tensor, output_size: &[usize]) -> Result<Tensor> {
    input.adaptive_avg_pool2d(output_size)
}

/// `F.adaptive_max_pool2d(input, output_size, return_indices=True)`.
pub fn adaptive_max_pool2d(input: &Tensor, output_size: &[usize]) -> Result<(Tensor, Tensor)> {
    input.adaptive_max_pool2d(output_size)
}

/// `F.batch_norm(input, running_mean, running_var, weight, bias, training,
/// momentum, eps)`; running statistics are updated in place in training.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    input.batch_norm(
        running_mean,
        running_var,
        weight,
        bias,
        training,
        momentum,
        eps,
    )
}

/// `F.layer_norm(input, normalized_shape, weight, bias, eps)`.
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    input.layer_norm(normalized_shape, weight, bias, eps)
}

/// `F.group_norm(input, num_groups, weight, bias, eps)`.
pub fn group_norm(
    input: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    input.group_norm(num_groups, weight, bias, eps)
}

/// `F.one_hot(tensor, num_classes=-1)`.
pub fn one_hot(tensor: &Tensor, num_classes: i64) -> Result<Tensor> {
    tensor.one_hot(num_classes)
}

/// `F.pad(input, pad, mode='constant', value=0)`.
pub fn pad(input: &Tensor, pad: &[i64], mode: &str, value: f64) -> Result<Tensor> {
    input.pad(pad, mode, value)
}

/// `F.interpolate(input, size, mode, align_corners)`.
pub fn interpolate(
    input: &Tensor,
    size: &[usize],
    mode: &str,
    align_corners: bool,
) -> Result<Tensor> {
    input.interpolate(size, mode, align_corners)
}

/// `F.scaled_dot_product_attention(query, key, value, attn_mask,
/// dropout_p, is_causal, scale)`.
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    query.scaled_dot_product_attention(key, value, attn_mask, dropout_p, is_causal, scale)
}
