//! `torch.linalg`: factorizations and what is built on them.
//!
//! | file | ops |
//! |---|---|
//! | `kernels` | one matrix at a time, in `f64`: LU, triangular solve, Cholesky, QR (LAPACK's conventions); faer's LU solve, inverse, eigh, SVD |
//! | `solve` | `solve`, `inv`, `det`, `slogdet`, `lu_factor`, `lu`, `lu_solve`, `solve_triangular`, `cholesky`, ... |
//! | `qr` | `qr`, `geqrf`, `householder_product`, `ormqr`, `lstsq` |
//! | `spectral` | `eigh`, `eigvalsh`, `svd`, `svdvals`, `pinv`, `matrix_rank`, `cond` |
//! | `ldl`, `ldl_kernels` | `ldl_factor`, `ldl_factor_ex`, `ldl_solve` (Bunch-Kaufman, LAPACK's packed form; `zsytrf`/`zhetrf` for complex) |
//! | `misc` | norms, `matrix_power`, `matrix_exp`, `multi_dot`, `vecdot`, `tensorinv`, `tensorsolve`, `vander` |
//!
//! # Note [Factorizations in f64]
//! Every factorization runs in `f64` on a row-major copy of each matrix of
//! the batch (faer underneath for LU solves, eigh and SVD), and its results
//! are cast back to the input's dtype: float32 results are the exactly
//! rounded f64 ones, within torch's float32 tolerance of LAPACK's. The
//! derivative formulas (`autograd::derivatives::decomp`) are written with
//! tensor ops, so they are differentiable again.

pub(crate) mod complex_kernels;
pub(crate) mod complex_linalg;
pub(crate) mod complex_solve;
pub(crate) mod eig;
pub(crate) mod kernels;
pub(crate) mod ldl;
mod ldl_kernels;
pub(crate) mod misc;
pub(crate) mod qr;
pub(crate) mod solve;
pub(crate) mod spectral;

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use kernels::M;

/// Check a linalg input: floating, at least 2-D, square when `square`.
pub(crate) fn check_matrix(op: &str, a: &Tensor, square: bool) -> Result<()> {
    check_precision(op, a)?;
    crate::ensure!(
        matches!(a.dtype(), DType::F32 | DType::F64),
        Runtime,
        "{op}: Expected a floating point or complex tensor as input. Got {}",
        a.dtype().name_title()
    );
    check_shape(op, a, square)
}

/// [`check_matrix`] for the ops that also take complex matrices
/// (`complex_linalg`).
pub(crate) fn check_matrix_c(op: &str, a: &Tensor, square: bool) -> Result<()> {
    check_precision(op, a)?;
    if a.is_complex() {
        check_shape(op, a, square)
    } else {
        check_matrix(op, a, square)
    }
}

/// Half-precision matrices (`float16`, `bfloat16`, `complex32`) are
/// refused, as torch's CPU linalg refuses them.
pub(crate) fn check_precision(op: &str, a: &Tensor) -> Result<()> {
    crate::ensure!(
        !matches!(a.dtype(), DType::F16 | DType::BF16 | DType::C32),
        NotImplemented,
        "{op}: Low precision dtypes not supported. Got {}",
        a.dtype().name_title()
    );
    Ok(())
}

/// The shape half of [`check_matrix`] (any dtype).
pub(crate) fn check_shape(op: &str, a: &Tensor, square: bool) -> Result<()> {
    crate::ensure!(
        a.dim() >= 2,
        Runtime,
        "{op}: The input tensor A must have at least 2 dimensions."
    );
    if square {
        let n = a.dim();
        crate::ensure!(
            a.shape()[n - 1] == a.shape()[n - 2],
            Runtime,
            "{op}: A must be batches of square matrices, but they are {} by {} matrices",
            a.shape()[n - 2],
            a.shape()[n - 1]
        );
    }
    Ok(())
}

/// The batch dims of a `[..., r, c]` tensor.
pub(crate) fn batch_of(a: &Tensor) -> Vec<usize> {
    a.shape()[..a.dim() - 2].to_vec()
}

/// Each matrix of a `[..., r, c]` tensor, in `f64`.
pub(crate) fn mats(a: &Tensor) -> Result<Vec<M>> {
    let (r, c) = (a.shape()[a.dim() - 2], a.shape()[a.dim() - 1]);
    let data = a
        .detach()
        .to_dtype(DType::F64)?
        .contiguous()?
        .to_vec::<f64>()?;
    let per = r * c;
    let count: usize = batch_of(a).iter().product();
    Ok((0..count)
        .map(|b| M {
            r,
            c,
            d: data[b * per..(b + 1) * per].to_vec(),
        })
        .collect())
}

/// A `[batch..., r, c]` tensor of `dtype` from its matrices.
pub(crate) fn from_mats(
    batch: &[usize],
    r: usize,
    c: usize,
    ms: &[M],
    dtype: DType,
) -> Result<Tensor> {
    let mut data = Vec::with_capacity(ms.len() * r * c);
    for m in ms {
        debug_assert!(m.r == r && m.c == c);
        data.extend_from_slice(&m.d);
    }
    let mut shape = batch.to_vec();
    shape.extend([r, c]);
    Tensor::from_vec(data, &shape)?.to_dtype(dtype)
}

/// A `[batch..., n]` tensor of `dtype` from one vector per matrix.
pub(crate) fn from_vecs(
    batch: &[usize],
    n: usize,
    vs: &[Vec<f64>],
    dtype: DType,
) -> Result<Tensor> {
    let data: Vec<f64> = vs.iter().flatten().copied().collect();
    let mut shape = batch.to_vec();
    shape.push(n);
    Tensor::from_vec(data, &shape)?.to_dtype(dtype)
}

/// `[batch...]` integers (an `info` tensor).
pub(crate) fn from_ints(batch: &[usize], v: Vec<i32>) -> Result<Tensor> {
    Tensor::from_vec(v, batch)
}

/// A matrix's adjoint: the last two dims swapped, conjugated when complex
/// (`mH`; for real matrices the transpose).
pub(crate) fn mt(t: &Tensor) -> Result<Tensor> {
    let x = t.transpose(-1, -2)?;
    if t.is_complex() {
        x.conj()
    } else {
        Ok(x)
    }
}

/// The first batch index whose `info` is non-zero, for torch's messages
/// ("(Batch element 3): ...").
pub(crate) fn first_failure(info: &[i32]) -> Option<(usize, i32)> {
    info.iter()
        .enumerate()
        .find(|(_, &v)| v != 0)
        .map(|(i, &v)| (i, v))
}

/// A pivoting factorization run on each matrix of a batch (`lu_factor`,
/// `ldl_factor`, real or complex): the factors, every matrix's pivots in
/// one list, and LAPACK's `info` per matrix.
pub(crate) fn factor_each<T>(
    ms: Vec<T>,
    mut f: impl FnMut(T) -> (T, Vec<i32>, i32),
) -> (Vec<T>, Vec<i32>, Vec<i32>) {
    let (mut out, mut pivs, mut infos) = (Vec::new(), Vec::new(), Vec::new());
    for m in ms {
        let (m, p, i) = f(m);
        out.push(m);
        pivs.extend(p);
        infos.push(i);
    }
    (out, pivs, infos)
}

/// torch's prefix for an error in one matrix of a batch.
pub(crate) fn batch_prefix(batched: bool, i: usize) -> String {
    if batched {
        format!("(Batch element {i}): ")
    } else {
        String::new()
    }
}

pub(crate) fn register(r: &mut Registry) {
    solve::register(r);
    qr::register(r);
    spectral::register(r);
    misc::register(r);
    eig::register(r);
    ldl::register(r);
}
