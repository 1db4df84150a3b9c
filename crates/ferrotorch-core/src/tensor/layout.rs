//! Sizes, strides and offsets: the arithmetic of strided views.
//!
//! Strides are in elements, not bytes (as PyTorch's). Every product of sizes
//! is overflow-checked, so a shape whose element count does not fit is an
//! error rather than a wrap-around.

use crate::error::Result;
use smallvec::SmallVec;

/// Inline storage for sizes and strides (no heap for up to 6 dims).
pub type Dims = SmallVec<[usize; 6]>;

/// A shape, its strides in elements, and the offset of element 0 in the
/// storage, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    sizes: Dims,
    strides: Dims,
    offset: usize,
}

impl Layout {
    /// A row-major contiguous layout; errors if the element count overflows.
    pub fn contiguous(op: &str, sizes: &[usize]) -> Result<Layout> {
        checked_numel(op, sizes)?;
        Ok(Layout {
            sizes: Dims::from_slice(sizes),
            strides: contiguous_strides(sizes),
            offset: 0,
        })
    }

    /// A layout from parts, unchecked against any storage (callers check
    /// [`Layout::required_elems`] against the storage).
    pub(crate) fn new(sizes: Dims, strides: Dims, offset: usize) -> Layout {
        debug_assert_eq!(sizes.len(), strides.len());
        Layout {
            sizes,
            strides,
            offset,
        }
    }

    /// Sizes.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Offset of element 0, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.sizes.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Row-major contiguous (size-1 dims may have any stride), as PyTorch's
    /// `is_contiguous()`.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1;
        for (&s, &st) in self.sizes.iter().zip(&self.strides).rev() {
            if s == 0 {
                return true;
            }
            if s != 1 {
                if st != expected {
                    return false;
                }
                expected *= s;
            }
        }
        true
    }

    /// Storage elements needed to hold every element of this view:
    /// `offset + 1 + sum((size-1) * stride)`, or 0 when empty (an empty
    /// view reads nothing, so its offset may lie anywhere, as in PyTorch:
    /// selecting from a `[2, 0]` view at the storage's end moves the offset
    /// past it). `None` on overflow.
    pub fn required_elems(&self) -> Option<usize> {
        if self.sizes.contains(&0) {
            return Some(0);
        }
        let mut last = self.offset;
        for (&s, &st) in self.sizes.iter().zip(&self.strides) {
            last = last.checked_add((s - 1).checked_mul(st)?)?;
        }
        last.checked_add(1)
    }

    /// A permutation of a contiguous layout (no gaps, no overlaps), as
    /// PyTorch's `is_non_overlapping_and_dense`.
    pub fn is_dense(&self) -> bool {
        let mut idx: SmallVec<[usize; 6]> = (0..self.ndim()).collect();
        idx.sort_by_key(|&i| (self.strides[i], self.sizes[i]));
        let mut expected = 1;
        for &i in &idx {
            if self.sizes[i] == 1 {
                continue;
            }
            if self.strides[i] != expected {
                return false;
            }
            expected *= self.sizes[i];
        }
        true
    }
}

/// Row-major strides for `sizes` (size-0 and size-1 dims get stride as if 1).
pub fn contiguous_strides(sizes: &[usize]) -> Dims {
    let mut strides = Dims::from_slice(sizes);
    let mut acc = 1usize;
    for i in (0..sizes.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(sizes[i].max(1));
    }
    strides
}

/// Element count, checked for overflow (the byte size must fit in isize).
pub fn checked_numel(op: &str, sizes: &[usize]) -> Result<usize> {
    let mut n: usize = 1;
    for &s in sizes {
        match n.checked_mul(s) {
            Some(v) if v <= (isize::MAX as usize) / 8 => n = v,
            _ => crate::bail!(
                Runtime,
                "{op}: the number of elements of shape {sizes:?} overflows (the size is too large)"
            ),
        }
    }
    Ok(n)
}

/// Wrap a possibly negative dim into `0..ndim` (a 0-dim tensor accepts -1
/// and 0), with PyTorch's IndexError text.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        crate::bail!(
            Index,
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        );
    }
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// Wrap a dim for ops that insert a dimension (unsqueeze): range is ndim+1.
pub fn wrap_dim_insert(dim: i64, ndim: usize) -> Result<usize> {
    wrap_dim(dim, ndim + 1)
}

/// Wrap a list of dims, rejecting repeats (`sum(dim=[0, 0])`).
pub fn wrap_dims(op: &str, dims: &[i64], ndim: usize) -> Result<SmallVec<[usize; 6]>> {
    let mut out: SmallVec<[usize; 6]> = SmallVec::new();
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        crate::ensure!(
            !out.contains(&w),
            Runtime,
            "{op}: dim {w} appears multiple times in the list of dims"
        );
        out.push(w);
    }
    Ok(out)
}

/// Broadcast two shapes (NumPy rules), with PyTorch's error text.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = SmallVec::from_elem(0, n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            crate::bail!(
                Runtime,
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            );
        };
    }
    Ok(out)
}

/// Strides that view a tensor of `sizes`/`strides` as `target` shape by
/// broadcasting (stride 0 on new or expanded dims). Caller checked
/// compatibility with [`broadcast_shapes`].
pub fn broadcast_strides(sizes: &[usize], strides: &[usize], target: &[usize]) -> Dims {
    let off = target.len() - sizes.len();
    let mut out: Dims = SmallVec::from_elem(0, target.len());
    for i in 0..sizes.len() {
        out[off + i] = if sizes[i] == 1 && target[off + i] != 1 {
            0
        } else {
            strides[i]
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity_and_extent() {
        let l = Layout::contiguous("t", &[2, 3, 4]).unwrap();
        assert_eq!(l.strides(), &[12, 4, 1]);
        assert!(l.is_contiguous() && l.is_dense());
        assert_eq!(l.required_elems(), Some(24));
        let t = Layout::new(
            SmallVec::from_slice(&[4, 3]),
            SmallVec::from_slice(&[1, 4]),
            2,
        );
        assert!(!t.is_contiguous() && t.is_dense());
        assert_eq!(t.required_elems(), Some(2 + 3 + 8 + 1));
        let e = Layout::new(
            SmallVec::from_slice(&[0, 3]),
            SmallVec::from_slice(&[3, 1]),
            5,
        );
        assert_eq!(e.required_elems(), Some(0)); // empty: the offset may be anywhere
        assert!(checked_numel("t", &[usize::MAX / 2, 4]).is_err());
    }

    #[test]
    fn broadcasting_and_dims() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap().as_slice(), &[3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2]).unwrap().as_slice(), &[2]);
        let e = broadcast_shapes(&[2, 3], &[4]).unwrap_err();
        assert!(e
            .message()
            .contains("size of tensor a (3) must match the size of tensor b (4)"));
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        let e = wrap_dim(3, 3).unwrap_err();
        assert_eq!(
            e.message(),
            "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
        );
        assert!(wrap_dims("sum", &[0, -2], 2).is_err());
    }
}
