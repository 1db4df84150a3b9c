//! `quantile` and `nanquantile`: sorted values interpolated at
//! `q·(n − 1)`, made of `sort`, `gather` and arithmetic so the gradient
//! goes to the elements each quantile was read from.

use crate::dispatch::Registry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

/// How a quantile between two ranks is read (`interpolation=`).
fn mode_of(s: &str) -> Result<u8> {
    Ok(match s {
        "linear" => 0,
        "lower" => 1,
        "higher" => 2,
        "midpoint" => 3,
        "nearest" => 4,
        other => crate::bail!(
            Runtime,
            "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {other}"
        ),
    })
}

fn quantile_impl(
    op: &str,
    x: &Tensor,
    q: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    interpolation: &str,
    ignore_nan: bool,
) -> Result<Tensor> {
    let how = mode_of(interpolation)?;
    crate::ensure!(
        matches!(x.dtype(), DType::F32 | DType::F64),
        Runtime,
        "{op}() input tensor must be either float or double dtype"
    );
    crate::ensure!(
        q.dtype() == x.dtype(),
        Runtime,
        "{op}() q tensor must be same dtype as the input tensor"
    );
    crate::ensure!(
        q.dim() <= 1,
        Runtime,
        "{op}() q must be a scalar or 1D tensor"
    );
    crate::ensure!(
        x.numel() > 0,
        Runtime,
        "{op}() input tensor must be non-empty"
    );
    let qv = q.detach().to_dtype(DType::F64)?.to_vec::<f64>()?;
    crate::ensure!(
        qv.iter().all(|v| (0.0..=1.0).contains(v)),
        Runtime,
        "{op}() q values must be in the range [0, 1]"
    );
    // rows along the last dim
    let (src, d) = match dim {
        None => (x.reshape(&[-1])?, None),
        Some(d) => (x.clone(), Some(wrap_dim(d, x.dim().max(1))?)),
    };
    let src = if src.dim() == 0 {
        src.reshape(&[1])?
    } else {
        src
    };
    let last = src.dim() as i64 - 1;
    let moved = match d {
        Some(d) => src.movedim(&[d as i64], &[last])?,
        None => src,
    };
    let (sorted, _) = moved.sort(-1, false)?; // NaNs last
    let n = sorted.shape()[sorted.dim() - 1];
    let nan = sorted.isnan()?;
    // valid count per row: all of it, or the non-NaN part
    let count = if ignore_nan {
        nan.logical_not()?
            .sum_dim(Some(&[-1]), true, Some(DType::I64))?
            .to_dtype(x.dtype())?
    } else {
        Tensor::full(&[1], n as f64, x.dtype())?
    };
    // ranks: [Q, *rows, 1]
    let nq = qv.len();
    let mut qshape = vec![nq as i64];
    qshape.extend(std::iter::repeat_n(1, sorted.dim()));
    let qs = q.detach().reshape(&[nq as i64])?.reshape(&qshape)?;
    let rank = qs.mul(&count.sub(1.0)?.clamp_min(0.0)?)?;
    let lo = rank.floor()?;
    let hi = rank.ceil()?;
    let mut eshape: Vec<i64> = vec![nq as i64];
    eshape.extend(sorted.shape().iter().map(|&s| s as i64));
    let vals = sorted.unsqueeze(0)?.expand(&eshape)?;
    let at = |r: &Tensor| -> Result<Tensor> {
        let i = r
            .clamp(Some(0.0), Some(n as f64 - 1.0))?
            .to_dtype(DType::I64)?;
        let mut ishape: Vec<i64> = eshape.clone();
        *ishape.last_mut().expect("nonempty") = 1;
        vals.gather(-1, &i.expand(&ishape)?)
    };
    let (vlo, vhi) = (at(&lo)?, at(&hi)?);
    let out = match how {
        0 => vlo.lerp(&vhi, &rank.sub(&lo)?)?,
        1 => vlo,
        2 => vhi,
        3 => vlo.add(&vhi)?.mul(0.5)?,
        _ => at(&rank.round()?)?,
    };
    // rows with a NaN (quantile) or with no values (nanquantile) give NaN
    let bad = if ignore_nan {
        count.eq(0.0)?
    } else {
        nan.any_dim(Some(&[-1]), true)?
    };
    let out = crate::native::where_(
        &bad.unsqueeze(0)?,
        &Tensor::full(&[], f64::NAN, x.dtype())?,
        &out,
    )?;
    // [Q, *rows, 1] -> the reduced shape
    let mut out = out.squeeze_dims(&[-1])?;
    if x.dim() == 0 {
        // a 0-d input keeps its (empty) shape, keepdim or not
        out = out.reshape(&[nq as i64])?;
    } else if keepdim {
        out = match d {
            Some(d) => out.unsqueeze(d as i64 + 1)?,
            None => {
                let ones: Vec<i64> = std::iter::once(nq as i64)
                    .chain(std::iter::repeat_n(1, x.dim()))
                    .collect();
                out.reshape(&ones)?
            }
        };
    } else if d.is_none() {
        out = out.reshape(&[nq as i64])?;
    }
    if q.dim() == 0 {
        out = out.squeeze_dims(&[0])?;
    }
    Ok(out)
}

impl Tensor {
    /// `torch.quantile(input, q, dim=None, keepdim=False, *,
    /// interpolation='linear')`: NaN where a row holds a NaN.
    pub fn quantile(
        &self,
        q: &Tensor,
        dim: Option<i64>,
        keepdim: bool,
        interpolation: &str,
    ) -> Result<Tensor> {
        quantile_impl("quantile", self, q, dim, keepdim, interpolation, false)
    }

    /// `torch.nanquantile`: `quantile` of the non-NaN values.
    pub fn nanquantile(
        &self,
        q: &Tensor,
        dim: Option<i64>,
        keepdim: bool,
        interpolation: &str,
    ) -> Result<Tensor> {
        quantile_impl("nanquantile", self, q, dim, keepdim, interpolation, true)
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    for (name, nan) in [("quantile", false), ("nanquantile", true)] {
        let f = move |x: &T, q: &T, d: Option<i64>, k: bool, i: &str| {
            quantile_impl(name, x, q, d, k, i, nan)
        };
        r.def_typed(
            &format!("{name}(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation='linear') -> Tensor"),
            move |x: T, q: T, d: Option<i64>, k: bool, i: String| f(&x, &q, d, k, &i),
        );
        r.def_typed(
            &format!("{name}.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation='linear') -> Tensor"),
            move |x: T, q: f64, d: Option<i64>, k: bool, i: String| {
                f(&x, &Tensor::full(&[], q, x.dtype())?, d, k, &i)
            },
        );
    }
}
