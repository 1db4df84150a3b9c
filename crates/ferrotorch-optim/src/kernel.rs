//! Fused elementwise optimizer updates: one pass over a parameter, its
//! gradient and its state, with PyTorch's per-element arithmetic (scalars
//! rounded to the parameter's dtype, PyTorch's operation order), instead of
//! one tensor op per term. See Note [Fused slice access] in the core.

use ferrotorch_core::tensor::access::{same_dense_layout, zip_slices_mut};
use ferrotorch_core::{bail, DType, Result, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The float types a kernel runs in.
pub(crate) trait Real:
    ferrotorch_core::dtype::Element
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A Python float scalar as PyTorch rounds it for this dtype.
    fn of(v: f64) -> Self;
    fn sqrt(self) -> Self;
    fn max(self, other: Self) -> Self;
    /// `torch.lerp(self, end, weight)` with PyTorch's two-sided formula.
    #[inline]
    fn lerp(self, end: Self, weight: f64) -> Self {
        let w = Self::of(weight);
        if weight.abs() < 0.5 {
            self + w * (end - self)
        } else {
            end - (end - self) * Self::of(1.0 - weight)
        }
    }
}

impl Real for f32 {
    #[inline]
    fn of(v: f64) -> f32 {
        v as f32
    }
    #[inline]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    #[inline]
    fn max(self, other: f32) -> f32 {
        if self.is_nan() || self > other {
            self
        } else {
            other
        }
    }
}

impl Real for f64 {
    #[inline]
    fn of(v: f64) -> f64 {
        v
    }
    #[inline]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    #[inline]
    fn max(self, other: f64) -> f64 {
        if self.is_nan() || self > other {
            self
        } else {
            other
        }
    }
}

/// An update over `[param, state...]` (written) from `grad` (read).
pub(crate) trait Kernel: Sync {
    fn run<T: Real>(&self, writes: &mut [&mut [T]], grad: &[T]);
}

ferrotorch_kernels::multiversion! {
    /// `kernel.run` compiled for each CPU level and chosen at run time
    /// (Note [Multiversioned loops] in ferrotorch-kernels), so the update
    /// loops use AVX-512 where the CPU has it: the SGD step of W8 (670k
    /// parameters) took 12 % of the step as baseline x86-64 code.
    ///
    /// # Safety
    /// None beyond `kernel.run`'s; `unsafe` only because of the dispatch.
    unsafe fn run_vectorised[T: Real, K: Kernel](kernel: &K, w: &mut [&mut [T]], g: &[T]) {
        kernel.run(w, g)
    }
}

/// Run `kernel` over disjoint chunks on the intra-op threads when the
/// parameter is large enough to pay for it.
fn run_chunked<T: Real>(kernel: &impl Kernel, w: &mut [&mut [T]], g: &[T]) {
    const GRAIN: usize = 1 << 14;
    let n = g.len();
    if n < 2 * GRAIN || ferrotorch_kernels::parallel::get_num_threads() < 2 {
        // SAFETY: run_vectorised only dispatches on the CPU's features.
        return unsafe { run_vectorised(kernel, w, g) };
    }
    let ptrs: Vec<usize> = w.iter_mut().map(|s| s.as_mut_ptr() as usize).collect();
    ferrotorch_kernels::parallel::parallel_for(n, GRAIN, |range| {
        // SAFETY: every slice holds `n` elements and parallel_for hands out
        // disjoint ranges within 0..n, so the sub-slices of different tasks
        // never overlap; the caller's exclusive borrow of `w` outlives this call.
        let mut subs: Vec<&mut [T]> = ptrs
            .iter()
            .map(|&p| unsafe {
                std::slice::from_raw_parts_mut((p as *mut T).add(range.start), range.len())
            })
            .collect();
        // SAFETY: as above.
        unsafe { run_vectorised(kernel, &mut subs, &g[range]) };
    });
}

/// Run `kernel` in the parameter's dtype; f16/bf16 go through float32
/// copies (PyTorch's CPU kernels compute halves in float too).
///
/// # Note [Optimizer layouts]
/// The update is elementwise, so it runs over raw memory whenever the
/// parameter, its state and the gradient share one dense layout (the usual
/// case: `.grad` follows Note [Gradient layout contract] and state is made
/// with `zeros_like`, which keeps the parameter's strides). Any other mix
/// (a `.grad` set by hand from a transpose, state loaded contiguous for a
/// transposed parameter, a parameter that is a strided view) is accepted
/// too: the update runs on contiguous copies, which are written back.
pub(crate) fn fused(
    op: &str,
    writes: &[&Tensor],
    grad: &Tensor,
    kernel: &impl Kernel,
) -> Result<()> {
    let all: Vec<&Tensor> = writes.iter().copied().chain([grad]).collect();
    if !same_dense_layout(&all) {
        let copies: Vec<Tensor> = writes
            .iter()
            .map(|t| t.contiguous())
            .collect::<Result<_>>()?;
        let g = grad.contiguous()?;
        let refs: Vec<&Tensor> = copies.iter().collect();
        fused_alike(op, &refs, &g, kernel)?;
        for (dst, src) in writes.iter().zip(&copies) {
            if !dst.storage().is_same(src.storage()) {
                dst.copy_(src)?;
            }
        }
        return Ok(());
    }
    fused_alike(op, writes, grad, kernel)
}

/// [`fused`] over tensors laid out alike (or of mismatched sizes, which
/// `zip_slices_mut` reports).
fn fused_alike(op: &str, writes: &[&Tensor], grad: &Tensor, kernel: &impl Kernel) -> Result<()> {
    match writes[0].dtype() {
        DType::F32 => {
            zip_slices_mut::<f32>(op, writes, &[grad], |w, r| run_chunked(kernel, w, r[0]))
        }
        DType::F64 => {
            zip_slices_mut::<f64>(op, writes, &[grad], |w, r| run_chunked(kernel, w, r[0]))
        }
        DType::F16 | DType::BF16 => {
            // to_dtype from a half type always makes a fresh float32 tensor.
            let wide: Vec<Tensor> = writes
                .iter()
                .map(|t| t.to_dtype(DType::F32)?.contiguous())
                .collect::<Result<_>>()?;
            let g = grad.to_dtype(DType::F32)?.contiguous()?;
            let refs: Vec<&Tensor> = wide.iter().collect();
            zip_slices_mut::<f32>(op, &refs, &[&g], |w, r| run_chunked(kernel, w, r[0]))?;
            for (dst, src) in writes.iter().zip(&wide) {
                dst.copy_(src)?;
            }
            Ok(())
        }
        d => bail!(
            Runtime,
            "{op}: parameters must be floating point, but got {}",
            d.name_title()
        ),
    }
}

/// A zero state tensor shaped, typed and laid out like `param`
/// (Note [Optimizer layouts]).
pub(crate) fn zeros_like(param: &Tensor) -> Result<Tensor> {
    param.zeros_like()
}
