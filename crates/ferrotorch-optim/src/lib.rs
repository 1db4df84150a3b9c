//! `torch.optim` for ferrotorch: SGD, Adam, AdamW, RMSprop and Adagrad
//! with parameter groups, PyTorch-layout state dicts and fused CPU steps,
//! and the learning-rate schedulers of `torch.optim.lr_scheduler`.
//!
//! ```
//! use ferrotorch_core::{Result, Tensor};
//! use ferrotorch_nn::{Linear, Forward, Module};
//! use ferrotorch_optim::{Adam, AdamOptions, Optimizer};
//!
//! # fn main() -> Result<()> {
//! let model = Linear::new(3, 1, true)?;
//! let mut opt = Adam::new(model.parameters(), AdamOptions { lr: 0.05, ..Default::default() })?;
//! let (x, y) = (Tensor::ones(&[8, 3], ())?, Tensor::zeros(&[8, 1], ())?);
//! for _ in 0..10 {
//!     let loss = model.call(&x)?.sub(&y)?.pow(2.0)?.mean()?;
//!     opt.zero_grad();
//!     loss.backward()?;
//!     opt.step()?;
//! }
//! # Ok(())
//! # }
//! ```

mod adagrad;
mod adam;
mod kernel;
pub mod lr_scheduler;
mod optimizer;
mod options;
mod rmsprop;
mod sgd;

pub use adagrad::*;
pub use adam::*;
pub use optimizer::{
    Algorithm, GroupOptions, Hyper, Optim, Optimizer, OptimizerStateDict, ParamGroup, ParamState,
};
pub use rmsprop::*;
pub use sgd::*;
