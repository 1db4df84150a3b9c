//! Ops made of other ops (torch's CompositeImplicitAutograd kernels): each
//! is declared with its schema like any op, and its gradient is that of
//! the ops it calls, so none has a derivative formula of its own.
//!
//! | file | ops |
//! |---|---|
//! | `shape` | `atleast_*d`, `*stack`, `*split`, `rot90`, `diag*`, `block_diag`, `meshgrid`, `*_scatter`, ... |
//! | `indexing` | `index_add`/`copy`/`fill`, `masked_scatter`, `put`, `kthvalue`, `bucketize`, `isin`, `combinations`, the `*_copy` view ops |
//! | `extras` | `constant_pad_nd`, `fill`, `scalar_tensor`, `empty_strided`, `empty_permuted`, `randint_like`, `unsafe_split` |
//! | `quantile` | `quantile`, `nanquantile` |
//! | `convolution` | `convolution`, `_convolution` (by the weight's rank) |
//! | `attention` | `_native_multi_head_attention` |
//! | `core_aten` | `_softmax`, `native_layer_norm`, `_native_batch_norm_legit*`, `native_dropout`, `copy`, ... (what export's decompositions name) |
//! | `math` | `square`, `logaddexp`, `sinc`, `nansum`, `diff`, `trapezoid`, `kron`, `cdist`, `cross`, `cov`, ... |

pub(crate) mod attention;
pub(crate) mod convolution;
pub(crate) mod core_aten;
pub(crate) mod extras;
pub(crate) mod indexing;
pub(crate) mod math;
pub(crate) mod quantile;
pub(crate) mod shape;

use crate::dispatch::Registry;

pub(crate) fn register(r: &mut Registry) {
    shape::register(r);
    math::register(r);
    indexing::register(r);
    extras::register(r);
    quantile::register(r);
    convolution::register(r);
    attention::register(r);
    core_aten::register(r);
}
