//! An expression evaluated with eager tensor ops: differentiable, so a
//! fused group's backward under `create_graph` (double backward) gives
//! the graph PyTorch would record. The ops are evaluated in the tensor
//! algebra of the pointwise rows ([`TVal`], Note [Pointwise rows]), the
//! same one eager autograd reads its formulas in.

use ferrotorch_codegen::Expr;
use ferrotorch_core::rows::{eval_ops, TVal};
use ferrotorch_core::{DType, Result, Tensor};

/// `e`'s outputs on `inputs`, computed op by op (every output a tensor:
/// a constant output is broadcast to `shape`).
pub(crate) fn eval(e: &Expr, inputs: &[Tensor], shape: &[usize]) -> Result<Vec<Tensor>> {
    let vals: Vec<TVal> = inputs.iter().map(TVal::from).collect();
    let v = eval_ops(&e.ops, &vals, TVal::C);
    let like = match inputs.first() {
        Some(t) => t.clone(),
        None => Tensor::full(&[], 0.0, DType::F32)?,
    };
    e.outputs
        .iter()
        .map(|&o| v[o].clone().tensor_shaped(&like, shape))
        .collect()
}
