//! Neural-network kernels (their `nn.functional` and `nn` wrappers come with
//! the nn issue): activations and softmax.

pub(crate) mod activation;
pub(crate) mod softmax;

use crate::dispatch::Registry;

pub(crate) fn register(r: &mut Registry) {
    activation::register(r);
    softmax::register(r);
}
