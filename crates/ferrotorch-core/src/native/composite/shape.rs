//! Shape ops made of other ops (torch's CompositeImplicitAutograd): the
//! `atleast_*d`, `*stack` and `*split` families, flips and rotations,
//! diagonals, `block_diag`, `meshgrid`, `cartesian_prod`, the `*_scatter`
//! ops and index helpers. Their gradients come from the ops they are made
//! of.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::native::movement::{cat, stack};
use crate::tensor::create_ops::{DeviceArg, Strided};
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

fn same(t: &Tensor) -> Tensor {
    Clone::clone(t)
}

impl Tensor {
    /// `torch.atleast_1d`: a 0-d tensor as shape `[1]`, others unchanged.
    pub fn atleast_1d(&self) -> Result<Tensor> {
        if self.dim() == 0 {
            return self.reshape(&[1]);
        }
        Ok(same(self))
    }

    /// `torch.atleast_2d`: `[n]` becomes `[1, n]`.
    pub fn atleast_2d(&self) -> Result<Tensor> {
        match self.dim() {
            0 => self.reshape(&[1, 1]),
            1 => self.unsqueeze(0),
            _ => Ok(same(self)),
        }
    }

    /// `torch.atleast_3d`: `[n]` becomes `[1, n, 1]`, `[a, b]` `[a, b, 1]`.
    pub fn atleast_3d(&self) -> Result<Tensor> {
        match self.dim() {
            0 => self.reshape(&[1, 1, 1]),
            1 => self.unsqueeze(0)?.unsqueeze(-1),
            2 => self.unsqueeze(-1),
            _ => Ok(same(self)),
        }
    }

    /// `torch.ravel`: the elements in row-major order, 1-D (a view when it can be).
    pub fn ravel(&self) -> Result<Tensor> {
        self.reshape(&[-1])
    }

    /// `torch.fliplr`: reverse dim 1.
    pub fn fliplr(&self) -> Result<Tensor> {
        crate::ensure!(self.dim() >= 2, Runtime, "Input must be >= 2-d.");
        self.flip(&[1])
    }

    /// `torch.flipud`: reverse dim 0.
    pub fn flipud(&self) -> Result<Tensor> {
        crate::ensure!(self.dim() >= 1, Runtime, "Input must be >= 1-d.");
        self.flip(&[0])
    }

    /// `torch.rot90`: rotate by 90° `k` times in the plane of `dims`, from
    /// the first towards the second.
    pub fn rot90(&self, k: i64, dims: &[i64]) -> Result<Tensor> {
        crate::ensure!(
            dims.len() == 2,
            Runtime,
            "expected total rotation dims == 2, but got dims = {}",
            dims.len()
        );
        crate::ensure!(
            self.dim() >= 2,
            Runtime,
            "expected total dims >= 2, but got total dims = {}",
            self.dim()
        );
        let (a, b) = (
            wrap_dim(dims[0], self.dim())?,
            wrap_dim(dims[1], self.dim())?,
        );
        crate::ensure!(
            a != b,
            Runtime,
            "expected rotation dims to be different, but got dim0 = {} and dim1 = {}",
            dims[0],
            dims[1]
        );
        let (a, b) = (a as i64, b as i64);
        match k.rem_euclid(4) {
            1 => self.flip(&[b])?.transpose(a, b),
            2 => self.flip(&[a, b]),
            3 => self.flip(&[a])?.transpose(a, b),
            _ => self.deep_clone(),
        }
    }

    /// `torch.diag_embed`: the last dim placed on the `offset` diagonal of
    /// the plane (`dim1`, `dim2`) of a new trailing pair of dims.
    pub fn diag_embed(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let nd = self.dim() + 1;
        let (d1, d2) = (wrap_dim(dim1, nd)?, wrap_dim(dim2, nd)?);
        crate::ensure!(
            d1 != d2,
            Runtime,
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        );
        crate::ensure!(
            self.dim() >= 1,
            Runtime,
            "diag_embed: expected at least a 1-D input"
        );
        let n = self.shape()[self.dim() - 1];
        let k = offset.unsigned_abs() as usize;
        let m = n + k;
        // v[i] goes to (i, i + offset): pad v to m, then a one-hot diagonal
        let pad: [i64; 2] = if offset >= 0 {
            [0, k as i64]
        } else {
            [k as i64, 0]
        };
        let v = self.pad(&pad, "constant", 0.0)?;
        // element r of the padded v sits in row r; the mask keeps (r, r + offset)
        // (a `where`, not a product: inf and NaN stay on the diagonal)
        let mask: Vec<bool> = (0..m * m)
            .map(|i| (i % m) as i64 - (i / m) as i64 == offset)
            .collect();
        let mask = Tensor::from_vec(mask, &[m, m])?;
        let out = crate::native::where_(&mask, &v.unsqueeze(-1)?, 0)?;
        out.movedim(&[-2, -1], &[d1 as i64, d2 as i64])
    }

    /// `torch.diag`: a 1-D tensor's matrix with it on diagonal `diagonal`,
    /// or a matrix's diagonal (a copy).
    pub fn diag(&self, diagonal: i64) -> Result<Tensor> {
        match self.dim() {
            1 => self.diag_embed(diagonal, 0, 1),
            2 => self.diagonal(diagonal, 0, 1)?.deep_clone(),
            d => crate::bail!(Runtime, "diag(): Supports 1D or 2D tensors. Got {d}D"),
        }
    }

    /// `torch.diagflat`: the flattened input on diagonal `offset` of a matrix.
    pub fn diagflat(&self, offset: i64) -> Result<Tensor> {
        self.reshape(&[-1])?.diag_embed(offset, 0, 1)
    }

    /// `torch.tensor_split` into `sections` nearly equal parts (the first
    /// `size % sections` one longer).
    pub fn tensor_split_sections(&self, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        );
        crate::ensure!(
            sections > 0,
            Runtime,
            "number of sections must be larger than 0, got {sections}"
        );
        let d = wrap_dim(dim, self.dim())?;
        let size = self.shape()[d] as i64;
        let (q, r) = (size / sections, size % sections);
        // one handle per section: a count no memory holds is an error, not
        // an abort (torch: std::bad_alloc)
        let mut out = Vec::new();
        crate::ensure!(
            usize::try_from(sections).is_ok_and(|n| out.try_reserve_exact(n).is_ok()),
            Runtime,
            "tensor_split: cannot allocate {sections} sections"
        );
        let mut start = 0;
        for i in 0..sections {
            let len = q + i64::from(i < r);
            out.push(self.narrow(d as i64, start, len as usize)?);
            start += len;
        }
        Ok(out)
    }

    /// `torch.tensor_split` at `indices` along `dim` (indices past the end
    /// give empty parts, as torch).
    pub fn tensor_split_indices(&self, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            self.dim() > 0,
            Runtime,
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        );
        let d = wrap_dim(dim, self.dim())?;
        let size = self.shape()[d] as i64;
        let clampi = |i: i64| {
            if i < 0 {
                (i + size).max(0)
            } else {
                i.min(size)
            }
        };
        let mut out = Vec::with_capacity(indices.len() + 1);
        let mut start = 0;
        for &i in indices.iter().chain(std::iter::once(&size)) {
            let end = clampi(i).max(start);
            out.push(self.narrow(d as i64, start, (end - start) as usize)?);
            start = end;
        }
        Ok(out)
    }

    /// `torch.tensor_split` by a tensor: a 0-d count of sections or a 1-D list of indices.
    pub fn tensor_split_tensor(&self, spec: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(
            !spec.is_floating_point() && spec.dtype() != DType::Bool && spec.dim() <= 1,
            Runtime,
            "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor of dtype long, but got a tensor with {} dims and dtype {}",
            spec.dim(),
            spec.dtype().name()
        );
        let v = spec.to_vec_i64()?;
        if spec.dim() == 0 {
            self.tensor_split_sections(v[0], dim)
        } else {
            self.tensor_split_indices(&v, dim)
        }
    }

    fn split_exact(&self, name: &str, sections: i64, dim: usize) -> Result<Vec<Tensor>> {
        let size = self.shape()[dim] as i64;
        crate::ensure!(
            sections != 0 && size % sections == 0,
            Runtime,
            "torch.{name} attempted to split along dimension {dim}, but the size of the dimension {size} is not divisible by the split_size {sections}!"
        );
        self.tensor_split_sections(sections, dim as i64)
    }

    /// `torch.hsplit`: split along dim 1 (dim 0 of a 1-D tensor) into equal sections.
    pub fn hsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(self.dim() >= 1, Runtime, "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with {} dimensions!", self.dim());
        self.split_exact("hsplit", sections, usize::from(self.dim() > 1))
    }

    /// `torch.vsplit`: split along dim 0 into equal sections.
    pub fn vsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(self.dim() >= 2, Runtime, "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with {} dimensions!", self.dim());
        self.split_exact("vsplit", sections, 0)
    }

    /// `torch.dsplit`: split along dim 2 into equal sections.
    pub fn dsplit(&self, sections: i64) -> Result<Vec<Tensor>> {
        crate::ensure!(self.dim() >= 3, Runtime, "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with {} dimensions!", self.dim());
        self.split_exact("dsplit", sections, 2)
    }

    fn split_dim_for(&self, name: &str, min: usize, dim: usize) -> Result<i64> {
        crate::ensure!(self.dim() >= min, Runtime, "torch.{name} requires a tensor with at least {min} dimension, but got a tensor with {} dimensions!", self.dim());
        Ok(dim as i64)
    }

    /// `torch.hsplit` at indices.
    pub fn hsplit_indices(&self, indices: &[i64]) -> Result<Vec<Tensor>> {
        let d = self.split_dim_for("hsplit", 1, usize::from(self.dim() > 1))?;
        self.tensor_split_indices(indices, d)
    }

    /// `torch.vsplit` at indices.
    pub fn vsplit_indices(&self, indices: &[i64]) -> Result<Vec<Tensor>> {
        let d = self.split_dim_for("vsplit", 2, 0)?;
        self.tensor_split_indices(indices, d)
    }

    /// `torch.dsplit` at indices.
    pub fn dsplit_indices(&self, indices: &[i64]) -> Result<Vec<Tensor>> {
        let d = self.split_dim_for("dsplit", 3, 2)?;
        self.tensor_split_indices(indices, d)
    }

    /// `torch.select_scatter`: a copy of `self` with `src` at index `index` of `dim`.
    pub fn select_scatter(&self, src: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
        let out = self.deep_clone()?;
        out.select(dim, index)?.copy_(src)?;
        Ok(out)
    }

    /// `torch.slice_scatter`: a copy of `self` with `src` at `start:end:step` of `dim`.
    pub fn slice_scatter(
        &self,
        src: &Tensor,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        let out = self.deep_clone()?;
        out.slice(dim, start, end, step)?.copy_(src)?;
        Ok(out)
    }

    /// `torch.diagonal_scatter`: a copy of `self` with `src` on a diagonal.
    pub fn diagonal_scatter(
        &self,
        src: &Tensor,
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> Result<Tensor> {
        let out = self.deep_clone()?;
        out.diagonal(offset, dim1, dim2)?.copy_(src)?;
        Ok(out)
    }
}

fn check_nonempty(name: &str, tensors: &[Tensor]) -> Result<()> {
    crate::ensure!(
        !tensors.is_empty(),
        Runtime,
        "{name} expects a non-empty TensorList"
    );
    Ok(())
}

/// `torch.hstack`: concatenate along dim 1 (dim 0 for 1-D tensors).
pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
    check_nonempty("hstack", tensors)?;
    let t: Vec<Tensor> = tensors
        .iter()
        .map(Tensor::atleast_1d)
        .collect::<Result<_>>()?;
    cat(&t, if t[0].dim() == 1 { 0 } else { 1 })
}

/// `torch.vstack` (and `row_stack`): concatenate the `atleast_2d` forms along dim 0.
pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
    check_nonempty("vstack", tensors)?;
    let t: Vec<Tensor> = tensors
        .iter()
        .map(Tensor::atleast_2d)
        .collect::<Result<_>>()?;
    cat(&t, 0)
}

/// `torch.dstack`: concatenate the `atleast_3d` forms along dim 2.
pub fn dstack(tensors: &[Tensor]) -> Result<Tensor> {
    check_nonempty("dstack", tensors)?;
    let t: Vec<Tensor> = tensors
        .iter()
        .map(Tensor::atleast_3d)
        .collect::<Result<_>>()?;
    cat(&t, 2)
}

/// `torch.column_stack`: 0-d and 1-D tensors as columns, then `hstack`.
pub fn column_stack(tensors: &[Tensor]) -> Result<Tensor> {
    check_nonempty("column_stack", tensors)?;
    let t: Vec<Tensor> = tensors
        .iter()
        .map(|t| {
            if t.dim() <= 1 {
                t.reshape(&[t.numel() as i64, 1])
            } else {
                Ok(same(t))
            }
        })
        .collect::<Result<_>>()?;
    cat(&t, 1)
}

/// `torch.broadcast_tensors`: every tensor expanded to the common shape.
pub fn broadcast_tensors(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut shape: Vec<usize> = Vec::new();
    for t in tensors {
        shape = crate::tensor::layout::broadcast_shapes(&shape, t.shape())?.to_vec();
    }
    tensors.iter().map(|t| t.broadcast_to(&shape)).collect()
}

/// `torch.meshgrid` with `indexing` `"ij"` (matrix) or `"xy"` (Cartesian).
pub fn meshgrid(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    crate::ensure!(
        !tensors.is_empty(),
        Runtime,
        "meshgrid expects a non-empty TensorList"
    );
    crate::ensure!(
        indexing == "ij" || indexing == "xy",
        Runtime,
        "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}"
    );
    for t in tensors {
        crate::ensure!(
            t.dim() <= 1,
            Runtime,
            "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}",
            t.dim()
        );
        crate::ensure!(
            t.dtype() == tensors[0].dtype(),
            Runtime,
            "meshgrid expects all tensors to have the same dtype"
        );
    }
    // "xy" is "ij" with the first two inputs swapped (and their grids swapped back)
    let swap = indexing == "xy" && tensors.len() >= 2;
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    if swap {
        order.swap(0, 1);
    }
    let sizes: Vec<i64> = order.iter().map(|&i| tensors[i].numel() as i64).collect();
    let n = tensors.len();
    let mut grids = vec![None; n];
    for (pos, &i) in order.iter().enumerate() {
        let mut view = vec![1i64; n];
        view[pos] = sizes[pos];
        let g = tensors[i].reshape(&view)?.expand(&sizes)?;
        grids[i] = Some(g);
    }
    Ok(grids
        .into_iter()
        .map(|g| g.expect("every grid is set"))
        .collect())
}

/// `torch.cartesian_prod`: every combination of the 1-D inputs' elements, one per row.
pub fn cartesian_prod(tensors: &[Tensor]) -> Result<Tensor> {
    for t in tensors {
        crate::ensure!(
            t.dim() == 1,
            Runtime,
            "Expect a 1D vector, but got shape {:?}",
            t.shape()
        );
    }
    if tensors.len() == 1 {
        return Ok(same(&tensors[0]));
    }
    let grids = meshgrid(tensors, "ij")?;
    let flat: Vec<Tensor> = grids
        .iter()
        .map(|g| g.reshape(&[-1]))
        .collect::<Result<_>>()?;
    stack(&flat, 1)
}

/// `torch.block_diag`: the inputs (0-, 1- or 2-D) along the diagonal of one matrix.
pub fn block_diag(tensors: &[Tensor]) -> Result<Tensor> {
    let mut dtype = tensors
        .first()
        .map_or(crate::dtype::get_default_dtype(), Tensor::dtype);
    let mut mats = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        crate::ensure!(t.dim() <= 2, Runtime, "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {} dimensions", t.dim());
        dtype = crate::dtype::promote_types(dtype, t.dtype());
        mats.push(match t.dim() {
            0 => t.reshape(&[1, 1])?,
            1 => t.unsqueeze(0)?,
            _ => same(t),
        });
    }
    let cols: usize = mats.iter().map(|m| m.shape()[1]).sum();
    let mut rows = Vec::with_capacity(mats.len());
    let mut before = 0;
    for m in &mats {
        let (r, c) = (m.shape()[0], m.shape()[1]);
        let left = Tensor::zeros(&[r, before], dtype)?;
        let right = Tensor::zeros(&[r, cols - before - c], dtype)?;
        rows.push(cat(&[left, m.to_dtype(dtype)?, right], 1)?);
        before += c;
    }
    if rows.is_empty() {
        return Tensor::zeros(&[0, 0], dtype);
    }
    cat(&rows, 0)
}

fn tri_indices(
    row: i64,
    col: i64,
    offset: i64,
    upper: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let name = if upper {
        "triu_indices"
    } else {
        "tril_indices"
    };
    crate::ensure!(row >= 0, Runtime, "row must be non-negative, got{row}");
    crate::ensure!(col >= 0, Runtime, "col must be non-negative, got{col}");
    let dtype = dtype.unwrap_or(DType::I64);
    crate::ensure!(
        matches!(dtype, DType::I64 | DType::I32),
        Runtime,
        "\"{name}\" not implemented for '{}'",
        dtype.name_title()
    );
    let (mut rs, mut cs) = (Vec::new(), Vec::new());
    for r in 0..row {
        for c in 0..col {
            let keep = if upper {
                c - r >= offset
            } else {
                c - r <= offset
            };
            if keep {
                rs.push(r);
                cs.push(c);
            }
        }
    }
    let n = rs.len();
    rs.extend(cs);
    Tensor::from_vec(rs, &[2, n])?.to_dtype(dtype)
}

/// `torch.unravel_index`: flat indices as one coordinate tensor per dim of `shape`.
pub fn unravel_index(indices: &Tensor, shape: &[i64]) -> Result<Vec<Tensor>> {
    crate::ensure!(
        !indices.is_floating_point() && indices.dtype() != DType::Bool,
        Type,
        "expected 'indices' to be integer dtype, but got {}",
        indices.dtype().name()
    );
    crate::ensure!(
        shape.iter().all(|&s| s >= 0),
        Value,
        "'shape' cannot have negative values, but got {shape:?}"
    );
    // the number of elements may pass int64's range (torch still answers):
    // then every non-negative int64 index is in bounds
    let total = shape.iter().try_fold(1i64, |a, &s| a.checked_mul(s));
    let idx = indices.to_dtype(DType::I64)?;
    let v = idx.to_vec_i64()?;
    let inside = |i: i64| match total {
        Some(t) => i >= -t && i < t,
        None => i >= 0,
    };
    crate::ensure!(
        v.iter().all(|&i| inside(i)),
        Index,
        "index {} is out of bounds for shape {shape:?}",
        v.iter().find(|&&i| !inside(i)).copied().unwrap_or(0)
    );
    let mut rem = match total {
        Some(t) => idx.remainder(t.max(1))?,
        None => idx,
    };
    // coordinates from the last dim back; the first takes what is left
    let mut out = Vec::with_capacity(shape.len());
    for (k, &s) in shape.iter().enumerate().rev() {
        if k == 0 {
            out.push(rem.clone());
        } else if s == 0 {
            out.push(rem.mul(0)?);
        } else {
            out.push(rem.remainder(s)?);
            rem = rem.div_mode(s, Some("floor"))?;
        }
    }
    out.reverse();
    Ok(out)
}

pub(crate) fn register(r: &mut Registry) {
    r.def_typed("atleast_1d(Tensor self) -> Tensor", |x: Tensor| {
        x.atleast_1d()
    });
    r.def_typed("atleast_2d(Tensor self) -> Tensor", |x: Tensor| {
        x.atleast_2d()
    });
    r.def_typed("atleast_3d(Tensor self) -> Tensor", |x: Tensor| {
        x.atleast_3d()
    });
    r.def_typed(
        "atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]",
        |t: Vec<Tensor>| t.iter().map(Tensor::atleast_1d).collect::<Result<Vec<_>>>(),
    );
    r.def_typed(
        "atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]",
        |t: Vec<Tensor>| t.iter().map(Tensor::atleast_2d).collect::<Result<Vec<_>>>(),
    );
    r.def_typed(
        "atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]",
        |t: Vec<Tensor>| t.iter().map(Tensor::atleast_3d).collect::<Result<Vec<_>>>(),
    );
    r.def_typed("ravel(Tensor(a) self) -> Tensor(a)", |x: Tensor| x.ravel());
    r.def_typed("fliplr(Tensor self) -> Tensor", |x: Tensor| x.fliplr());
    r.def_typed("flipud(Tensor self) -> Tensor", |x: Tensor| x.flipud());
    r.def_typed(
        "rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor",
        |x: Tensor, k: i64, d: Vec<i64>| x.rot90(k, &d),
    );
    r.def_typed(
        "diag(Tensor self, int diagonal=0) -> Tensor",
        |x: Tensor, d: i64| x.diag(d),
    );
    r.def_typed(
        "diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
        |x: Tensor, o: i64, d1: i64, d2: i64| x.diag_embed(o, d1, d2),
    );
    r.def_typed(
        "diagflat(Tensor self, int offset=0) -> Tensor",
        |x: Tensor, o: i64| x.diagflat(o),
    );
    r.def_typed(
        "tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]",
        |x: Tensor, s: i64, d: i64| x.tensor_split_sections(s, d),
    );
    r.def_typed(
        "tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]",
        |x: Tensor, i: Vec<i64>, d: i64| x.tensor_split_indices(&i, d),
    );
    r.def_typed(
        "tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]",
        |x: Tensor, t: Tensor, d: i64| x.tensor_split_tensor(&t, d),
    );
    r.def_typed(
        "hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
        |x: Tensor, s: i64| x.hsplit(s),
    );
    r.def_typed(
        "hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
        |x: Tensor, i: Vec<i64>| x.hsplit_indices(&i),
    );
    r.def_typed(
        "vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
        |x: Tensor, s: i64| x.vsplit(s),
    );
    r.def_typed(
        "vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
        |x: Tensor, i: Vec<i64>| x.vsplit_indices(&i),
    );
    r.def_typed(
        "dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
        |x: Tensor, s: i64| x.dsplit(s),
    );
    r.def_typed(
        "dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
        |x: Tensor, i: Vec<i64>| x.dsplit_indices(&i),
    );
    r.def_typed("hstack(Tensor[] tensors) -> Tensor", |t: Vec<Tensor>| {
        hstack(&t)
    });
    r.def_typed("vstack(Tensor[] tensors) -> Tensor", |t: Vec<Tensor>| {
        vstack(&t)
    });
    r.def_typed("row_stack(Tensor[] tensors) -> Tensor", |t: Vec<Tensor>| {
        vstack(&t)
    });
    r.def_typed("dstack(Tensor[] tensors) -> Tensor", |t: Vec<Tensor>| {
        dstack(&t)
    });
    r.def_typed(
        "column_stack(Tensor[] tensors) -> Tensor",
        |t: Vec<Tensor>| column_stack(&t),
    );
    r.def_typed(
        "broadcast_tensors(Tensor[] tensors) -> Tensor[]",
        |t: Vec<Tensor>| broadcast_tensors(&t),
    );
    r.def_typed(
        "meshgrid(Tensor[] tensors) -> Tensor[]",
        |t: Vec<Tensor>| meshgrid(&t, "ij"),
    );
    r.def_typed(
        "meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]",
        |t: Vec<Tensor>, i: String| meshgrid(&t, &i),
    );
    r.def_typed(
        "cartesian_prod(Tensor[] tensors) -> Tensor",
        |t: Vec<Tensor>| cartesian_prod(&t),
    );
    r.def_typed(
        "block_diag(Tensor[] tensors) -> Tensor",
        |t: Vec<Tensor>| block_diag(&t),
    );
    r.def_typed(
        "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
        |x: Tensor, s: Tensor, d: i64, i: i64| x.select_scatter(&s, d, i),
    );
    r.def_typed(
        "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
        |x: Tensor, s: Tensor, d: i64, a: Option<i64>, b: Option<i64>, st: i64| x.slice_scatter(&s, d, a, b, st),
    );
    r.def_typed(
        "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
        |x: Tensor, s: Tensor, o: i64, d1: i64, d2: i64| x.diagonal_scatter(&s, o, d1, d2),
    );
    r.def_typed(
        "tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        |r: i64, c: i64, o: i64, dt: Option<DType>, _l: Strided, _d: DeviceArg, _p: Option<bool>| {
            tri_indices(r, c, o, false, dt)
        },
    );
    r.def_typed(
        "triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        |r: i64, c: i64, o: i64, dt: Option<DType>, _l: Strided, _d: DeviceArg, _p: Option<bool>| {
            tri_indices(r, c, o, true, dt)
        },
    );
    r.def_typed(
        "unravel_index(Tensor indices, int[] shape) -> Tensor[]",
        |i: Tensor, s: Vec<i64>| unravel_index(&i, &s),
    );
}
