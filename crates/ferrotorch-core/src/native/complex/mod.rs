//! Complex tensors (Note [Complex numbers]): the views between complex and
//! real (`view_as_real`, `view_as_complex`, `real`, `imag`), construction
//! (`complex`, `polar`), and complex arithmetic written on the real view.
//!
//! # Note [Complex support is opt-in]
//! Generic kernels take complex elements (they are `Element`s), which is
//! right for moving them and wrong for ordering or arithmetic written for
//! real numbers. So an op accepts complex tensors only when it says so:
//! ops registered under [`COMPLEX_OPS`] (movement ops, and the arithmetic
//! this module implements) pass; any other op called with a complex tensor
//! is refused at the dispatcher with torch's message
//! (`"max" not implemented for 'ComplexFloat'`), and typed Rust methods
//! whose kernels would misread complex elements check for themselves.

mod arith;
mod views;

pub use views::{complex, polar};

pub(crate) use arith::{binary, involves_complex, product, reduce_real_view, unary, widen};

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind};
use crate::tensor::Tensor;

/// torch's error for an op without a complex kernel.
pub(crate) fn not_implemented(op: &str, d: DType) -> Error {
    Error::new(
        ErrorKind::NotImplemented,
        format!("\"{op}\" not implemented for '{}'", d.name_title()),
    )
}

/// The ops that take complex tensors (Note [Complex support is opt-in]):
/// moving and viewing elements, and the arithmetic of this module.
#[rustfmt::skip]
pub const COMPLEX_OPS: &[&str] = &[
    // queries
    "is_complex", "is_conj", "is_floating_point", "is_nonzero", "is_same_size", "is_neg",
    // complex <-> real
    "view_as_real", "view_as_complex", "real", "imag", "complex", "polar", "conj", "conj_physical",
    "resolve_conj", "resolve_neg", "angle", "sgn", "abs", "absolute",
    // arithmetic
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "true_divide", "neg", "neg_",
    "negative", "rsub", "pow", "pow_", "exp", "exp_", "log", "log_", "log2", "log10", "sqrt",
    "sqrt_", "rsqrt", "reciprocal", "reciprocal_", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "sigmoid", "square", "expm1", "log1p", "isnan", "isinf", "isfinite", "eq", "ne", "isclose",
    "allclose", "equal", "sum", "mean", "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner",
    "outer", "einsum", "tensordot", "kron",
    // creation and copies
    "zeros_like", "ones_like", "empty_like", "full_like", "zeros", "ones", "empty", "full",
    "scalar_tensor", "clone", "contiguous", "detach", "to", "_to_copy", "type_as", "copy_",
    "fill_", "zero_", "alias", "randn", "rand", "randn_like", "rand_like", "normal_", "uniform_",
    // views
    "view", "reshape", "as_strided", "transpose", "t", "permute", "movedim", "moveaxis", "narrow",
    "slice", "select", "squeeze", "unsqueeze", "expand", "expand_as", "broadcast_to",
    "broadcast_tensors", "flatten", "unflatten", "unfold", "diagonal", "split", "split_with_sizes",
    "chunk", "unbind", "view_as", "reshape_as", "swapaxes", "swapdims", "squeeze_", "unsqueeze_",
    "t_", "transpose_", "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "tensor_split",
    "hsplit", "vsplit", "dsplit",
    // movement
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
    "row_stack", "flip", "fliplr", "flipud", "roll", "rot90", "repeat", "tile", "gather",
    "index_select", "take", "take_along_dim", "masked_select", "masked_fill", "masked_fill_",
    "where", "tril", "triu", "diag", "diag_embed", "diagflat", "index", "index_put", "index_put_",
    "nonzero", "count_nonzero", "numel", "size", "block_diag",
    // torch.linalg (complex systems as real block systems)
    "linalg_solve", "linalg_inv",
    // torch.linalg (complex factorizations: decomp/complex_linalg.rs)
    "linalg_det", "det", "linalg_slogdet", "slogdet", "logdet", "linalg_cholesky",
    "linalg_cholesky_ex", "cholesky", "linalg_solve_triangular", "linalg_qr", "qr", "linalg_eigh",
    "linalg_eigvalsh", "linalg_svd", "linalg_svdvals", "svd",
    "linalg_pinv", "linalg_matrix_rank", "linalg_cond", "linalg_matrix_norm", "linalg_vector_norm",
    "linalg_norm", "linalg_inv_ex", "linalg_solve_ex", "linalg_matrix_power", "linalg_multi_dot",
    "linalg_vecdot", "linalg_tensorinv", "linalg_tensorsolve", "cholesky_inverse",
    "cholesky_solve", "trace", "linalg_matrix_exp", "linalg_cross", "cross", "linalg_vander", "linalg_eig", "linalg_eigvals",
    "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "linalg_lu_solve", "lu_unpack",
    "linalg_householder_product", "orgqr", "ormqr", "linalg_lstsq", "lu_solve", "geqrf",
    "linalg_ldl_factor", "linalg_ldl_factor_ex", "linalg_ldl_solve",
    // torch.fft
    "fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft", "fft_ihfft", "fft_fft2",
    "fft_ifft2", "fft_rfft2", "fft_irfft2", "fft_hfft2", "fft_ihfft2", "fft_fftn", "fft_ifftn",
    "fft_rfftn", "fft_irfftn", "fft_hfftn", "fft_ihfftn", "fft_fftshift", "fft_ifftshift", "stft",
    "istft",
];

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    views::register_views(r);
    views::register_parts(r);
    views::register_signs(r);
    // the op is the lazy one (Note [The conjugate bit])
    r.def_typed("conj(Tensor(a) self) -> Tensor(a)", |x: T| x.conj_view());
    r.def_typed("resolve_conj(Tensor(a) self) -> Tensor(a)", |x: T| {
        x.resolve_conj()
    });
    r.def_typed("resolve_neg(Tensor(a) self) -> Tensor(a)", |x: T| {
        x.resolve_conj()
    });
    r.def_typed("is_complex(Tensor self) -> bool", |x: T| Ok(x.is_complex()));
    r.def_typed("is_conj(Tensor self) -> bool", |x: T| Ok(x.is_conj()));
    r.allow_complex(COMPLEX_OPS);
}
