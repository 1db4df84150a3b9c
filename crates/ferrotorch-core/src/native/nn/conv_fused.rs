//! Eval-mode convolution blocks in one pass: `conv2d`, then a per-channel
//! affine map (a batch norm with running statistics, folded), then an
//! optional residual add and ReLU, applied by the direct kernel as it
//! stores each output (`ferrotorch_kernels::conv::Epilogue`).
//!
//! # Note [Fused eval convolutions]
//! A ResNet block in eval mode is conv → batch norm → ReLU and conv →
//! batch norm → + identity → ReLU: four elementwise passes over every
//! activation besides the convolutions, about a tenth of ResNet-18's time
//! at batch 8. The fused form computes each output as
//! `relu(conv·scale[c] + shift[c] + residual)`, the same arithmetic in the
//! same order as the separate ops (eval batch norm is that affine map,
//! `batch_norm` computes it the same way), so the values are identical.
//! It runs only where nothing needs gradients and the direct f32 kernel
//! applies; elsewhere [`Tensor::conv2d_affine_eval`] returns `None` and
//! the caller runs the ops one by one. `models::resnet` uses it in eval.

use crate::error::Result;
use crate::tensor::Tensor;
use crate::DType;

/// The epilogue of a fused convolution, per output channel.
pub(super) struct Fused<'a> {
    pub(super) scale: &'a [f32],
    pub(super) shift: &'a [f32],
    /// Contiguous f32, shaped like the output.
    pub(super) residual: Option<Tensor>,
    pub(super) relu: bool,
}

crate::ops! {
    register = register_fused;
    /// The op `_conv2d_affine` (what the JIT's convolution fusion pass
    /// emits for eval `conv2d → batch_norm (→ + residual) (→ relu)`):
    /// [`Tensor::conv2d_affine_eval`] where the fused kernel applies, else
    /// the same computation op by op. `scale` and `shift` are 1-D, one
    /// value per output channel.
    #[allow(clippy::too_many_arguments)]
    #[op = "_conv2d_affine(Tensor input, Tensor weight, Tensor scale, Tensor shift, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1, Tensor? residual=None, bool relu=False) -> Tensor"]
    pub fn conv2d_affine(
        &self,
        weight: &Tensor,
        scale: &Tensor,
        shift: &Tensor,
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        groups: usize,
        residual: Option<&Tensor>,
        relu: bool,
    ) -> Result<Tensor> {
        let cout = weight.shape().first().copied().unwrap_or(0);
        crate::ensure!(
            scale.shape() == [cout] && shift.shape() == [cout],
            Runtime,
            "_conv2d_affine: scale and shift must have shape [{cout}], got {:?} and {:?}",
            scale.shape(),
            shift.shape()
        );
        let (s, b) = (
            scale.to_dtype(DType::F32)?.to_vec::<f32>()?,
            shift.to_dtype(DType::F32)?.to_vec::<f32>()?,
        );
        if let Some(y) = self.conv2d_affine_eval(
            weight, stride, padding, dilation, groups, &s, &b, residual, relu,
        )? {
            return Ok(y);
        }
        let c = [1, cout as i64, 1, 1];
        let mut y = self
            .conv2d(weight, None, stride, padding, dilation, groups)?
            .mul(&scale.reshape(&c)?)?
            .add(&shift.reshape(&c)?)?;
        if let Some(r) = residual {
            y = y.add(r)?;
        }
        if relu {
            y = y.relu()?;
        }
        Ok(y)
    }

    /// `relu?(conv2d(self, weight)·scale[c] + shift[c] + residual?)` in one
    /// pass (Note [Fused eval convolutions]); `Ok(None)` where the fused
    /// kernel does not apply (an input needs gradients, a dtype other than
    /// f32, a geometry the direct kernel declines), and the caller should
    /// run `conv2d`, the affine map, `add` and `relu` instead.
    ///
    /// `scale` and `shift` hold one value per output channel; `residual`
    /// must have the output's shape. Argument errors are reported as
    /// `conv2d` reports them.
    #[allow(clippy::too_many_arguments)]
    pub fn conv2d_affine_eval(
        &self,
        weight: &Tensor,
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        groups: usize,
        scale: &[f32],
        shift: &[f32],
        residual: Option<&Tensor>,
        relu: bool,
    ) -> Result<Option<Tensor>> {
        super::conv::check_conv("conv2d", self, weight, groups, 2)?;
        let o = weight.shape()[0];
        crate::ensure!(
            scale.len() == o && shift.len() == o,
            Runtime,
            "conv2d_affine_eval: expected {o} scales and shifts, got {} and {}",
            scale.len(),
            shift.len()
        );
        let mut ins = vec![self, weight];
        ins.extend(residual);
        if self.dim() != 4
            || crate::autograd::needs_grad(&ins)
            || ins.iter().any(|t| t.dtype() != DType::F32)
        {
            return Ok(None);
        }
        let fused = Fused {
            scale,
            shift,
            residual: residual.map(Tensor::contiguous).transpose()?,
            relu,
        };
        self.conv2d_impl(
            weight,
            None,
            stride,
            padding,
            dilation,
            groups,
            Some(&fused),
        )
    }
}
