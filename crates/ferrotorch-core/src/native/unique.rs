//! `torch.unique` (flattened or along a dim) and `torch.unique_consecutive`:
//! the distinct elements (or slices), with the inverse mapping and counts.

use crate::dispatch::Registry;
use crate::error::Result;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;
use std::cmp::Ordering;

/// Values, inverse indices and counts.
type Unique = (Tensor, Tensor, Tensor);

/// The groups of equal rows of `rows` (`n` rows of `len` elements), in
/// sorted row order when `sort`, else in order of appearance of runs
/// (consecutive equal rows only). Returns, for each group, its first row
/// and size, and for each row its group. NaN equals nothing, as in torch.
fn group_rows<T: crate::dtype::Element>(
    v: &[T],
    n: usize,
    len: usize,
    sort: bool,
) -> (Vec<usize>, Vec<i64>, Vec<i64>) {
    let row = |i: usize| &v[i * len..(i + 1) * len];
    let mut order: Vec<usize> = (0..n).collect();
    if sort {
        order.sort_by(|&a, &b| {
            for (x, y) in row(a).iter().zip(row(b)) {
                match x.partial_cmp(y) {
                    Some(Ordering::Equal) => continue,
                    Some(o) => return o,
                    // NaN last, as torch's sort
                    None => return x.is_nan().cmp(&y.is_nan()),
                }
            }
            Ordering::Equal
        });
    }
    let mut firsts: Vec<usize> = Vec::new();
    let mut counts: Vec<i64> = Vec::new();
    let mut inverse = vec![0i64; n];
    for (j, &i) in order.iter().enumerate() {
        let same = j > 0 && row(order[j - 1]).iter().zip(row(i)).all(|(a, b)| a == b);
        if !same {
            firsts.push(i);
            counts.push(0);
        }
        *counts.last_mut().expect("pushed above") += 1;
        inverse[i] = firsts.len() as i64 - 1;
    }
    (firsts, inverse, counts)
}

/// Unique rows of `x` moved so that `dim` (or, for `None`, every element)
/// indexes the rows.
fn unique_impl(op: &str, x: &Tensor, dim: Option<i64>, sort: bool) -> Result<Unique> {
    let x = x.detach();
    let (rows, d) = match dim {
        None => (x.reshape(&[-1, 1])?, None),
        Some(d) => {
            let d = wrap_dim(d, x.dim().max(1))?;
            crate::ensure!(x.dim() > 0, Runtime, "{op}: a 0-d tensor has no dim {d}");
            let m = x.movedim(&[d as i64], &[0])?.contiguous()?;
            let n = m.shape()[0] as i64;
            crate::ensure!(
                n > 0 || m.numel() == 0,
                Runtime,
                "{op}: Number of zero sized dimensions is more than one, so unique cannot be applied"
            );
            (m.reshape(&[n, -1])?, Some(d))
        }
    };
    let (n, len) = (rows.shape()[0], rows.shape()[1]);
    let (firsts, inverse, counts) = crate::dispatch_dtype!(x.dtype(), T => {
        let v = rows.contiguous()?.to_vec::<T>()?;
        group_rows::<T>(&v, n, len, sort)
    });
    let k = firsts.len();
    let idx = Tensor::from_vec(firsts.iter().map(|&i| i as i64).collect::<Vec<_>>(), &[k])?;
    let picked = rows.index_select(0, &idx)?;
    let values = match d {
        None => picked.reshape(&[k as i64])?,
        Some(d) => {
            let mut shape: Vec<i64> = x
                .movedim(&[d as i64], &[0])?
                .shape()
                .iter()
                .map(|&s| s as i64)
                .collect();
            shape[0] = k as i64;
            picked.reshape(&shape)?.movedim(&[0], &[d as i64])?
        }
    };
    let inv_shape: Vec<usize> = match d {
        None => x.shape().to_vec(),
        Some(d) => vec![x.shape()[d]],
    };
    Ok((
        values,
        Tensor::from_vec(inverse, &inv_shape)?,
        Tensor::from_vec(counts, &[k])?,
    ))
}

impl Tensor {
    /// `torch.unique(input, sorted=True, return_inverse, return_counts,
    /// dim=None)`: the sorted distinct elements (or slices along `dim`),
    /// where each element went (`inverse`), and how many there were.
    pub fn unique_all(&self, dim: Option<i64>) -> Result<Unique> {
        unique_impl("unique", self, dim, true)
    }

    /// `torch.unique_consecutive`: runs of equal consecutive elements (or
    /// slices along `dim`) collapsed to one.
    pub fn unique_consecutive(&self, dim: Option<i64>) -> Result<Unique> {
        unique_impl("unique_consecutive", self, dim, false)
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
        |x: T, _s: bool, _i: bool, _c: bool| x.unique_all(None),
    );
    r.def_typed(
        "unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
        |x: T, d: i64, _s: bool, _i: bool, _c: bool| x.unique_all(Some(d)),
    );
    r.def_typed(
        "unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)",
        |x: T, _i: bool, _c: bool, d: Option<i64>| x.unique_consecutive(d),
    );
}
