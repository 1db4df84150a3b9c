//! Every registered op, callable by name: the road the generated Python
//! functions and methods take (Note [Methods declared once]).

use crate::convert::{call_args, from_ivalue, kw_refs};
use crate::errors::guarded_detached_if;
use crate::script_object;
use ferrotorch_core::dispatch::{self, IValue};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Kernels on tensors at least this large run with the GIL released (ops
/// called by name, operators, fused optimizer steps): below it, releasing
/// and retaking the GIL costs more than it frees.
pub(crate) const RELEASE_GIL_NUMEL: usize = 1 << 15;

fn big(v: &IValue) -> bool {
    match v {
        IValue::Tensor(t) => t.numel() >= RELEASE_GIL_NUMEL,
        IValue::TensorList(l) => l.iter().map(|t| t.numel()).sum::<usize>() >= RELEASE_GIL_NUMEL,
        _ => false,
    }
}

/// `_C._call_op(name, args, kwargs)`: bind against the op's schema (or
/// each overload in turn) and run it.
#[pyfunction]
#[pyo3(signature = (name, args, kwargs=None))]
pub fn _call_op<'py>(
    py: Python<'py>,
    name: &str,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (pos, kw) = call_args(args, kwargs)?;
    // an op on objects keeps the identities of what goes in and comes
    // out (Note [Identity through objects])
    let objects =
        script_object::has_object(&pos) || kw.iter().any(|(_, v)| matches!(v, IValue::Object(_)));
    if objects {
        script_object::remember(args.as_any())?;
        if let Some(k) = kwargs {
            script_object::remember(&k.values().into_any())?;
        }
    }
    let release = pos.iter().any(big) || kw.iter().any(|(_, v)| big(v));
    let f = || dispatch::call(name, &pos, &kw_refs(&kw));
    let out = guarded_detached_if(py, name, release, f)?;
    if objects {
        return script_object::from_ivalue_ids(py, out);
    }
    from_ivalue(py, out)
}

/// `_C._schemas()`: `(base name, full name, [(arg, type, has default,
/// kwarg only)], return names (empty where unnamed), schema text, the
/// argument each return aliases (-1 where none: `add_` returns its
/// argument 0, `transpose` a view of it), whether it writes in place)` for
/// every op, the alias facts read from the schema's annotations.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn _schemas() -> Vec<(
    String,
    String,
    Vec<(String, String, bool, bool)>,
    Vec<String>,
    String,
    Vec<i64>,
    bool,
)> {
    dispatch::op_names()
        .into_iter()
        .filter_map(|full| {
            let s = dispatch::find_schema(&full)?;
            let args = s
                .args
                .iter()
                .map(|a| {
                    (
                        a.name.clone(),
                        a.ty.to_string(),
                        a.default.is_some(),
                        a.kwarg_only,
                    )
                })
                .collect();
            let names = s
                .return_names
                .iter()
                .map(|n| n.clone().unwrap_or_default())
                .collect();
            let aliases = (0..s.returns.len())
                .map(|i| s.aliased_input(i).map_or(-1, |a| a as i64))
                .collect();
            Some((
                s.name.clone(),
                full,
                args,
                names,
                s.to_string(),
                aliases,
                s.is_inplace(),
            ))
        })
        .collect()
}
