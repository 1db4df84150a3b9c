//! The backend step's handling of conjugated views (Note [The conjugate
//! bit] in `tensor/conj.rs`): kernels see resolved values, view ops keep
//! the mark, in-place ops write the conjugate back.

use super::{Args, IValue, OpEntry};
use crate::error::Result;
use crate::tensor::Tensor;

fn marked(v: &IValue) -> bool {
    match v {
        IValue::Tensor(t) => t.is_conj(),
        IValue::TensorList(l) => l.iter().any(Tensor::is_conj),
        IValue::OptTensorList(l) => l.iter().flatten().any(Tensor::is_conj),
        _ => false,
    }
}

fn resolve_value(v: &IValue) -> Result<IValue> {
    Ok(match v {
        IValue::Tensor(t) => IValue::Tensor(t.resolved()?),
        IValue::TensorList(l) => {
            IValue::TensorList(l.iter().map(Tensor::resolved).collect::<Result<_>>()?)
        }
        IValue::OptTensorList(l) => IValue::OptTensorList(
            l.iter()
                .map(|t| t.as_ref().map(Tensor::resolved).transpose())
                .collect::<Result<_>>()?,
        ),
        v => v.clone(),
    })
}

/// Mark a view op's result(s) conjugated.
fn mark(v: IValue) -> Result<IValue> {
    Ok(match v {
        IValue::Tensor(t) => IValue::Tensor(t.conj_view()?),
        IValue::TensorList(l) => {
            IValue::TensorList(l.iter().map(Tensor::conj_view).collect::<Result<_>>()?)
        }
        v => v,
    })
}

/// Call backend kernel `k` with `a`, conjugated views handled.
pub(super) fn call(e: &OpEntry, a: &Args, k: &dyn Fn(&Args) -> Result<IValue>) -> Result<IValue> {
    if !crate::tensor::conj::any_live() || !a.vals.iter().any(marked) {
        return k(a);
    }
    let schema = &e.schema;
    let name = schema.name.as_str();
    let with = |vals: Vec<IValue>| Args {
        schema: a.schema.clone(),
        vals,
    };
    // the ops that read the mark themselves
    if matches!(name, "conj" | "resolve_conj" | "is_conj") {
        return k(a);
    }
    crate::ensure!(
        name != "view_as_real",
        Runtime,
        "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it as real, use self.resolve_conj()"
    );
    let first_marked = matches!(a.vals.first(), Some(IValue::Tensor(t)) if t.is_conj());
    let first_mutable = schema.args.first().is_some_and(|x| x.mutable);
    // a view (Tensor(a) self -> Tensor(a)) commutes with conjugation: run it
    // on the unmarked memory and mark the result (imag does not commute)
    if first_marked && !first_mutable && schema.aliased_input(0) == Some(0) && name != "imag" {
        let mut vals = a.vals.clone();
        if let IValue::Tensor(t) = &vals[0] {
            vals[0] = IValue::Tensor(t.conj_view()?);
        }
        for v in vals.iter_mut().skip(1) {
            if marked(v) {
                *v = resolve_value(v)?;
            }
        }
        let out = k(&with(vals))?;
        return mark(out);
    }
    if first_marked && first_mutable {
        // in place: compute on the value, write the conjugate back
        let IValue::Tensor(target) = &a.vals[0] else {
            unreachable!("first_marked checked a tensor")
        };
        let base_is_grad_leaf = target
            .view_base()
            .is_some_and(|b| b.requires_grad() && b.grad_fn().is_none());
        crate::ensure!(
            !(crate::autograd::is_grad_enabled() && base_is_grad_leaf),
            Runtime,
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        );
        let value = target.resolved()?;
        let mut vals = a.vals.clone();
        vals[0] = IValue::Tensor(value.clone());
        for v in vals.iter_mut().skip(1) {
            if marked(v) {
                *v = resolve_value(v)?;
            }
        }
        let out = k(&with(vals))?;
        // the unmarked memory takes the conjugate of the new value; under
        // autograd that write rebases the base's history (CopySlices), and
        // `target` is re-derived from it, conjugated, when next used
        target.conj_view()?.copy_(&value.conj_physical()?)?;
        return Ok(match out {
            IValue::Tensor(t) if t.is_same(&value) => IValue::Tensor(target.clone()),
            v => v,
        });
    }
    let vals = a
        .vals
        .iter()
        .map(resolve_value)
        .collect::<Result<Vec<_>>>()?;
    k(&with(vals))
}
