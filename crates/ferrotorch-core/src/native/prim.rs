//! Sizes and numbers as graph values: the ops a traced `x.size(0)` is
//! recorded as (Note [Traced sizes] in `ferrotorch-jit`), so a graph that
//! reshapes by an input's size follows the size it is run with.
//!
//! - `aten::size(Tensor self, int dim) -> int`
//! - `prim::NumToTensor(Scalar a) -> Tensor`: the 0-dim tensor Python code
//!   holds while tracing in place of the int
//! - `aten::Int(Tensor a) -> int`: that tensor back to an int where an op
//!   takes one
//! - `aten::ScalarImplicit(Tensor a) -> Scalar`: a 0-dim tensor where an op
//!   takes a number

use crate::dispatch::Registry;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::Tensor;

fn size(x: Tensor, dim: i64) -> Result<i64> {
    Ok(x.size_at(dim)? as i64)
}

fn int(a: Tensor) -> Result<i64> {
    crate::ensure!(
        a.numel() == 1,
        Runtime,
        "Int(): a Tensor with {} elements cannot be converted to an int",
        a.numel()
    );
    Ok(match a.item()? {
        Scalar::Int(i) => i,
        Scalar::Bool(b) => i64::from(b),
        Scalar::Complex(..) => {
            crate::bail!(
                Runtime,
                "Int(): a complex tensor cannot be converted to an int"
            )
        }
        // torch truncates toward zero
        Scalar::Float(f) => {
            crate::ensure!(
                f.is_finite() && f.abs() < 9.2e18,
                Runtime,
                "Int(): cannot convert {f} to an int"
            );
            f as i64
        }
    })
}

pub(crate) fn register(r: &mut Registry) {
    r.def_typed("size.int(Tensor self, int dim) -> int", size);
    // how torch.export's graphs read a size (a symbolic one, when dynamic)
    r.def_typed("sym_size.int(Tensor self, int dim) -> SymInt", size);
    r.def_typed("Int.Tensor(Tensor a) -> int", int);
    r.def_typed("ScalarImplicit(Tensor a) -> Scalar", |a: Tensor| {
        crate::ensure!(
            a.dim() == 0,
            Runtime,
            "ScalarImplicit(): expected a 0-dim tensor, got one of shape {:?}",
            a.shape()
        );
        a.item()
    });
    r.def_typed(
        "prim::NumToTensor.Scalar(Scalar a) -> Tensor",
        |a: Scalar| Ok(Tensor::scalar_tensor(a)),
    );
}
