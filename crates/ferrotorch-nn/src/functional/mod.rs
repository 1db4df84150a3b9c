//! `torch.nn.functional`: activations, losses, linear maps and distances
//! composed of native ops
//! (so autograd and, later, the JIT see only primitives). Names, argument
//! order and defaults are PyTorch's; keyword-only options of the losses
//! are option structs with PyTorch's defaults (`..Default::default()`).

mod act_backward;
mod activation;
mod attention;
mod distance;
mod dropout;
mod layers;
mod loss;
mod loss_ops;
mod ops;

pub use activation::*;
pub use attention::*;
pub use distance::*;
pub use dropout::*;
pub use ferrotorch_core::Tensor;
pub use layers::*;
pub use loss::*;
pub use ops::register_ops;

/// How a loss reduces its per-element values (`reduction=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// Keep the per-element losses (`'none'`).
    None,
    /// Their mean (`'mean'`, the default).
    #[default]
    Mean,
    /// Their sum (`'sum'`).
    Sum,
}

impl Reduction {
    /// Parse PyTorch's string form.
    pub fn parse(s: &str) -> ferrotorch_core::Result<Reduction> {
        Ok(match s {
            "none" => Reduction::None,
            "mean" => Reduction::Mean,
            "sum" => Reduction::Sum,
            _ => ferrotorch_core::bail!(Value, "{s} is not a valid value for reduction"),
        })
    }

    pub(crate) fn apply(self, t: Tensor) -> ferrotorch_core::Result<Tensor> {
        match self {
            Reduction::None => Ok(t),
            Reduction::Mean => t.mean(),
            Reduction::Sum => t.sum(),
        }
    }
}
