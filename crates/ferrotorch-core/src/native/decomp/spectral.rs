//! Eigen- and singular value decompositions and what they give:
//! `linalg.eigh`, `eigvalsh`, `svd`, `svdvals`, `torch.svd`, `pinv`,
//! `matrix_rank`, `cond`.

use super::kernels;
use super::{batch_of, from_mats, from_vecs, mats, mt};
use crate::autograd::derivatives::decomp as deriv;
use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::native::where_;
use crate::scalar::Scalar;
use crate::tensor::Tensor;

/// The largest of each row of non-negative values, kept as `[..., 1]` (0
/// for an empty row).
fn largest(v: &Tensor) -> Result<Tensor> {
    if v.shape()[v.dim() - 1] == 0 {
        v.sum_dim(Some(&[-1]), true, None)
    } else {
        v.amax(&[-1], true)
    }
}

fn eps(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

impl Tensor {
    /// `torch.linalg.eigh(A, UPLO='L')`: ascending eigenvalues and the
    /// eigenvectors (columns) of a symmetric matrix, read from one triangle.
    pub fn linalg_eigh(&self, uplo: &str) -> Result<(Tensor, Tensor)> {
        let op = "linalg.eigh";
        super::check_matrix_c(op, self, true)?;
        crate::ensure!(
            uplo == "L" || uplo == "U",
            Runtime,
            "{op}: Expected UPLO argument to be 'L' or 'U', but got {uplo}"
        );
        let n = self.shape()[self.dim() - 1];
        let batch = batch_of(self);
        let (vals, vecs) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor)> {
            if self.is_complex() {
                return super::complex_linalg::eigh_values(self, uplo == "L");
            }
            let mut vs = Vec::new();
            let mut qs = Vec::new();
            for a in mats(self)? {
                let (v, q) = kernels::eigh(&a, uplo == "L").map_err(|e| {
                    crate::error::Error::new(
                        crate::ErrorKind::Runtime,
                        format!("{op}: the algorithm failed to converge ({e})"),
                    )
                })?;
                vs.push(v);
                qs.push(q);
            }
            Ok((
                from_vecs(&batch, n, &vs, self.dtype())?,
                from_mats(&batch, n, n, &qs, self.dtype())?,
            ))
        })?;
        deriv::eigh(self, vals, vecs)
    }

    /// `torch.linalg.eigvalsh`: the eigenvalues of `eigh`.
    pub fn linalg_eigvalsh(&self, uplo: &str) -> Result<Tensor> {
        Ok(self.linalg_eigh(uplo)?.0)
    }

    /// `torch.linalg.svd(A, full_matrices=True)`: `(U, S, Vh)`, singular
    /// values descending.
    pub fn linalg_svd(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let op = "linalg.svd";
        super::check_matrix_c(op, self, false)?;
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        let k = m.min(n);
        let batch = batch_of(self);
        let (ucols, vrows) = if full_matrices { (m, n) } else { (k, k) };
        let (u, s, vh) = crate::autograd::raw(&[self], || -> Result<(Tensor, Tensor, Tensor)> {
            if self.is_complex() {
                return super::complex_linalg::svd_values(self, full_matrices);
            }
            let mut us = Vec::new();
            let mut ss = Vec::new();
            let mut vs = Vec::new();
            for a in mats(self)? {
                let (u, s, vt) = kernels::svd(&a, full_matrices).map_err(|e| {
                    crate::error::Error::new(
                        crate::ErrorKind::Runtime,
                        format!("{op}: The algorithm failed to converge ({e})"),
                    )
                })?;
                us.push(u);
                ss.push(s);
                vs.push(vt);
            }
            Ok((
                from_mats(&batch, m, ucols, &us, self.dtype())?,
                from_vecs(&batch, k, &ss, self.dtype())?,
                from_mats(&batch, vrows, n, &vs, self.dtype())?,
            ))
        })?;
        deriv::svd(self, full_matrices, u, s, vh)
    }

    /// `torch.linalg.svdvals`: the singular values, descending.
    pub fn linalg_svdvals(&self) -> Result<Tensor> {
        Ok(self.linalg_svd(false)?.1)
    }

    /// `torch.svd(input, some=True, compute_uv=True)`: `(U, S, V)` (V, not Vᵀ).
    pub fn svd(&self, some: bool, compute_uv: bool) -> Result<(Tensor, Tensor, Tensor)> {
        if !compute_uv {
            let s = self.linalg_svdvals()?;
            let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
            let mut us = batch_of(self);
            let mut vs = us.clone();
            us.extend([m, m]);
            vs.extend([n, n]);
            return Ok((
                Tensor::zeros(&us, self.dtype())?,
                s,
                Tensor::zeros(&vs, self.dtype())?,
            ));
        }
        let (u, s, vh) = self.linalg_svd(!some)?;
        Ok((u, s, mt(&vh)?))
    }

    /// The cutoff below which singular values count as zero: `max(atol,
    /// rtol * σ_max)` (`smax` is `[..., 1]`; a batched tolerance is one per
    /// matrix), with torch's default `rtol` (eps · max(m, n), or 0 where
    /// `atol` > 0) when none is given.
    fn rank_cutoff(
        &self,
        smax: &Tensor,
        atol: Option<&Tensor>,
        rtol: Option<&Tensor>,
    ) -> Result<Tensor> {
        let (m, n) = (self.shape()[self.dim() - 2], self.shape()[self.dim() - 1]);
        let default = eps(self.dtype()) * m.max(n) as f64;
        let lift = |t: &Tensor| -> Result<Tensor> {
            let t = t.to_dtype(smax.dtype())?;
            if t.dim() == 0 {
                Ok(t)
            } else {
                t.unsqueeze(-1)
            }
        };
        let rtol = match (rtol, atol) {
            (Some(r), _) => lift(r)?,
            (None, Some(a)) => where_(&lift(a)?.gt(0)?, 0.0, default)?.to_dtype(smax.dtype())?,
            (None, None) => Tensor::scalar_tensor(default).to_dtype(smax.dtype())?,
        };
        let rel = smax.mul(&rtol)?;
        match atol {
            Some(a) => rel.maximum(&lift(a)?),
            None => Ok(rel),
        }
    }

    /// `torch.linalg.pinv(A, *, atol=None, rtol=None, hermitian=False)`.
    pub fn linalg_pinv(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        let t = |v: Option<f64>| v.map(Tensor::scalar_tensor);
        self.linalg_pinv_tol(t(atol).as_ref(), t(rtol).as_ref(), hermitian)
    }

    /// `torch.linalg.pinv` with tensor tolerances (one per matrix of a batch).
    pub fn linalg_pinv_tol(
        &self,
        atol: Option<&Tensor>,
        rtol: Option<&Tensor>,
        hermitian: bool,
    ) -> Result<Tensor> {
        super::check_matrix_c("linalg.pinv", self, false)?;
        let y = crate::autograd::raw(&[self], || self.pinv_values(atol, rtol, hermitian))?;
        deriv::pinv(self, y)
    }

    fn pinv_values(
        &self,
        atol: Option<&Tensor>,
        rtol: Option<&Tensor>,
        hermitian: bool,
    ) -> Result<Tensor> {
        // A⁺ = V diag(1/σ) Uᵀ over the values above the cutoff (eigenvalues
        // by magnitude for a symmetric A, whose U is V)
        let (left, vals, right_t) = if hermitian {
            let (l, v) = self.linalg_eigh("L")?;
            (Clone::clone(&v), l, v)
        } else {
            let (u, s, vh) = self.linalg_svd(false)?;
            (u, s, mt(&vh)?)
        };
        let abs = vals.abs()?;
        let cut = self.rank_cutoff(&largest(&abs)?, atol, rtol)?;
        let keep = abs.gt(&cut)?;
        let inv = where_(&keep, &where_(&keep, &vals, 1.0)?.reciprocal()?, 0.0)?;
        right_t.mul(&inv.unsqueeze(-2)?)?.matmul(&mt(&left)?)
    }

    /// `torch.linalg.matrix_rank(A, *, atol=None, rtol=None, hermitian=False)` (int64).
    pub fn linalg_matrix_rank(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        let t = |v: Option<f64>| v.map(Tensor::scalar_tensor);
        self.linalg_matrix_rank_tol(t(atol).as_ref(), t(rtol).as_ref(), hermitian)
    }

    /// `torch.linalg.matrix_rank` with tensor tolerances.
    pub fn linalg_matrix_rank_tol(
        &self,
        atol: Option<&Tensor>,
        rtol: Option<&Tensor>,
        hermitian: bool,
    ) -> Result<Tensor> {
        super::check_matrix_c("linalg.matrix_rank", self, false)?;
        let _g = crate::autograd::no_grad();
        let s = if hermitian {
            self.linalg_eigvalsh("L")?.abs()?
        } else {
            self.linalg_svdvals()?
        };
        if s.shape()[s.dim() - 1] == 0 {
            return Tensor::zeros(&batch_of(self), DType::I64);
        }
        let smax = s.amax(&[-1], true)?;
        let cut = self.rank_cutoff(&smax, atol, rtol)?;
        s.gt(&cut)?.sum_dim(Some(&[-1]), false, Some(DType::I64))
    }

    /// `torch.linalg.cond(A, p=None)`: the condition number in the `p`
    /// norm (`None`/2: σ_max/σ_min; -2: σ_min/σ_max; others `‖A‖·‖A⁻¹‖`).
    pub fn linalg_cond(&self, p: Option<&str>, pnum: Option<f64>) -> Result<Tensor> {
        super::check_matrix_c("linalg.cond", self, false)?;
        match (p, pnum) {
            (None, None) | (None, Some(2.0)) | (None, Some(-2.0)) => {
                let s = self.linalg_svdvals()?;
                let k = s.shape()[s.dim() - 1];
                let (hi, lo) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k as i64 - 1, 1)?);
                let r = if pnum == Some(-2.0) {
                    lo.div(&hi)?
                } else {
                    hi.div(&lo)?
                };
                r.squeeze_dims(&[-1])
            }
            _ => {
                super::check_matrix_c("linalg.cond", self, true)?;
                let inv = self.linalg_inv_ex(false)?.0;
                let norm = |t: &Tensor| match p {
                    Some(s) => t.linalg_matrix_norm_str(s, &[-2, -1], false),
                    None => t.linalg_matrix_norm(pnum.unwrap_or(2.0), &[-2, -1], false),
                };
                norm(self)?.mul(&norm(&inv)?)
            }
        }
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    r.def_typed(
        "linalg_eigh(Tensor self, str UPLO=\"L\") -> (Tensor eigenvalues, Tensor eigenvectors)",
        |a: T, u: String| a.linalg_eigh(&u),
    );
    r.def_typed(
        "linalg_eigvalsh(Tensor self, str UPLO=\"L\") -> Tensor",
        |a: T, u: String| a.linalg_eigvalsh(&u),
    );
    r.def_typed(
        "linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)",
        |a: T, f: bool, _d: Option<String>| a.linalg_svd(f),
    );
    r.def_typed(
        "linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor",
        |a: T, _d: Option<String>| a.linalg_svdvals(),
    );
    r.def_typed(
        "svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)",
        |a: T, s: bool, c: bool| a.svd(s, c),
    );
    r.def_typed(
        "linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor",
        |a: T, at: Option<f64>, rt: Option<f64>, h: bool| a.linalg_pinv(at, rt, h),
    );
    r.def_typed(
        "linalg_pinv(Tensor self, float rcond, bool hermitian=False) -> Tensor",
        |a: T, rc: f64, h: bool| a.linalg_pinv(Some(0.0), Some(rc), h),
    );
    r.def_typed(
        "pinverse(Tensor self, float rcond=1e-15) -> Tensor",
        |a: T, rc: f64| a.linalg_pinv(Some(0.0), Some(rc), false),
    );
    r.def_typed(
        "linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor",
        |a: T, at: Option<T>, rt: Option<T>, h: bool| a.linalg_pinv_tol(at.as_ref(), rt.as_ref(), h),
    );
    r.def_typed(
        "linalg_matrix_rank.atol_rtol_tensor(Tensor input, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor",
        |a: T, at: Option<T>, rt: Option<T>, h: bool| a.linalg_matrix_rank_tol(at.as_ref(), rt.as_ref(), h),
    );
    r.def_typed(
        "linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor",
        |a: T, at: Option<f64>, rt: Option<f64>, h: bool| a.linalg_matrix_rank(at, rt, h),
    );
    r.def_typed(
        "linalg_matrix_rank(Tensor self, float tol, bool hermitian=False) -> Tensor",
        |a: T, tol: f64, h: bool| a.linalg_matrix_rank(Some(tol), Some(0.0), h),
    );
    r.def_typed(
        "linalg_cond(Tensor self, Scalar? p=None) -> Tensor",
        |a: T, p: Option<Scalar>| a.linalg_cond(None, p.map(|s| s.to_f64())),
    );
    r.def_typed(
        "linalg_cond.p_str(Tensor self, str p) -> Tensor",
        |a: T, p: String| a.linalg_cond(Some(&p), None),
    );
}
