//! In-place ops under autograd.
//!
//! # Note [In-place autograd]
//! `a.op_(b)` on a tensor that takes part in the graph is recorded as if it
//! were `a = op(a_old, b)`: `a_old` is a recorded clone of `a` taken first
//! (only when the formula needs the old value; else an alias that keeps
//! `a`'s old history), the out-of-place op builds the node, its values are
//! written into `a`, and `a` takes the node as its new grad_fn. The write
//! bumps the version counter, so any node that saved `a` before refuses to
//! run (Note [Version counter]).
//!
//! When `a` is a view of a base that takes part in the graph, the base's
//! history is rewritten too (PyTorch's `CopySlices`): the base becomes
//! "old base with the view's region replaced by the op's result", and the
//! view is re-derived from the new base. These two nodes compute their
//! gradients through a buffer laid out like the storage, without recording,
//! so double backward through an in-place op on a view is not supported.
//! Other views of the same base taken before the in-place op notice the
//! storage version moved past the one their grad_fn was made at, and are
//! re-derived from the base's new history when next used
//! ([`rederive_view`]); a view taken before its base entered the graph
//! joins it the same way once the memory is written (`Tensor::requires_grad`).
//! Views whose dtype differs from their base's (`view_as_real`,
//! `view_as_complex`) are handled in the base's element units (Note [Views
//! of another dtype]).

use crate::autograd::meta::set_grad_fn;
use crate::autograd::{mode, record1, Ctx};
use crate::error::Result;
use crate::tensor::Tensor;

/// Whether an in-place op on `this` with these other inputs must be
/// recorded; errors for leaves that require grad, as PyTorch, and for
/// read-only memory (Note [Read-only storage]).
pub(crate) fn check(op: &str, this: &Tensor, others: &[Tensor]) -> Result<bool> {
    this.storage().check_writable(op)?;
    if !mode::is_grad_enabled() {
        return Ok(false);
    }
    if this.requires_grad() && this.is_leaf() {
        crate::bail!(
            Runtime,
            "{op}: a leaf Variable that requires grad is being used in an in-place operation."
        );
    }
    if let Some(base) = this.view_base() {
        if base.requires_grad() && base.is_leaf() {
            crate::bail!(
                Runtime,
                "{op}: a view of a leaf Variable that requires grad is being used in an in-place operation."
            );
        }
        if base.requires_grad() {
            return Ok(true);
        }
    }
    Ok(this.requires_grad() || others.iter().any(|t| t.requires_grad()))
}

/// An alias of `t` carrying its current history (grad_fn or leaf edge), so
/// that history survives `t` being given a new grad_fn.
pub(crate) fn snapshot(t: &Tensor) -> Tensor {
    let s = t.detach();
    if let Some(f) = t.grad_fn() {
        set_grad_fn(&s, f, t.output_nr());
    }
    s
}

/// Run the recorded form of an in-place op: `compute(old)` builds the
/// result out of place (recording its node), which is written into `this`.
pub(crate) fn run(
    this: &Tensor,
    needs_old_value: bool,
    compute: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    let old = if needs_old_value {
        this.deep_clone()?
    } else {
        snapshot(this)
    };
    let mut res = compute(&old)?;
    if res.grad_fn().is_none() {
        // Not differentiable (a comparison, a fill): the old value's
        // history ends here with a zero gradient.
        res = super::indexing::fill(&old, res)?;
    }
    crate::ensure!(
        res.shape() == this.shape(),
        Runtime,
        "output with shape {:?} doesn't match the broadcast shape {:?}",
        this.shape(),
        res.shape()
    );
    {
        let _g = mode::no_grad();
        crate::tensor::data::copy_cast(&res, this);
        this.storage().bump_version();
    }
    rebase(this, &res)
}

/// Give `this` the history of `res` (same values), rewriting its base's
/// history when `this` is a view.
fn rebase(this: &Tensor, res: &Tensor) -> Result<()> {
    let Some(f) = res.grad_fn() else {
        return Ok(());
    };
    let Some(base) = this.view_base() else {
        set_grad_fn(this, f, res.output_nr());
        return Ok(());
    };
    // CopySlices: new base = old base with the region replaced by `res`.
    let old_base = snapshot(&base);
    let (bl, vl) = (base.layout().clone(), this.layout().clone());
    let elems = base.storage().nbytes() / base.element_size();
    let vdt = this.dtype();
    check_view_dtypes(&base, this)?;
    let new_base = record1(
        "CopySlices",
        &[&old_base, res],
        base.detach(),
        smallvec::smallvec![],
        move |c: &Ctx| {
            let _g = mode::no_grad();
            let g = c.grad();
            let buf = Tensor::zeros(&[elems], g.dtype())?;
            let gb = buf.as_strided(bl.sizes(), bl.strides(), Some(bl.offset()))?;
            gb.copy_(g)?;
            let region = region_of(&buf, &vl, vdt)?;
            let g_res = region.deep_clone()?;
            region.fill_(0.0)?;
            Ok(smallvec::smallvec![Some(gb.contiguous()?), Some(g_res)])
        },
    )?;
    let nb = new_base.grad_fn().expect("recorded");
    set_grad_fn(&base, nb, 0);
    // The view, re-derived from the new base.
    rederive_view(this, &base)
}

/// Give the view `this` a fresh grad_fn taking it from `base`'s current
/// history (an `AsStridedBackward0` through a buffer laid out like the
/// storage): after an in-place op on the view, and when a view taken
/// before an in-place op on its base is used again (PyTorch regenerates
/// such stale grad_fns the same way). A conjugated view is the conjugate
/// of that region (Note [The conjugate bit]): its gradient is conjugated
/// on the way back.
pub(crate) fn rederive_view(this: &Tensor, base: &Tensor) -> Result<()> {
    let (bl, vl) = (base.layout().clone(), this.layout().clone());
    let elems = base.storage().nbytes() / base.element_size();
    let conj = this.is_conj();
    let (bdt, vdt) = (base.dtype(), this.dtype());
    check_view_dtypes(base, this)?;
    let view = record1(
        if conj {
            "ConjAsStridedBackward0"
        } else {
            "AsStridedBackward0"
        },
        &[base],
        this.detach_raw(),
        smallvec::smallvec![],
        move |c: &Ctx| {
            let _g = mode::no_grad();
            let g = if conj {
                c.grad().conj_physical()?
            } else {
                c.grad().clone()
            };
            let buf = Tensor::zeros(&[elems], bdt)?;
            region_of(&buf, &vl, vdt)?.copy_(&g)?;
            Ok(smallvec::smallvec![Some(
                buf.as_strided(bl.sizes(), bl.strides(), Some(bl.offset()))?
                    .contiguous()?,
            )])
        },
    )?;
    if let Some(f) = view.grad_fn() {
        set_grad_fn(this, f, 0);
    }
    Ok(())
}

/// # Note [Views of another dtype]
/// `view_as_real` and `view_as_complex` make views whose layout counts
/// elements of another dtype than their base's (a real view of a complex
/// base counts reals, two per complex element; a complex view of a real
/// base counts pairs). The buffers that route gradients between a base and
/// its views are laid out like the storage in the base's dtype, so the
/// view's region is taken in the view's units: through `view_as_real` of
/// the buffer for a real view of a complex base, and as `view_as_complex`
/// of the `(re, im)`-pair region for a complex view of a real base.
fn region_of(
    buf: &Tensor,
    vl: &crate::tensor::layout::Layout,
    vdt: crate::DType,
) -> Result<Tensor> {
    let bdt = buf.dtype();
    if bdt == vdt {
        return buf.as_strided(vl.sizes(), vl.strides(), Some(vl.offset()));
    }
    if bdt.is_complex() {
        // a real view: the buffer's reals, in storage order
        let n = buf.numel() * 2;
        let reals = buf.view_as_real()?.reshape(&[n as i64])?;
        return reals.as_strided(vl.sizes(), vl.strides(), Some(vl.offset()));
    }
    // a complex view of a real buffer: its (re, im) pairs
    let mut sizes = vl.sizes().to_vec();
    sizes.push(2);
    let mut strides: Vec<usize> = vl.strides().iter().map(|&s| s * 2).collect();
    strides.push(1);
    buf.as_strided(&sizes, &strides, Some(vl.offset() * 2))?
        .view_as_complex()
}

/// The base/view dtype pairs [`region_of`] handles (Note [Views of another
/// dtype]); other reinterpretations (`view(dtype)`) are not differentiable.
fn check_view_dtypes(base: &Tensor, view: &Tensor) -> Result<()> {
    let (b, v) = (base.dtype(), view.dtype());
    crate::ensure!(
        b == v || (b.is_complex() && b.to_real() == v) || (v.is_complex() && v.to_real() == b),
        Runtime,
        "an in-place operation on a view of dtype {v} of a base of dtype {b} cannot be differentiated"
    );
    Ok(())
}
