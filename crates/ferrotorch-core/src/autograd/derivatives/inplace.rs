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
//! ([`rederive_view`]).

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
            let region = buf.as_strided(vl.sizes(), vl.strides(), Some(vl.offset()))?;
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
/// such stale grad_fns the same way).
pub(crate) fn rederive_view(this: &Tensor, base: &Tensor) -> Result<()> {
    let (bl, vl) = (base.layout().clone(), this.layout().clone());
    let elems = base.storage().nbytes() / base.element_size();
    let view = record1(
        "AsStridedBackward0",
        &[base],
        this.detach(),
        smallvec::smallvec![],
        move |c: &Ctx| {
            let _g = mode::no_grad();
            let g = c.grad();
            let buf = Tensor::zeros(&[elems], g.dtype())?;
            buf.as_strided(vl.sizes(), vl.strides(), Some(vl.offset()))?
                .copy_(g)?;
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
