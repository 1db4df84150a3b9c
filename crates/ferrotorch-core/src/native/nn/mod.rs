//! Neural-network kernels (their `nn.functional` and `nn` wrappers come with
//! the nn issue): activations, softmax, convolution, pooling,
//! normalisation, embedding, dropout, padding, interpolation, attention,
//! recurrent layers.

pub(crate) mod activation;
pub(crate) mod conv;
mod conv_batched;
mod conv_direct;
mod conv_fused;
pub(crate) mod conv_prepack;
mod conv_transpose;
pub(crate) mod conv_weight_grad;
mod conv_winograd;
pub(crate) mod misc;
pub(crate) mod norm;
pub(crate) mod pool;
pub mod rnn;
pub(crate) mod softmax;

use crate::dispatch::Registry;

pub(crate) fn register(r: &mut Registry) {
    activation::register(r);
    softmax::register(r);
    conv::register(r);
    pool::register(r);
    norm::register(r);
    misc::register(r);
    rnn::register(r);
}
