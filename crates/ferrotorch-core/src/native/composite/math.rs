//! Math ops made of other ops (torch's CompositeImplicitAutograd):
//! `square`, `logaddexp`, `sinc`, `float_power`, the NaN-skipping
//! reductions, `diff` and the trapezoid rules, products (`kron`, `inner`,
//! `addmv`, `addr`, `addbmm`, `trace`), distances (`dist`, `cdist`),
//! `cross`, `cov`/`corrcoef` and `renorm`. Gradients come from the ops
//! they are made of.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::native::binary::Operand;
use crate::native::linalg::add_scaled;
use crate::native::movement::{cat, stack};
use crate::native::where_;
use crate::scalar::Scalar;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

/// The float dtype an integer or bool input computes in (the default dtype).
fn floating(t: &Tensor) -> Result<Tensor> {
    if t.is_floating_point() {
        Ok(Clone::clone(t))
    } else {
        t.to_dtype(crate::dtype::get_default_dtype())
    }
}

impl Tensor {
    /// `torch.square`: `x * x`.
    pub fn square(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return self.to_dtype(DType::I64)?.pow(2);
        }
        self.pow(2)
    }

    /// `torch.positive`: the tensor itself (bool is refused, as torch).
    pub fn positive(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dtype() != DType::Bool,
            Runtime,
            "The `+` operator, on a bool tensor is not supported."
        );
        Ok(Clone::clone(self))
    }

    /// `torch.rsub`: `other - alpha * self`.
    pub fn rsub(&self, other: impl Into<Operand>, alpha: Scalar) -> Result<Tensor> {
        let other: Operand = other.into();
        let scaled = if alpha.to_f64() == 1.0 {
            Clone::clone(self)
        } else {
            self.mul(alpha)?
        };
        match other {
            Operand::Tensor(o) => o.sub(&scaled),
            Operand::Scalar(s) => scaled.neg()?.add(s),
        }
    }

    /// `torch.deg2rad`.
    pub fn deg2rad(&self) -> Result<Tensor> {
        floating(self)?.mul(std::f64::consts::PI / 180.0)
    }

    /// `torch.rad2deg`.
    pub fn rad2deg(&self) -> Result<Tensor> {
        floating(self)?.mul(180.0 / std::f64::consts::PI)
    }

    /// `max(a, b)` and `-|a - b|` of the float forms of `self` and `other`,
    /// the latter -inf where both are the same infinity (inf - inf would be
    /// NaN): `logaddexp` in any base is `m + log_base(1 + base^d)`.
    fn logaddexp_parts(&self, other: &Tensor) -> Result<(Tensor, Tensor)> {
        let (a, b) = (floating(self)?, floating(other)?);
        let m = a.maximum(&b)?;
        let d = a.sub(&b)?.abs()?.neg()?;
        let same_inf = a.isinf()?.logical_and(&a.eq(&b)?)?;
        Ok((m, where_(&same_inf, -f64::INFINITY, &d)?))
    }

    /// `torch.logaddexp`: `log(exp(a) + exp(b))` without overflow.
    pub fn logaddexp(&self, other: &Tensor) -> Result<Tensor> {
        let (m, d) = self.logaddexp_parts(other)?;
        m.add(&d.exp()?.log1p()?)
    }

    /// `torch.logaddexp2`: `log2(2^a + 2^b)`.
    pub fn logaddexp2(&self, other: &Tensor) -> Result<Tensor> {
        let (m, d) = self.logaddexp_parts(other)?;
        m.add(&d.exp2()?.log1p()?.div(std::f64::consts::LN_2)?)
    }

    /// `torch.heaviside`: 0 below zero, `values` at zero, 1 above.
    pub fn heaviside(&self, values: &Tensor) -> Result<Tensor> {
        crate::ensure!(
            self.dtype() == values.dtype(),
            Runtime,
            "heaviside is not yet implemented for tensors with different dtypes"
        );
        let pos = self.gt(0)?.to_dtype(self.dtype())?;
        where_(&self.eq(0)?, values, &pos)
    }

    /// `torch.float_power`: `pow` in float64.
    pub fn float_power(&self, exponent: impl Into<Operand>) -> Result<Tensor> {
        match exponent.into() {
            Operand::Tensor(e) => self.to_dtype(DType::F64)?.pow(&e.to_dtype(DType::F64)?),
            Operand::Scalar(s) => self.to_dtype(DType::F64)?.pow(s.to_f64()),
        }
    }

    /// `torch.sinc`: `sin(πx) / (πx)`, 1 at 0; its gradient is PyTorch's
    /// one formula (`SincBackward0`).
    pub fn sinc(&self) -> Result<Tensor> {
        let x = floating(self)?;
        let y = crate::autograd::raw(&[&x], || -> Result<Tensor> {
            let zero = x.eq(0)?;
            let safe = where_(&zero, 1.0, &x)?.mul(std::f64::consts::PI)?;
            where_(&zero, 1.0, &safe.sin()?.div(&safe)?)
        })?;
        crate::autograd::derivatives::special::sinc(&x, y)
    }

    /// `torch.isposinf`.
    pub fn isposinf(&self) -> Result<Tensor> {
        if !self.is_floating_point() {
            return self.to_bool_false();
        }
        self.eq(f64::INFINITY)
    }

    /// `torch.isneginf`.
    pub fn isneginf(&self) -> Result<Tensor> {
        if !self.is_floating_point() {
            return self.to_bool_false();
        }
        self.eq(f64::NEG_INFINITY)
    }

    /// `torch.isreal`: true everywhere for real dtypes.
    pub fn isreal(&self) -> Result<Tensor> {
        Tensor::ones(self.shape(), DType::Bool)
    }

    fn to_bool_false(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), DType::Bool)
    }

    /// `torch.ldexp`: `self * 2^other`.
    pub fn ldexp(&self, other: &Tensor) -> Result<Tensor> {
        floating(self)?.mul(&floating(other)?.exp2()?)
    }

    fn nan_zeroed(&self) -> Result<Tensor> {
        if !self.is_floating_point() {
            return Ok(Clone::clone(self));
        }
        where_(&self.isnan()?, 0.0, self)
    }

    /// `torch.nansum`: the sum with NaNs counted as zero.
    pub fn nansum(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        self.nan_zeroed()?.sum_dim(dims, keepdim, dtype)
    }

    /// `torch.nanmean`: the mean of the non-NaN elements.
    pub fn nanmean(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        crate::ensure!(
            self.is_floating_point(),
            Runtime,
            "nanmean(): expected input to have floating point dtype but got {}",
            self.dtype().name_title()
        );
        let count = self.isnan()?.logical_not()?.sum_dim(dims, keepdim, None)?;
        self.nansum(dims, keepdim, dtype)?.div(&count)
    }

    /// `torch.diff`: the `n`-th forward difference along `dim`, with
    /// `prepend`/`append` joined first (`logical_xor` for bool).
    pub fn diff(
        &self,
        n: i64,
        dim: i64,
        prepend: Option<&Tensor>,
        append: Option<&Tensor>,
    ) -> Result<Tensor> {
        crate::ensure!(
            self.dim() >= 1,
            Runtime,
            "diff expects input to be at least one-dimensional"
        );
        crate::ensure!(n >= 0, Runtime, "order must be non-negative but got {n}");
        let d = wrap_dim(dim, self.dim())? as i64;
        let mut parts = Vec::new();
        if let Some(p) = prepend {
            parts.push(p.clone_handle());
        }
        parts.push(self.clone_handle());
        if let Some(a) = append {
            parts.push(a.clone_handle());
        }
        let mut x = if parts.len() > 1 {
            cat(&parts, d)?
        } else {
            self.clone_handle()
        };
        for _ in 0..n {
            let len = x.shape()[d as usize];
            if len == 0 {
                break;
            }
            let hi = x.narrow(d, 1, len - 1)?;
            let lo = x.narrow(d, 0, len - 1)?;
            x = if x.dtype() == DType::Bool {
                hi.logical_xor(&lo)?
            } else {
                hi.sub(&lo)?
            };
        }
        Ok(x)
    }

    fn clone_handle(&self) -> Tensor {
        Clone::clone(self)
    }

    /// The trapezoid terms `(y[i+1] + y[i]) / 2 * dx[i]` along `dim`.
    fn trapezoid_terms(&self, x: Option<&Tensor>, dx: f64, dim: i64) -> Result<(Tensor, i64)> {
        crate::ensure!(
            self.dim() >= 1,
            Index,
            "trapezoid: Dimension out of range (expected to be in range of [-1, 0], but got {dim})"
        );
        let y = floating(self)?;
        let d = wrap_dim(dim, y.dim())? as i64;
        let len = y.shape()[d as usize];
        if len == 0 {
            return Ok((y, d));
        }
        let avg = y
            .narrow(d, 1, len - 1)?
            .add(&y.narrow(d, 0, len - 1)?)?
            .div(2.0)?;
        let terms = match x {
            None => avg.mul(dx)?,
            Some(x) => {
                let spacing = if x.dim() == 1 {
                    // a 1-D x runs along dim
                    let mut view = vec![1i64; y.dim()];
                    view[d as usize] = -1;
                    x.diff(1, 0, None, None)?.reshape(&view)?
                } else {
                    x.diff(1, dim, None, None)?
                };
                avg.mul(&spacing)?
            }
        };
        Ok((terms, d))
    }

    /// `torch.trapezoid`: the trapezoid rule along `dim`, with sample
    /// points `x` or a constant spacing `dx`.
    pub fn trapezoid(&self, x: Option<&Tensor>, dx: f64, dim: i64) -> Result<Tensor> {
        let (terms, d) = self.trapezoid_terms(x, dx, dim)?;
        if self.shape()[d as usize] == 0 {
            return terms.sum_dim(Some(&[d]), false, None)?.mul(0.0);
        }
        terms.sum_dim(Some(&[d]), false, None)
    }

    /// `torch.cumulative_trapezoid`: the running trapezoid sums along `dim`.
    pub fn cumulative_trapezoid(&self, x: Option<&Tensor>, dx: f64, dim: i64) -> Result<Tensor> {
        let (terms, d) = self.trapezoid_terms(x, dx, dim)?;
        if self.shape()[d as usize] == 0 {
            return Ok(terms);
        }
        terms.cumsum(d, None)
    }

    /// `torch.msort`: sorted along dim 0.
    pub fn msort(&self) -> Result<Tensor> {
        Ok(self.sort(0, false)?.0)
    }

    /// `torch.aminmax`: `(amin, amax)` over `dim` (all elements when `None`).
    pub fn aminmax(&self, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        crate::ensure!(
            self.numel() > 0 || dim.is_some(),
            Runtime,
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
        );
        match dim {
            Some(d) => Ok((self.amin(&[d], keepdim)?, self.amax(&[d], keepdim)?)),
            None => {
                let (lo, hi) = (self.amin(&[], false)?, self.amax(&[], false)?);
                if keepdim {
                    let ones = vec![1i64; self.dim()];
                    return Ok((lo.reshape(&ones)?, hi.reshape(&ones)?));
                }
                Ok((lo, hi))
            }
        }
    }

    /// `torch.trace`: the sum of a matrix's main diagonal.
    pub fn trace(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 2,
            Runtime,
            "trace: expected a matrix, but got tensor with dim {}",
            self.dim()
        );
        self.diagonal(0, 0, 1)?.sum_dim(None, false, None)
    }

    /// `torch.kron`: the Kronecker product.
    pub fn kron(&self, other: &Tensor) -> Result<Tensor> {
        let n = self.dim().max(other.dim());
        let pad = |t: &Tensor| -> Vec<usize> {
            let mut s = vec![1usize; n - t.dim()];
            s.extend_from_slice(t.shape());
            s
        };
        let (sa, sb) = (pad(self), pad(other));
        let mut va = Vec::with_capacity(2 * n);
        let mut vb = Vec::with_capacity(2 * n);
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            va.extend([sa[i] as i64, 1]);
            vb.extend([1, sb[i] as i64]);
            out.push((sa[i] * sb[i]) as i64);
        }
        self.reshape(&va)?.mul(&other.reshape(&vb)?)?.reshape(&out)
    }

    /// `torch.inner`: the sum over the last dims of both (a product with a 0-d operand).
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        if self.dim() == 0 || other.dim() == 0 {
            return self.mul(other);
        }
        let (ka, kb) = (self.shape()[self.dim() - 1], other.shape()[other.dim() - 1]);
        crate::ensure!(
            ka == kb,
            Runtime,
            "inner() the last dimension must match on both input tensors but got shapes {:?} and {:?}",
            self.shape(),
            other.shape()
        );
        let mut shape: Vec<i64> = self.shape()[..self.dim() - 1]
            .iter()
            .map(|&s| s as i64)
            .collect();
        shape.extend(other.shape()[..other.dim() - 1].iter().map(|&s| s as i64));
        let a = self.reshape(&[-1, ka as i64])?;
        let b = other.reshape(&[-1, kb as i64])?;
        a.matmul(&b.t()?)?.reshape(&shape)
    }

    /// `torch.vdot`: the dot product with `self` conjugated.
    pub fn vdot(&self, other: &Tensor) -> Result<Tensor> {
        self.conj()?.dot(other)
    }

    /// `torch.addmv`: `beta * self + alpha * (mat @ vec)`.
    pub fn addmv(&self, mat: &Tensor, vec: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
        add_scaled("addmv", self, mat.mv(vec)?, beta, alpha)
    }

    /// `torch.addr`: `beta * self + alpha * outer(vec1, vec2)`.
    pub fn addr(
        &self,
        vec1: &Tensor,
        vec2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        add_scaled("addr", self, vec1.outer(vec2)?, beta, alpha)
    }

    /// `torch.addbmm`: `beta * self + alpha * sum_b(batch1[b] @ batch2[b])`.
    pub fn addbmm(&self, b1: &Tensor, b2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
        crate::ensure!(
            b1.dim() == 3 && b2.dim() == 3,
            Runtime,
            "batch1 must be a 3D tensor"
        );
        let p = b1.bmm(b2)?.sum_dim(Some(&[0]), false, None)?;
        add_scaled("addbmm", self, p, beta, alpha)
    }

    /// `torch.dist`: the `p`-norm of `self - other`.
    pub fn dist(&self, other: &Tensor, p: f64) -> Result<Tensor> {
        self.sub(other)?.norm(p, None, false)
    }

    /// `torch.cdist`: the `p`-norm distance between each row of `self`
    /// (`[B, P, M]`) and each row of `x2` (`[B, R, M]`).
    pub fn cdist(&self, x2: &Tensor, p: f64) -> Result<Tensor> {
        crate::ensure!(
            self.dim() >= 2,
            Runtime,
            "cdist only supports at least 2D tensors, X1 got: {}D",
            self.dim()
        );
        crate::ensure!(
            x2.dim() >= 2,
            Runtime,
            "cdist only supports at least 2D tensors, X2 got: {}D",
            x2.dim()
        );
        let (m1, m2) = (self.shape()[self.dim() - 1], x2.shape()[x2.dim() - 1]);
        crate::ensure!(
            m1 == m2,
            Runtime,
            "X1 and X2 must have the same number of columns. X1: {m1} X2: {m2}"
        );
        crate::ensure!(
            p >= 0.0,
            Runtime,
            "cdist only supports non-negative p values"
        );
        let diff = self.unsqueeze(-2)?.sub(&x2.unsqueeze(-3)?)?;
        diff.norm(p, Some(&[-1]), false)
    }

    /// `torch.cross` (`dim` None: the first dim of size 3) and
    /// `torch.linalg.cross` (`dim=-1`): the 3-vector cross product.
    pub fn cross(&self, other: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == other.dim(),
            Runtime,
            "linalg.cross: inputs must have the same number of dimensions."
        );
        crate::ensure!(
            self.dim() >= 1,
            Runtime,
            "linalg.cross: inputs dimension -1 must have length 3. Got 0-d tensors"
        );
        let shape = crate::tensor::layout::broadcast_shapes(self.shape(), other.shape())?;
        let d = match dim {
            Some(d) => wrap_dim(d, shape.len())?,
            None => shape.iter().position(|&s| s == 3).ok_or_else(|| {
                crate::error::Error::new(
                    crate::ErrorKind::Runtime,
                    "no dimension of size 3 in input",
                )
            })?,
        };
        crate::ensure!(
            self.shape()[d] == 3 && other.shape()[d] == 3,
            Runtime,
            "linalg.cross: inputs dimension {d} must have length 3. Got {} and {}",
            self.shape()[d],
            other.shape()[d]
        );
        let (a, b) = (self.broadcast_to(&shape)?, other.broadcast_to(&shape)?);
        let di = d as i64;
        let c = |t: &Tensor, i: i64| t.select(di, i);
        let x = c(&a, 1)?
            .mul(&c(&b, 2)?)?
            .sub(&c(&a, 2)?.mul(&c(&b, 1)?)?)?;
        let y = c(&a, 2)?
            .mul(&c(&b, 0)?)?
            .sub(&c(&a, 0)?.mul(&c(&b, 2)?)?)?;
        let z = c(&a, 0)?
            .mul(&c(&b, 1)?)?
            .sub(&c(&a, 1)?.mul(&c(&b, 0)?)?)?;
        stack(&[x, y, z], di)
    }

    /// `torch.cov`: the covariance of the variables in the rows of `self`
    /// (observations in columns), with frequency and analytic weights.
    pub fn cov(
        &self,
        correction: i64,
        fweights: Option<&Tensor>,
        aweights: Option<&Tensor>,
    ) -> Result<Tensor> {
        crate::ensure!(self.dim() <= 2, Runtime, "cov(): expected input to have two or fewer dimensions but got an input with {} dimensions", self.dim());
        let x = floating(self)?;
        let x = if x.dim() < 2 { x.reshape(&[1, -1])? } else { x };
        let n_obs = x.shape()[1] as i64;
        let mut w: Option<Tensor> = None;
        if let Some(f) = fweights {
            crate::ensure!(f.dim() <= 1, Runtime, "cov(): expected fweights to have one or fewer dimensions but got fweights with {} dimensions", f.dim());
            crate::ensure!(
                !f.is_floating_point(),
                Runtime,
                "cov(): expected fweights to have integral dtype but got fweights with {} dtype",
                f.dtype().name_title()
            );
            crate::ensure!(f.numel() as i64 == n_obs, Runtime, "cov(): expected fweights to have the same numel as there are observations in the input but got {} != {n_obs}", f.numel());
            crate::ensure!(
                f.to_vec_i64()?.iter().all(|&v| v >= 0),
                Runtime,
                "cov(): fweights cannot be negative"
            );
            w = Some(f.to_dtype(x.dtype())?);
        }
        if let Some(a) = aweights {
            crate::ensure!(a.dim() <= 1, Runtime, "cov(): expected aweights to have one or fewer dimensions but got aweights with {} dimensions", a.dim());
            crate::ensure!(a.is_floating_point(), Runtime, "cov(): expected aweights to have floating point dtype but got aweights with {} dtype", a.dtype().name_title());
            crate::ensure!(a.numel() as i64 == n_obs, Runtime, "cov(): expected aweights to have the same numel as there are observations in the input but got {} != {n_obs}", a.numel());
            crate::ensure!(
                a.to_vec_f64()?.iter().all(|&v| v >= 0.0),
                Runtime,
                "cov(): aweights cannot be negative"
            );
            let a = a.to_dtype(x.dtype())?;
            w = Some(match w {
                Some(f) => f.mul(&a)?,
                None => a,
            });
        }
        let (avg, w_sum) = match &w {
            Some(w) => {
                let ws = w.sum()?;
                (x.mul(w)?.sum_dim(Some(&[1]), false, None)?.div(&ws)?, ws)
            }
            None => (
                x.mean_dim(Some(&[1]), false, None)?,
                Tensor::scalar_tensor(n_obs).to_dtype(x.dtype())?,
            ),
        };
        let norm_factor = match (&w, aweights) {
            (Some(w), Some(a)) if correction != 0 => {
                let a = a.to_dtype(x.dtype())?;
                w_sum.sub(&w.mul(&a)?.sum()?.div(&w_sum)?.mul(correction as f64)?)?
            }
            _ => w_sum.sub(correction as f64)?,
        };
        let norm_factor = where_(&norm_factor.le(0)?, 0.0, &norm_factor)?;
        let xc = x.sub(&avg.unsqueeze(1)?)?;
        let xw = match &w {
            Some(w) => xc.mul(w)?,
            None => xc.clone_handle(),
        };
        let c = xc.matmul(&xw.t()?)?.div(&norm_factor)?;
        // one variable gives a 0-d result, as torch (a squeeze)
        c.squeeze_dims(&[0, 1])
    }

    /// `torch.corrcoef`: Pearson correlation coefficients of the rows.
    pub fn corrcoef(&self) -> Result<Tensor> {
        let c = self.cov(1, None, None)?;
        if c.dim() == 0 {
            return c.div(&c);
        }
        let d = c.diagonal(0, 0, 1)?;
        let s = d.sqrt()?;
        let c = c.div(&s.unsqueeze(1)?)?.div(&s.unsqueeze(0)?)?;
        c.clamp(Some(-1.0), Some(1.0))
    }

    /// `torch.renorm`: each slice along `dim` scaled down to `p`-norm at most `maxnorm`.
    pub fn renorm(&self, p: f64, dim: i64, maxnorm: f64) -> Result<Tensor> {
        crate::ensure!(p > 0.0, Runtime, "renorm: non-positive-norm not supported");
        crate::ensure!(
            maxnorm >= 0.0,
            Runtime,
            "renorm: expected maxnorm to be >= 0 but got {maxnorm}"
        );
        crate::ensure!(
            self.dim() > 1,
            Runtime,
            "renorm: input needs at least 2 dimensions, got {} dimensions",
            self.dim()
        );
        let d = wrap_dim(dim, self.dim())?;
        let others: Vec<i64> = (0..self.dim())
            .filter(|&i| i != d)
            .map(|i| i as i64)
            .collect();
        let norms = self.norm(p, Some(&others), true)?;
        let factor = where_(
            &norms.gt(maxnorm)?,
            &norms.add(1e-7)?.reciprocal()?.mul(maxnorm)?,
            1.0,
        )?;
        self.mul(&factor)
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed("square(Tensor self) -> Tensor", |x: T| x.square());
    r.def_typed("positive(Tensor(a) self) -> Tensor(a)", |x: T| x.positive());
    r.def_typed(
        "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        |x: T, o: T, a: Scalar| x.rsub(&o, a),
    );
    r.def_typed(
        "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
        |x: T, o: Scalar, a: Scalar| x.rsub(o, a),
    );
    r.def_typed(
        "true_divide.Tensor(Tensor self, Tensor other) -> Tensor",
        |x: T, o: T| x.div(&o),
    );
    r.def_typed(
        "true_divide.Scalar(Tensor self, Scalar other) -> Tensor",
        |x: T, o: Scalar| x.div(o),
    );
    r.def_typed("deg2rad(Tensor self) -> Tensor", |x: T| x.deg2rad());
    r.def_typed("rad2deg(Tensor self) -> Tensor", |x: T| x.rad2deg());
    r.def_typed(
        "logaddexp(Tensor self, Tensor other) -> Tensor",
        |x: T, o: T| x.logaddexp(&o),
    );
    r.def_typed(
        "logaddexp2(Tensor self, Tensor other) -> Tensor",
        |x: T, o: T| x.logaddexp2(&o),
    );
    r.def_typed(
        "heaviside(Tensor self, Tensor values) -> Tensor",
        |x: T, v: T| x.heaviside(&v),
    );
    r.def_typed(
        "float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
        |x: T, e: T| x.float_power(&e),
    );
    r.def_typed(
        "float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
        |x: T, e: Scalar| x.float_power(e),
    );
    r.def_typed(
        "float_power.Scalar(Scalar self, Tensor exponent) -> Tensor",
        |s: Scalar, e: T| {
            Tensor::scalar_tensor(s.to_f64())
                .to_dtype(DType::F64)?
                .float_power(&e)
        },
    );
    r.def_typed("sinc(Tensor self) -> Tensor", |x: T| x.sinc());
    r.def_typed("isposinf(Tensor self) -> Tensor", |x: T| x.isposinf());
    r.def_typed("isneginf(Tensor self) -> Tensor", |x: T| x.isneginf());
    r.def_typed("isreal(Tensor self) -> Tensor", |x: T| x.isreal());
    r.def_typed(
        "ldexp.Tensor(Tensor self, Tensor other) -> Tensor",
        |x: T, o: T| x.ldexp(&o),
    );
    r.def_typed(
        "nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, d: Option<Vec<i64>>, k: bool, dt: Option<DType>| x.nansum(d.as_deref(), k, dt),
    );
    r.def_typed(
        "nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        |x: T, d: Option<Vec<i64>>, k: bool, dt: Option<DType>| x.nanmean(d.as_deref(), k, dt),
    );
    r.def_typed(
        "diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor",
        |x: T, n: i64, d: i64, p: Option<T>, a: Option<T>| x.diff(n, d, p.as_ref(), a.as_ref()),
    );
    r.def_typed(
        "trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        |y: T, x: T, d: i64| y.trapezoid(Some(&x), 1.0, d),
    );
    r.def_typed(
        "trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor",
        |y: T, dx: Scalar, d: i64| y.trapezoid(None, dx.to_f64(), d),
    );
    r.def_typed(
        "trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        |y: T, x: T, d: i64| y.trapezoid(Some(&x), 1.0, d),
    );
    r.def_typed(
        "trapz.dx(Tensor y, *, float dx=1, int dim=-1) -> Tensor",
        |y: T, dx: f64, d: i64| y.trapezoid(None, dx, d),
    );
    r.def_typed(
        "cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        |y: T, x: T, d: i64| y.cumulative_trapezoid(Some(&x), 1.0, d),
    );
    r.def_typed(
        "cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor",
        |y: T, dx: Scalar, d: i64| y.cumulative_trapezoid(None, dx.to_f64(), d),
    );
    r.def_typed("msort(Tensor self) -> Tensor", |x: T| x.msort());
    r.def_typed(
        "aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
        |x: T, d: Option<i64>, k: bool| x.aminmax(d, k),
    );
    r.def_typed("trace(Tensor self) -> Tensor", |x: T| x.trace());
    r.def_typed("kron(Tensor self, Tensor other) -> Tensor", |x: T, o: T| {
        x.kron(&o)
    });
    r.def_typed(
        "inner(Tensor self, Tensor other) -> Tensor",
        |x: T, o: T| x.inner(&o),
    );
    r.def_typed("vdot(Tensor self, Tensor other) -> Tensor", |x: T, o: T| {
        x.vdot(&o)
    });
    r.def_typed(
        "addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        |x: T, m: T, v: T, b: Scalar, a: Scalar| x.addmv(&m, &v, b, a),
    );
    r.def_typed(
        "addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        |x: T, v1: T, v2: T, b: Scalar, a: Scalar| x.addr(&v1, &v2, b, a),
    );
    r.def_typed(
        "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        |x: T, b1: T, b2: T, b: Scalar, a: Scalar| x.addbmm(&b1, &b2, b, a),
    );
    r.def_typed(
        "dist(Tensor self, Tensor other, Scalar p=2) -> Tensor",
        |x: T, o: T, p: Scalar| x.dist(&o, p.to_f64()),
    );
    r.def_typed(
        // compute_mode (Python's str; ATen's int) picks a faster
        // matmul form for p=2 there; the result is the same
        "cdist(Tensor x1, Tensor x2, float p=2, str? compute_mode=None) -> Tensor",
        |x: T, y: T, p: f64, _m: Option<String>| x.cdist(&y, p),
    );
    r.def_typed(
        "cross(Tensor self, Tensor other, int? dim=None) -> Tensor",
        |x: T, o: T, d: Option<i64>| x.cross(&o, d),
    );
    r.def_typed(
        "linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor",
        |x: T, o: T, d: i64| x.cross(&o, Some(d)),
    );
    r.def_typed(
        "cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) -> Tensor",
        |x: T, c: i64, f: Option<T>, a: Option<T>| x.cov(c, f.as_ref(), a.as_ref()),
    );
    r.def_typed("corrcoef(Tensor self) -> Tensor", |x: T| x.corrcoef());
    r.def_typed(
        "renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
        |x: T, p: Scalar, d: i64, m: Scalar| x.renorm(p.to_f64(), d, m.to_f64()),
    );
}
