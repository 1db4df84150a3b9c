//! Native ops (ATen): kernels and their dispatcher entries.
//!
//! | file | ops |
//! |---|---|
//! | `iter` | the elementwise engine every pointwise op runs on |
//! | `unary`, `unary_exact` | unary pointwise ops (one table row each) |
//! | `binary`, `compare` | binary pointwise ops, comparisons, logical and bitwise ops |
//! | `bits` | `gcd`, `lcm`, `nextafter`, `frexp` |
//! | `pointwise` | `where`, `clamp`, `lerp`, `masked_fill`, ... |
//! | `reduce` | reductions over dim lists |
//! | `linalg` | matmul and friends |
//! | `einsum` | einsum, via diagonals, sums and bmm |
//! | `movement` | cat, gather, scatter, flip, roll, ... |
//! | `stats` | var, std, logsumexp, norm, median |
//! | `scan` | cumsum, cumprod, cummax, ... |
//! | `sort` | sort, topk, searchsorted, bincount |
//! | `counting` | `mode`, `nanmedian`, `histc`, `histogram` |
//! | `unique` | unique (flattened or along a dim), unique_consecutive |
//! | `random` | PyTorch-compatible generator, rand/randn/randint/... |
//! | `nn` | activations, softmax, ... (nn kernels) |
//! | `special`, `special_fns` | scalar special functions (gamma family, erf, Bessel, normal CDF, polynomials) |
//! | `special_ops` | `torch.special` ops over them |
//! | `composite` | ops made of other ops: `atleast_*d`, `kron`, `cdist`, `diff`, ... |
//! | `decomp` | `torch.linalg`: LU, Cholesky, QR, eigh, SVD (faer) and what is built on them |
//! | `complex` | complex ↔ real views, `complex`, `polar`, complex arithmetic on the real view |
//! | `prim` | `size`, `Int`, `NumToTensor`: sizes as graph values |

pub(crate) mod binary;
pub(crate) mod bits;
pub(crate) mod close;
pub(crate) mod compare;
pub mod complex;
pub(crate) mod composite;
pub(crate) mod counting;
pub(crate) mod decomp;
pub(crate) mod einsum;
pub mod fft;
pub(crate) mod iter;
pub(crate) mod linalg;
pub(crate) mod movement;
pub(crate) mod nn;
pub(crate) mod pointwise;
pub(crate) mod prim;
pub mod random;
pub(crate) mod reduce;
pub(crate) mod scan;
pub(crate) mod sort;
pub mod special;
pub mod special_fns;
pub mod special_fns_more;
pub(crate) mod special_ops;
pub(crate) mod stats;
pub(crate) mod unary;
pub(crate) mod unary_exact;
pub(crate) mod unique;

pub use binary::Operand;
pub use complex::{complex, polar};
pub use einsum::einsum;
pub use movement::{cat, stack};
pub use nn::conv_prepack::PrepackedFilters;
pub use nn::rnn::{rnn, rnn_cell, RnnArgs, RnnMode};
pub use pointwise::where_;

use crate::dispatch::Registry;

/// Collect every built-in op's dispatcher entry.
pub(crate) fn register_all(r: &mut Registry) {
    unary::register_float(r);
    unary_exact::register_exact(r);
    unary_exact::register_misc(r);
    binary::register_binary(r);
    binary::register_arith_extras(r);
    bits::register(r);
    close::register(r);
    compare::register_predicates(r);
    compare::register_logical(r);
    compare::register_bitwise(r);
    pointwise::register(r);
    reduce::register(r);
    linalg::register(r);
    einsum::register(r);
    movement::register(r);
    stats::register(r);
    scan::register(r);
    sort::register(r);
    unique::register(r);
    counting::register(r);
    random::register(r);
    nn::register(r);
    prim::register(r);
    composite::register(r);
    decomp::register(r);
    special_ops::register(r);
    fft::register(r);
    crate::tensor::register_views(r);
    crate::tensor::create_ops::register_creation(r);
    // last: it marks the ops above that take complex tensors
    complex::register(r);
}
