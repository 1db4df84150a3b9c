//! The layers of `torch.nn`, each a `#[derive(Module)]` struct with
//! PyTorch's constructor arguments, default initialisation and repr.

mod activation;
mod container;
mod dropout;
mod linear;

pub use activation::*;
pub use container::*;
pub use dropout::*;
pub use linear::*;
