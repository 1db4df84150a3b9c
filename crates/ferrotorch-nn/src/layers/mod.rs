//! The layers of `torch.nn`, each a `#[derive(Module)]` struct with
//! PyTorch's constructor arguments, default initialisation and repr.

mod activation;
mod container;
mod conv;
mod dropout;
mod embedding;
mod fmt;
mod fused;
mod linear;
mod norm;
mod pooling;
mod rnn;
mod transformer;

pub use activation::*;
pub use container::*;
pub use conv::*;
pub use dropout::*;
pub use embedding::*;
pub use fmt::Size2;
pub(crate) use fused::{conv_bn, sequential_conv_bn};
pub use linear::*;
pub use norm::*;
pub use pooling::*;
pub use rnn::*;
pub use transformer::*;
