//! Ops: every dispatcher op by name with boxed arguments, the schemas for
//! generating bindings, and typed entry points for the common ops.

use crate::status::{entry, put, Fail, FtStatus, Res};
use crate::tensor::{out_tensor, sizes, tensor, FtTensor};
use crate::value::{c_str, to_ivalue, write_results, FtKwarg, FtValue};
use ferrotorch_core::dispatch::binding::{self, BindingOp};
use ferrotorch_core::dispatch::{IValue, OpHandle};
use ferrotorch_core::Tensor;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::sync::OnceLock;

/// One op a C caller can call: its facts, handle and schema strings.
struct Op {
    info: BindingOp,
    handle: &'static OpHandle,
    schemas: Vec<CString>,
    name: CString,
}

/// Note [Op ids in C]: ids index one table built once from the binding
/// layer's op list (public ops, sorted); `ft_op_find` appends any other
/// registered name (a custom or test op) on first lookup, so ids are
/// stable for the process's life and a call by id does no string lookup.
struct Table {
    ops: Vec<&'static Op>,
    public: u32,
    by_name: HashMap<String, u32>,
}

fn table() -> &'static RwLock<Table> {
    static T: OnceLock<RwLock<Table>> = OnceLock::new();
    T.get_or_init(|| {
        ferrotorch_nn::functional::register_ops();
        binding::register_test_ops_if_asked();
        let mut t = Table {
            ops: Vec::new(),
            public: 0,
            by_name: HashMap::new(),
        };
        for info in binding::binding_ops() {
            add(&mut t, info);
        }
        t.public = t.ops.len() as u32;
        RwLock::new(t)
    })
}

fn add(t: &mut Table, info: BindingOp) -> u32 {
    let id = t.ops.len() as u32;
    let op: &'static Op = Box::leak(Box::new(Op {
        handle: info.handle(),
        schemas: info
            .overloads
            .iter()
            .map(|s| CString::new(s.to_string()).unwrap_or_default())
            .collect(),
        name: CString::new(info.name.clone()).unwrap_or_default(),
        info,
    }));
    t.by_name.insert(op.info.name.clone(), id);
    t.ops.push(op);
    id
}

fn op(what: &str, id: u32) -> Res<&'static Op> {
    table().read().ops.get(id as usize).copied().ok_or_else(|| {
        Fail::new(
            FtStatus::FtErrorKey,
            format!("{what}: there is no op with id {id}"),
        )
    })
}

/// The id of the op called `name`, for `ft_op_call`: a base name such as
/// `add` (every overload, chosen per call by the arguments) or a full name
/// such as `add.Scalar` (that overload only); `FT_ERROR_KEY` when there is
/// none.
#[no_mangle]
pub extern "C" fn ft_op_find(name: *const c_char, id: *mut u32) -> FtStatus {
    let what = "ft_op_find";
    entry(what, || {
        let name = c_str(what, name)?;
        if let Some(&i) = table().read().by_name.get(name) {
            return put(what, id, i);
        }
        let overloads: Vec<_> = ferrotorch_core::dispatch::op_names()
            .into_iter()
            .filter(|full| full.split('.').next() == Some(name) || full == name)
            .filter_map(|full| ferrotorch_core::dispatch::find_schema(&full))
            .collect();
        if overloads.is_empty() {
            return Err(Fail::new(
                FtStatus::FtErrorKey,
                format!("{what}: there is no op named '{name}'"),
            ));
        }
        let mut t = table().write();
        // a full name (`add.Scalar`, one overload) keeps its base op's facts
        let base = name.split('.').next().unwrap_or(name);
        let facts = t.by_name.get(base).map(|&i| &t.ops[i as usize].info);
        let info = BindingOp {
            name: name.to_string(),
            overloads,
            is_method: facts.is_some_and(|f| f.is_method),
            writes_self: facts.is_some_and(|f| f.writes_self),
            vararg_sizes: None,
            creation: facts.is_some_and(|f| f.creation),
        };
        let i = match t.by_name.get(name) {
            Some(&i) => i,
            None => add(&mut t, info),
        };
        put(what, id, i)
    })
}

/// How many public ops there are: their ids are `0..count`, sorted by
/// name. Names `ft_op_find` looks up beyond them (full overload names,
/// custom or test ops) get ids after these.
#[no_mangle]
pub extern "C" fn ft_op_count() -> u32 {
    // the first call builds the table: a panic there must not unwind
    std::panic::catch_unwind(|| table().read().public).unwrap_or(0)
}

/// The op's base name (owned by the library; valid for the process).
#[no_mangle]
pub extern "C" fn ft_op_name(id: u32, out: *mut *const c_char) -> FtStatus {
    let what = "ft_op_name";
    entry(what, || put(what, out, op(what, id)?.name.as_ptr()))
}

/// How many overloads (schemas) the op has.
#[no_mangle]
pub extern "C" fn ft_op_num_overloads(id: u32, out: *mut usize) -> FtStatus {
    let what = "ft_op_num_overloads";
    entry(what, || put(what, out, op(what, id)?.schemas.len()))
}

/// An overload's schema in torch's syntax (`add.Tensor(Tensor self,
/// Tensor other, *, Scalar alpha=1) -> Tensor`); owned by the library.
#[no_mangle]
pub extern "C" fn ft_op_schema(id: u32, overload: usize, out: *mut *const c_char) -> FtStatus {
    let what = "ft_op_schema";
    entry(what, || {
        let o = op(what, id)?;
        let s = o.schemas.get(overload).ok_or_else(|| {
            Fail::new(
                FtStatus::FtErrorIndex,
                format!(
                    "{what}: {} has {} overloads, not {}",
                    o.info.name,
                    o.schemas.len(),
                    overload + 1
                ),
            )
        })?;
        put(what, out, s.as_ptr())
    })
}

/// Facts a generated binding needs, as bits: 1 a `Tensor` method, 2
/// writes and returns `self` (`add_`), 4 a creation op (takes
/// `requires_grad`).
#[no_mangle]
pub extern "C" fn ft_op_flags(id: u32, out: *mut u32) -> FtStatus {
    let what = "ft_op_flags";
    entry(what, || {
        let i = &op(what, id)?.info;
        let flags =
            u32::from(i.is_method) | (u32::from(i.writes_self) << 1) | (u32::from(i.creation) << 2);
        put(what, out, flags)
    })
}

#[allow(clippy::too_many_arguments)]
fn call(
    o: &Op,
    args: *const FtValue,
    nargs: usize,
    kwargs: *const FtKwarg,
    nkwargs: usize,
    results: *mut FtValue,
    capacity: usize,
    nresults: *mut usize,
) -> Res<()> {
    let what = o.info.name.as_str();
    let pos = crate::tensor::slice(what, args, nargs)?
        .iter()
        .map(|v| to_ivalue(what, v))
        .collect::<Res<Vec<_>>>()?;
    let mut requires_grad = false;
    let mut kw: Vec<(&str, IValue)> = Vec::with_capacity(nkwargs);
    for k in crate::tensor::slice(what, kwargs, nkwargs)? {
        let name = c_str(what, k.name)?;
        let v = to_ivalue(what, &k.value)?;
        if o.info.creation && name == "requires_grad" {
            requires_grad = matches!(v, IValue::Bool(true));
        } else {
            kw.push((name, v));
        }
    }
    let mut out = o.handle.call(&pos, &kw)?;
    if requires_grad {
        if let IValue::Tensor(t) = &mut out {
            t.requires_grad_(true)?;
        }
    }
    write_results(what, out, results, capacity, nresults)
}

/// Call op `id` (from `ft_op_find`) with positional `args` and keyword
/// `kwargs` (Note [Boxed values in C]): the overload is chosen as torch's
/// Python binding chooses it. Results go to `results[0..capacity]`, their
/// number to `nresults`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_op_call(
    id: u32,
    args: *const FtValue,
    nargs: usize,
    kwargs: *const FtKwarg,
    nkwargs: usize,
    results: *mut FtValue,
    capacity: usize,
    nresults: *mut usize,
) -> FtStatus {
    entry("ft_op_call", || {
        let o = op("ft_op_call", id)?;
        call(o, args, nargs, kwargs, nkwargs, results, capacity, nresults)
    })
}

/// `ft_op_find` and `ft_op_call` in one: call the op called `name`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_call(
    name: *const c_char,
    args: *const FtValue,
    nargs: usize,
    kwargs: *const FtKwarg,
    nkwargs: usize,
    results: *mut FtValue,
    capacity: usize,
    nresults: *mut usize,
) -> FtStatus {
    let mut id = 0u32;
    let s = ft_op_find(name, &mut id);
    if s != FtStatus::FtOk {
        return s;
    }
    ft_op_call(
        id, args, nargs, kwargs, nkwargs, results, capacity, nresults,
    )
}

fn binary(
    what: &str,
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
    f: fn(&Tensor, &Tensor) -> ferrotorch_core::Result<Tensor>,
) -> FtStatus {
    entry(what, || {
        let r = f(tensor(what, a)?, tensor(what, b)?)?;
        out_tensor(what, out, r)
    })
}

fn unary(
    what: &str,
    a: *const FtTensor,
    out: *mut *mut FtTensor,
    f: fn(&Tensor) -> ferrotorch_core::Result<Tensor>,
) -> FtStatus {
    entry(what, || {
        let r = f(tensor(what, a)?)?;
        out_tensor(what, out, r)
    })
}

/// `torch.add(a, b)`.
#[no_mangle]
pub extern "C" fn ft_add(
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    binary("ft_add", a, b, out, |a, b| a.add(b))
}

/// `torch.sub(a, b)`.
#[no_mangle]
pub extern "C" fn ft_sub(
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    binary("ft_sub", a, b, out, |a, b| a.sub(b))
}

/// `torch.mul(a, b)`.
#[no_mangle]
pub extern "C" fn ft_mul(
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    binary("ft_mul", a, b, out, |a, b| a.mul(b))
}

/// `torch.div(a, b)`.
#[no_mangle]
pub extern "C" fn ft_div(
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    binary("ft_div", a, b, out, |a, b| a.div(b))
}

/// `torch.matmul(a, b)`.
#[no_mangle]
pub extern "C" fn ft_matmul(
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    binary("ft_matmul", a, b, out, |a, b| a.matmul(b))
}

/// `torch.mm(a, b)`.
#[no_mangle]
pub extern "C" fn ft_mm(
    a: *const FtTensor,
    b: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    binary("ft_mm", a, b, out, |a, b| a.mm(b))
}

/// `torch.neg(a)`.
#[no_mangle]
pub extern "C" fn ft_neg(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_neg", a, out, |a| a.neg())
}

/// `torch.exp(a)`.
#[no_mangle]
pub extern "C" fn ft_exp(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_exp", a, out, |a| a.exp())
}

/// `torch.log(a)`.
#[no_mangle]
pub extern "C" fn ft_log(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_log", a, out, |a| a.log())
}

/// `torch.tanh(a)`.
#[no_mangle]
pub extern "C" fn ft_tanh(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_tanh", a, out, |a| a.tanh())
}

/// `torch.sigmoid(a)`.
#[no_mangle]
pub extern "C" fn ft_sigmoid(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_sigmoid", a, out, |a| a.sigmoid())
}

/// `torch.relu(a)`.
#[no_mangle]
pub extern "C" fn ft_relu(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_relu", a, out, |a| a.relu())
}

/// `torch.sum(a)`: the sum of every element.
#[no_mangle]
pub extern "C" fn ft_sum(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_sum", a, out, |a| a.sum())
}

/// `torch.mean(a)`: the mean of every element.
#[no_mangle]
pub extern "C" fn ft_mean(a: *const FtTensor, out: *mut *mut FtTensor) -> FtStatus {
    unary("ft_mean", a, out, |a| a.mean())
}

/// `a.reshape(shape)`.
#[no_mangle]
pub extern "C" fn ft_reshape(
    a: *const FtTensor,
    shape: *const i64,
    ndim: usize,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_reshape";
    entry(what, || {
        let s = crate::tensor::slice(what, shape, ndim)?;
        out_tensor(what, out, tensor(what, a)?.reshape(s)?)
    })
}

/// `a.transpose(dim0, dim1)`.
#[no_mangle]
pub extern "C" fn ft_transpose(
    a: *const FtTensor,
    dim0: i64,
    dim1: i64,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_transpose";
    entry(what, || {
        out_tensor(what, out, tensor(what, a)?.transpose(dim0, dim1)?)
    })
}

/// `torch.full(shape, value, dtype=dtype)`.
#[no_mangle]
pub extern "C" fn ft_full(
    shape: *const i64,
    ndim: usize,
    value: f64,
    dtype: i32,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_full";
    entry(what, || {
        let s = sizes(what, shape, ndim)?;
        let d = crate::tensor::dtype_of(what, dtype)?;
        out_tensor(what, out, Tensor::full(&s, value, d)?)
    })
}
