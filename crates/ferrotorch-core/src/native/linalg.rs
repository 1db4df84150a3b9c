//! Matrix products: `matmul` (full torch semantics), `mm`, `bmm`, `mv`,
//! `dot`, `outer`, `addmm`, `baddbmm`, `tensordot`. `einsum` lives in
//! `einsum.rs` and reduces to these.
//!
//! Operands go to the GEMM with their strides as they are (a transposed
//! operand is not copied); half precision and integer dtypes are supported,
//! bf16 computes through f32. Like PyTorch, operands must share a dtype.

use crate::dtype::DType;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;
use ferrotorch_kernels::gemm::{GemmElem, MatMut, MatRef};
use ferrotorch_kernels::parallel;

fn check_dtypes(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    crate::ensure!(
        a.dtype() == b.dtype(),
        Runtime,
        "{op}: expected both operands to have the same dtype, but got: {} != {}",
        a.dtype().name(),
        b.dtype().name()
    );
    crate::ensure!(
        a.dtype() != DType::Bool,
        NotImplemented,
        "{op}: \"addmm_impl_cpu_\" not implemented for 'Bool'"
    );
    Ok(())
}

fn shape_err(op: &str, a: &[usize], b: &[usize], k1: usize, k2: usize) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::Runtime,
        format!("{op}: shapes {a:?} and {b:?} cannot be multiplied ({k1} != {k2})"),
    )
}

/// `out[b] = beta * out[b] + alpha * a[b] @ b[b]` for each batch entry of
/// already-broadcast 3-D operands (`[B, m, k]`, `[B, k, n]`, `[B, m, n]`).
fn batched_gemm(a: &Tensor, b: &Tensor, out: &Tensor, alpha: Scalar, beta: Scalar) -> Result<()> {
    let (bs, m, k, n) = (out.shape()[0], out.shape()[1], a.shape()[2], out.shape()[2]);
    let _g = crate::storage::lock_storages(&[a.storage(), b.storage()], &[out.storage()]);
    #[allow(clippy::too_many_arguments)]
    fn run<T: GemmElem + crate::dtype::Element>(
        a: &Tensor,
        b: &Tensor,
        out: &Tensor,
        bs: usize,
        m: usize,
        k: usize,
        n: usize,
        alpha: Scalar,
        beta: Scalar,
    ) {
        let (pa, pb, po) = (
            a.data_ptr() as usize,
            b.data_ptr() as usize,
            out.data_ptr() as usize,
        );
        let (sa, sb, so) = (
            a.stride().to_vec(),
            b.stride().to_vec(),
            out.stride().to_vec(),
        );
        let (al, be): (T, T) = (alpha.to_elem(), beta.to_elem());
        let one = |i: usize| unsafe {
            T::gemm(
                m,
                n,
                k,
                MatMut {
                    ptr: (po as *mut T).add(i * so[0]),
                    rs: so[1] as isize,
                    cs: so[2] as isize,
                },
                MatRef {
                    ptr: (pa as *const T).add(i * sa[0]),
                    rs: sa[1] as isize,
                    cs: sa[2] as isize,
                },
                MatRef {
                    ptr: (pb as *const T).add(i * sb[0]),
                    rs: sb[1] as isize,
                    cs: sb[2] as isize,
                },
                al,
                be,
            )
        };
        // Small matrices: parallelise over the batch; large ones: inside GEMM.
        if bs > 1 && m * n * k < 128 * 128 * 128 {
            parallel::parallel_for(bs, 1.max(32 * 32 * 32 / (m * n * k).max(1)), |r| {
                r.for_each(one)
            });
        } else {
            (0..bs).for_each(one);
        }
    }
    match out.dtype() {
        DType::F32 => run::<f32>(a, b, out, bs, m, k, n, alpha, beta),
        DType::F64 => run::<f64>(a, b, out, bs, m, k, n, alpha, beta),
        DType::F16 => run::<crate::f16>(a, b, out, bs, m, k, n, alpha, beta),
        DType::I64 => run::<i64>(a, b, out, bs, m, k, n, alpha, beta),
        DType::I32 => run::<i32>(a, b, out, bs, m, k, n, alpha, beta),
        DType::I16 => run::<i16>(a, b, out, bs, m, k, n, alpha, beta),
        DType::I8 => run::<i8>(a, b, out, bs, m, k, n, alpha, beta),
        DType::U8 => run::<u8>(a, b, out, bs, m, k, n, alpha, beta),
        d => crate::bail!(
            NotImplemented,
            "matmul: not implemented for '{}'",
            d.name_title()
        ),
    }
    Ok(())
}

/// Batched product of 3-D operands with matching batch size into a fresh
/// `[B, m, n]` tensor (bf16 goes through f32).
fn bmm_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype() == DType::BF16 {
        return bmm_raw(&a.to_dtype(DType::F32)?, &b.to_dtype(DType::F32)?)?.to_dtype(DType::BF16);
    }
    let out = Tensor::empty(&[a.shape()[0], a.shape()[1], b.shape()[2]], a.dtype())?;
    if a.shape()[2] == 0 {
        out.fill_raw(Scalar::Int(0));
        return Ok(out);
    }
    batched_gemm(a, b, &out, Scalar::Int(1), Scalar::Int(0))?;
    Ok(out)
}

crate::ops! {
    register = register;
    /// Matrix product of 2-D tensors (`torch.mm`).
    #[op = "mm(Tensor self, Tensor mat2) -> Tensor"]
    pub fn mm(&self, other: &Tensor) -> Result<Tensor> {
        if self.dtype().is_complex() || other.dtype().is_complex() {
            return crate::native::complex::product(self, other, |a, b| a.mm(b));
        }
        let y = crate::autograd::raw(&[self, other], || self.mm_impl(other))?;
        crate::autograd::derivatives::linalg::matmul("MmBackward0", self, other, y)
    }

    fn mm_impl(&self, other: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 2,
            Runtime,
            "mm: self must be a matrix, got {}-D",
            self.dim()
        );
        crate::ensure!(
            other.dim() == 2,
            Runtime,
            "mm: mat2 must be a matrix, got {}-D",
            other.dim()
        );
        check_dtypes("mm", self, other)?;
        if self.shape()[1] != other.shape()[0] {
            return Err(shape_err(
                "mm",
                self.shape(),
                other.shape(),
                self.shape()[1],
                other.shape()[0],
            ));
        }
        bmm_raw(&self.unsqueeze(0)?, &other.unsqueeze(0)?)?.squeeze_dims(&[0])
    }

    /// Batched matrix product of 3-D tensors (`torch.bmm`).
    #[op = "bmm(Tensor self, Tensor mat2) -> Tensor"]
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        if self.dtype().is_complex() || other.dtype().is_complex() {
            return crate::native::complex::product(self, other, |a, b| a.bmm(b));
        }
        let y = crate::autograd::raw(&[self, other], || self.bmm_impl(other))?;
        crate::autograd::derivatives::linalg::matmul("BmmBackward0", self, other, y)
    }

    fn bmm_impl(&self, other: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 3,
            Runtime,
            "bmm: batch1 must be a 3D tensor, got {}-D",
            self.dim()
        );
        crate::ensure!(
            other.dim() == 3,
            Runtime,
            "bmm: batch2 must be a 3D tensor, got {}-D",
            other.dim()
        );
        check_dtypes("bmm", self, other)?;
        crate::ensure!(
            self.shape()[0] == other.shape()[0],
            Runtime,
            "bmm: batch1 and batch2 must have same number of batches, got {} and {}",
            self.shape()[0],
            other.shape()[0]
        );
        if self.shape()[2] != other.shape()[1] {
            return Err(shape_err(
                "bmm",
                self.shape(),
                other.shape(),
                self.shape()[2],
                other.shape()[1],
            ));
        }
        bmm_raw(self, other)
    }

    /// Matrix-vector product (`torch.mv`).
    #[op = "mv(Tensor self, Tensor vec) -> Tensor"]
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 2 && vec.dim() == 1,
            Runtime,
            "mv: vector + matrix @ vector expected, got {}, {}, {}",
            1,
            self.dim(),
            vec.dim()
        );
        check_dtypes("mv", self, vec)?;
        if self.shape()[1] != vec.shape()[0] {
            return Err(shape_err(
                "mv",
                self.shape(),
                vec.shape(),
                self.shape()[1],
                vec.shape()[0],
            ));
        }
        self.mm(&vec.unsqueeze(1)?)?.squeeze_dims(&[1])
    }

    /// Inner product of 1-D tensors (`torch.dot`), a 0-dim tensor.
    #[op = "dot(Tensor self, Tensor tensor) -> Tensor"]
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 1 && other.dim() == 1,
            Runtime,
            "1D tensors expected, but got {}D and {}D tensors",
            self.dim(),
            other.dim()
        );
        check_dtypes("dot", self, other)?;
        crate::ensure!(
            self.numel() == other.numel(),
            Runtime,
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            self.numel(),
            other.numel(),
            self.numel(),
            other.numel()
        );
        self.unsqueeze(0)?.mm(&other.unsqueeze(1)?)?.reshape(&[])
    }

    /// Outer product of 1-D tensors (`torch.outer`).
    #[op = "outer(Tensor self, Tensor vec2) -> Tensor"]
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 1 && other.dim() == 1,
            Runtime,
            "outer: expected 1D tensors, got {}D and {}D",
            self.dim(),
            other.dim()
        );
        self.unsqueeze(1)?.mul(&other.unsqueeze(0)?)
    }

    /// `torch.matmul`: dot, matrix-vector, matrix-matrix or batched product
    /// with broadcast batch dims, depending on the operands' ranks.
    #[op = "matmul(Tensor self, Tensor other) -> Tensor"]
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        if self.dtype().is_complex() || other.dtype().is_complex() {
            return crate::native::complex::product(self, other, |a, b| a.matmul(b));
        }
        // Note [Folded matmul]: a batch of rows times one shared matrix (a
        // linear layer on 3-D input) is one 2-D product over the folded
        // rows, and is *recorded* as such (reshape, mm, reshape), as in
        // PyTorch: the weight's gradient is then one GEMM over all rows
        // instead of a batched product summed over the batch afterwards
        // (10 ms of a 4-layer transformer's 26 ms backward).
        let (da, db) = (self.dim(), other.dim());
        if da >= 3 && (db == 1 || db == 2) {
            let k = self.shape()[da - 1];
            let k2 = other.shape()[0];
            if k != k2 {
                return Err(shape_err("matmul", self.shape(), other.shape(), k, k2));
            }
            check_dtypes("matmul", self, other)?;
            // the row count spelled out: -1 is ambiguous when k is 0
            let n_rows: usize = self.shape()[..da - 1].iter().product();
            let rows = self.reshape(&[n_rows as i64, k as i64])?;
            let mut shape: Vec<i64> = self.shape()[..da - 1].iter().map(|&s| s as i64).collect();
            return if db == 2 {
                shape.push(other.shape()[1] as i64);
                rows.mm(other)?.reshape(&shape)
            } else {
                rows.mv(other)?.reshape(&shape)
            };
        }
        let y = crate::autograd::raw(&[self, other], || self.matmul_impl(other))?;
        let name = match (self.dim(), other.dim()) {
            (1, 1) => "DotBackward0",
            (2, 1) => "MvBackward0",
            (2, 2) => "MmBackward0",
            (3, 3) => "BmmBackward0",
            _ => "MatmulBackward0",
        };
        crate::autograd::derivatives::linalg::matmul(name, self, other, y)
    }

    fn matmul_impl(&self, other: &Tensor) -> Result<Tensor> {
        let (da, db) = (self.dim(), other.dim());
        crate::ensure!(
            da > 0 && db > 0,
            Runtime,
            "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        );
        check_dtypes("matmul", self, other)?;
        match (da, db) {
            (1, 1) => {
                return self.dot(other).map_err(|_| {
                    shape_err(
                        "matmul",
                        self.shape(),
                        other.shape(),
                        self.shape()[0],
                        other.shape()[0],
                    )
                })
            }
            (2, 1) => return self.mv(other).map_err(|e| e.context("matmul")),
            (1, 2) => {
                return self
                    .unsqueeze(0)?
                    .mm(other)
                    .map_err(|_| {
                        shape_err(
                            "matmul",
                            self.shape(),
                            other.shape(),
                            self.shape()[0],
                            other.shape()[0],
                        )
                    })?
                    .squeeze_dims(&[0])
            }
            (2, 2) => {
                if self.shape()[1] != other.shape()[0] {
                    return Err(shape_err(
                        "matmul",
                        self.shape(),
                        other.shape(),
                        self.shape()[1],
                        other.shape()[0],
                    ));
                }
                return self.mm(other);
            }
            _ => {}
        }
        // Batched: promote 1-D operands, broadcast batch dims, then bmm.
        let a = if da == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if db == 1 {
            other.unsqueeze(1)?
        } else {
            other.clone()
        };
        let (ra, rb) = (a.dim(), b.dim());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        if k != k2 {
            return Err(shape_err("matmul", self.shape(), other.shape(), k, k2));
        }
        let batch = broadcast_shapes(&a.shape()[..ra - 2], &b.shape()[..rb - 2])
            .map_err(|e| e.context("matmul"))?;
        let bs: usize = batch.iter().product();
        let mut sa: Vec<i64> = batch.iter().map(|&x| x as i64).collect();
        sa.extend([m as i64, k as i64]);
        let mut sb: Vec<i64> = batch.iter().map(|&x| x as i64).collect();
        sb.extend([k as i64, n as i64]);
        // Fold A's batch into rows when B is shared (one big GEMM).
        let out = if rb == 2 && a.is_contiguous() {
            a.reshape(&[1, (bs * m) as i64, k as i64])?
                .bmm(&b.unsqueeze(0)?)?
        } else {
            let a3 = a.expand(&sa)?.reshape(&[bs as i64, m as i64, k as i64])?;
            let b3 = b.expand(&sb)?.reshape(&[bs as i64, k as i64, n as i64])?;
            a3.bmm(&b3)?
        };
        let mut shape: Vec<i64> = batch.iter().map(|&x| x as i64).collect();
        if da > 1 {
            shape.push(m as i64);
        }
        if db > 1 {
            shape.push(n as i64);
        }
        out.reshape(&shape)
    }

    /// `self @ weightᵀ + bias` (`F.linear`; `weight` is `[out, in]`). A 2-D
    /// input with a bias is one `addmm` (one GEMM onto the broadcast bias,
    /// grad_fn `AddmmBackward0`), as in PyTorch.
    #[op = "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"]
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        if let (2, Some(b)) = (self.dim(), bias) {
            return b.addmm(self, &weight.t()?, 1, 1);
        }
        let y = self.matmul(&weight.t()?)?;
        match bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }

    /// `beta * self + alpha * (mat1 @ mat2)` (`torch.addmm`); `self`
    /// broadcasts to the product's shape and is ignored when `beta == 0`.
    #[op = "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"]
    pub fn addmm(
        &self,
        mat1: &Tensor,
        mat2: &Tensor,
        beta: impl Into<Scalar>,
        alpha: impl Into<Scalar>,
    ) -> Result<Tensor> {
        let fused = matches!(self.dtype(), DType::F32 | DType::F64)
            && self.dtype() == mat1.dtype()
            && self.dtype() == mat2.dtype()
            && beta.to_f64() != 0.0;
        if !fused {
            return add_scaled("addmm", self, mat1.mm(mat2)?, beta, alpha);
        }
        let ins = [self, mat1, mat2];
        let y = crate::autograd::raw(&ins, || self.addmm_impl(mat1, mat2, beta, alpha))?;
        crate::autograd::derivatives::linalg::addmm(self, mat1, mat2, beta, alpha, y)
    }

    /// One GEMM into an output pre-filled with `self` broadcast (the bias
    /// of a linear layer): no separate product tensor, one pass.
    fn addmm_impl(
        &self,
        mat1: &Tensor,
        mat2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        for (name, t) in [("mat1", mat1), ("mat2", mat2)] {
            crate::ensure!(
                t.dim() == 2,
                Runtime,
                "addmm: {name} must be a matrix, got {}-D",
                t.dim()
            );
        }
        if mat1.shape()[1] != mat2.shape()[0] {
            return Err(shape_err(
                "addmm",
                mat1.shape(),
                mat2.shape(),
                mat1.shape()[1],
                mat2.shape()[0],
            ));
        }
        let shape = [mat1.shape()[0], mat2.shape()[1]];
        let s = broadcast_shapes(self.shape(), &shape).map_err(|e| e.context("addmm"))?;
        crate::ensure!(
            s.as_slice() == shape,
            Runtime,
            "addmm: self of shape {:?} cannot be broadcast to the product's shape {:?}",
            self.shape(),
            shape
        );
        let out = Tensor::empty(&shape, self.dtype())?;
        crate::tensor::data::copy_cast(self, &out);
        if mat1.shape()[1] == 0 {
            return out.mul(beta);
        }
        batched_gemm(
            &mat1.unsqueeze(0)?,
            &mat2.unsqueeze(0)?,
            &out.unsqueeze(0)?,
            alpha,
            beta,
        )?;
        Ok(out)
    }

    /// `beta * self + alpha * bmm(batch1, batch2)` (`torch.baddbmm`).
    #[op = "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"]
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: impl Into<Scalar>,
        alpha: impl Into<Scalar>,
    ) -> Result<Tensor> {
        add_scaled("baddbmm", self, batch1.bmm(batch2)?, beta, alpha)
    }

    /// Contract `dims_a` of `self` with `dims_b` of `other` (`torch.tensordot`).
    #[op = "tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor"]
    pub fn tensordot(&self, other: &Tensor, dims_a: &[i64], dims_b: &[i64]) -> Result<Tensor> {
        crate::ensure!(
            dims_a.len() == dims_b.len(),
            Runtime,
            "both dimension lists should have same length"
        );
        let da = crate::tensor::layout::wrap_dims("tensordot", dims_a, self.dim())?;
        let db = crate::tensor::layout::wrap_dims("tensordot", dims_b, other.dim())?;
        // A contracted dimension of size 1 broadcasts against the other
        // side: torch sums the other side's dimension right away (keepdim).
        let (mut a, mut b) = (self.clone(), other.clone());
        for (x, y) in da.iter().zip(db.iter()) {
            let (sa, sb) = (a.shape()[*x], b.shape()[*y]);
            if sa != sb && sb == 1 {
                a = a.sum_dim(Some(&[*x as i64]), true, None)?;
                continue;
            }
            if sa != sb && sa == 1 {
                b = b.sum_dim(Some(&[*y as i64]), true, None)?;
                continue;
            }
            crate::ensure!(
                sa == sb,
                Runtime,
                "contracted dimensions need to match, but first has size {} in dim {x} and second has size {} in dim {y}",
                sa,
                sb
            );
        }
        let free_a: Vec<usize> = (0..a.dim()).filter(|d| !da.contains(d)).collect();
        let free_b: Vec<usize> = (0..b.dim()).filter(|d| !db.contains(d)).collect();
        let ksz: usize = da.iter().map(|&d| a.shape()[d]).product();
        let ma: usize = free_a.iter().map(|&d| a.shape()[d]).product();
        let nb: usize = free_b.iter().map(|&d| b.shape()[d]).product();
        let pa: Vec<usize> = free_a.iter().chain(da.iter()).copied().collect();
        let pb: Vec<usize> = db.iter().chain(free_b.iter()).copied().collect();
        let a2 = a.permute_dims(&pa)?.reshape(&[ma as i64, ksz as i64])?;
        let b2 = b.permute_dims(&pb)?.reshape(&[ksz as i64, nb as i64])?;
        let mut shape: Vec<i64> = free_a.iter().map(|&d| a.shape()[d] as i64).collect();
        shape.extend(free_b.iter().map(|&d| b.shape()[d] as i64));
        a2.mm(&b2)?.reshape(&shape)
    }
}

/// `beta * input + alpha * product`, with `input` broadcast to the product
/// (`addmm`, `baddbmm`, and the composites `addmv`, `addr`, `addbmm`).
pub(crate) fn add_scaled(
    op: &str,
    input: &Tensor,
    product: Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    let s = broadcast_shapes(input.shape(), product.shape()).map_err(|e| e.context(op))?;
    crate::ensure!(
        s.as_slice() == product.shape(),
        Runtime,
        "{op}: self of shape {:?} cannot be broadcast to the product's shape {:?}",
        input.shape(),
        product.shape()
    );
    let p = if alpha == Scalar::Int(1) {
        product
    } else {
        product.mul(alpha)?
    };
    if beta.to_f64() == 0.0 {
        return Ok(p);
    }
    let i = if beta == Scalar::Int(1) {
        input.clone()
    } else {
        input.mul(beta)?
    };
    i.add(&p)
}
