//! Derivative formulas, kept together (PyTorch's `derivatives.yaml`).
//!
//! Each op's method computes its result, then calls the function here with
//! its inputs and result; that records a node (when some input requires
//! grad) whose formula is a few lines of differentiable ops, so that
//! `create_graph` differentiates the formulas themselves. The engine sums
//! each returned gradient back to its input's shape and dtype, so formulas
//! ignore broadcasting.
//!
//! What a formula saves is declared with it, never in a second list: the
//! unary and binary ops have one table entry each (`unary_derivative`,
//! `binary_derivative` in [`pointwise`]: what the formula reads — input,
//! result or nothing — and the formula), and every other op's recording
//! function passes its saves and its formula to one `record` call.
//!
//! - [`pointwise`]: unary and binary elementwise ops
//! - [`reduce`]: sums, means, products, extrema, variances, norms
//! - [`scan`]: cumulative sums, products and logsumexp
//! - [`linalg`]: matmul and friends
//! - [`shape`]: views and value-selecting ops
//! - [`indexing`]: gathers, scatters, `cat`, `index_put`, `copy_`, `fill_`
//! - [`nn`]: activations, softmax, losses, convolution, pooling, norms
//! - [`layer_norm`], [`rnn`]: the fused float32 layer norm and GRU/LSTM steps
//! - [`inplace`]: in-place ops and views of non-leaf tensors

pub(crate) mod conv;
pub(crate) mod decomp;
mod fused;
pub(crate) mod indexing;
pub(crate) mod inplace;
pub(crate) mod layer_norm;
pub(crate) mod linalg;
pub(crate) mod nn;
pub(crate) mod pointwise;
pub(crate) mod reduce;
pub(crate) mod rnn;
pub(crate) mod scan;
pub(crate) mod shape;
pub(crate) mod special;

use crate::error::Result;
use crate::tensor::Tensor;

/// `Some(f())` when input `i` needs a gradient.
#[inline]
pub(crate) fn want(
    c: &super::Ctx,
    i: usize,
    f: impl FnOnce() -> Result<Tensor>,
) -> Result<Option<Tensor>> {
    if c.needs_input_grad(i) {
        f().map(Some)
    } else {
        Ok(None)
    }
}

/// `PyTorch`-style node name for an op: `exp` → `ExpBackward0` (built once
/// per op and overload, then looked up).
pub(crate) fn node_name(op: &str, overload: usize) -> &'static str {
    type Names =
        std::collections::HashMap<usize, std::collections::HashMap<Box<str>, &'static str>>;
    thread_local! {
        static NAMES: std::cell::RefCell<Names> = std::cell::RefCell::new(Names::new());
    }
    NAMES.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(s) = m.get(&overload).and_then(|by_op| by_op.get(op)) {
            return *s;
        }
        let mut s = String::with_capacity(op.len() + 10);
        let mut up = true;
        for ch in op.chars() {
            if ch == '_' {
                up = true;
                continue;
            }
            if up {
                s.extend(ch.to_uppercase());
                up = false;
            } else {
                s.push(ch);
            }
        }
        s.push_str("Backward");
        s.push_str(&overload.to_string());
        let name = crate::autograd::node::intern(&s);
        m.entry(overload).or_default().insert(op.into(), name);
        name
    })
}
