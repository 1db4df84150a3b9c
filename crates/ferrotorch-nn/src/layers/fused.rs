//! Eval-mode `Conv2d → BatchNorm2d (→ + residual) (→ ReLU)` as one fused
//! convolution (Note [Fused eval convolutions] in ferrotorch-core), for
//! models whose forward has that shape (`models::resnet`).

use super::{BatchNorm2d, Conv2d, ReLU, Sequential};
use crate::{Forward, Module};
use ferrotorch_core::{Result, Tensor};

/// `relu(bn(conv(x)) + residual)` (the residual and the ReLU optional) in
/// one pass when that is exactly what the modules would compute: `bn` in
/// eval mode with running statistics, no bias on `conv`, no hooks on any
/// of the modules, nothing needing gradients, and a geometry the fused
/// kernel takes. Otherwise the modules run one by one (so hooks, training
/// mode and autograd behave as usual).
pub(crate) fn conv_bn(
    conv: &Conv2d,
    bn: &BatchNorm2d,
    x: &Tensor,
    residual: Option<&Tensor>,
    relu: Option<&ReLU>,
) -> Result<Tensor> {
    let hooked = |m: &dyn Module| m.module_state().is_some_and(|s| s.has_hooks());
    // while a mode records ops (the JIT's tracer), the layers run as their
    // standard ops so the graph names them: the fused kernel has no schema
    let plain = !hooked(conv)
        && !hooked(bn)
        && !relu.is_some_and(|r| hooked(r))
        && !ferrotorch_core::dispatch::keys::interposed();
    if conv.bias.is_none() && plain {
        if let Some((scale, shift)) = bn.eval_affine()? {
            let o = conv.options();
            let y = x.conv2d_affine_eval(
                &conv.weight.tensor(),
                o.stride.as_slice(),
                o.padding.as_slice(),
                o.dilation.as_slice(),
                o.groups,
                &scale,
                &shift,
                residual,
                relu.is_some(),
            )?;
            if let Some(y) = y {
                return Ok(y);
            }
        }
    }
    let mut y = bn.call(&conv.call(x)?)?;
    if let Some(r) = residual {
        y = y.add(r)?;
    }
    match relu {
        Some(r) => r.call(&y),
        None => Ok(y),
    }
}

/// A `Sequential(Conv2d, BatchNorm2d)` (a ResNet downsample) through
/// [`conv_bn`]; any other sequence, or one with hooks, runs as usual.
pub(crate) fn sequential_conv_bn(seq: &Sequential, x: &Tensor) -> Result<Tensor> {
    let hooked = seq.module_state().is_some_and(|s| s.has_hooks());
    let pair = (seq.len() == 2 && !hooked)
        .then(|| {
            let conv = seq.get(0)?.as_module().as_any().downcast_ref::<Conv2d>()?;
            let bn = seq
                .get(1)?
                .as_module()
                .as_any()
                .downcast_ref::<BatchNorm2d>()?;
            Some((conv, bn))
        })
        .flatten();
    match pair {
        Some((conv, bn)) => conv_bn(conv, bn, x, None, None),
        None => seq.call(x),
    }
}
