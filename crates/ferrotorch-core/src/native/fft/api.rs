//! The `torch.fft` functions: sizes (`n`, `s`), dims and norms resolved
//! as torch resolves them, then the primitives of `mod.rs`.

use super::{fft_c2c, fft_c2r, fft_r2c};
use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, DType};
use crate::error::Result;
use crate::tensor::create_ops::{opts, DeviceArg, Strided, OPTS};
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

/// The scale factor of a transform of `n` points (Note [FFT
/// normalization]): `forward` transforms are unscaled by default, inverse
/// ones divide by `n`.
fn scale(norm: Option<&str>, n: usize, forward: bool) -> Result<f64> {
    let n = n as f64;
    Ok(match (norm.unwrap_or("backward"), forward) {
        ("backward", true) | ("forward", false) => 1.0,
        ("backward", false) | ("forward", true) => 1.0 / n,
        ("ortho", _) => 1.0 / n.sqrt(),
        (other, _) => crate::bail!(Runtime, "Invalid normalization mode: \"{other}\""),
    })
}

/// `x` cut or zero-padded to `n` entries along `dim`.
fn resize(x: &Tensor, dim: usize, n: usize) -> Result<Tensor> {
    let len = x.shape()[dim];
    if n == len {
        Ok(x.clone())
    } else if n < len {
        x.narrow(dim as i64, 0, n)
    } else {
        let mut zs = x.shape().to_vec();
        zs[dim] = n - len;
        let z = Tensor::zeros(&zs, x.dtype())?;
        crate::native::cat(&[x.clone(), z], dim as i64)
    }
}

/// A real input as the floating dtype it transforms in (ints and bool:
/// the default dtype); complex inputs are refused where a real one is
/// needed.
fn real_input(op: &str, x: &Tensor) -> Result<Tensor> {
    crate::ensure!(
        !x.is_complex(),
        Type,
        "{} expects a real input tensor, but got {}",
        op.trim_start_matches("fft_"),
        x.dtype().name_title()
    );
    if x.is_floating_point() && x.dtype() != DType::F16 && x.dtype() != DType::BF16 {
        Ok(x.clone())
    } else if x.is_floating_point() {
        x.to_dtype(DType::F32)
    } else {
        x.to_dtype(get_default_dtype())
    }
}

/// Any input as the complex dtype it transforms in (`complex32`, like
/// `float16`, transforms in `complex64`).
fn complex_input(op: &str, x: &Tensor) -> Result<Tensor> {
    if x.is_complex() {
        return crate::native::complex::widen(x);
    }
    let r = real_input(op, x)?;
    r.to_dtype(r.dtype().to_complex().expect("a float dtype"))
}

/// The number of points along `dim`: `n` when given (at least 1), else
/// the input's size.
fn points(n: Option<i64>, have: usize) -> Result<usize> {
    match n {
        None => {
            crate::ensure!(
                have >= 1,
                Runtime,
                "Invalid number of data points (0) specified"
            );
            Ok(have)
        }
        Some(n) => {
            crate::ensure!(
                n >= 1,
                Runtime,
                "Invalid number of data points ({n}) specified"
            );
            Ok(n as usize)
        }
    }
}

/// torch's `canonicalize_fft_shape_and_dim_args`: the dims (wrapped,
/// unique) and the signal size for each.
fn shape_and_dims(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
) -> Result<(Vec<usize>, Vec<Option<i64>>)> {
    let nd = x.dim();
    crate::ensure!(
        nd > 0,
        Index,
        "{op}: Dimension specified as -1 but tensor has no dimensions"
    );
    let dims: Vec<usize> = match (dim, s) {
        (Some(d), _) => d.iter().map(|&d| wrap_dim(d, nd)).collect::<Result<_>>()?,
        (None, Some(s)) => {
            crate::ensure!(
                s.len() <= nd,
                Runtime,
                "{op}: Got shape with {} values but input tensor only has {nd} dimensions.",
                s.len()
            );
            (nd - s.len()..nd).collect()
        }
        (None, None) => (0..nd).collect(),
    };
    let mut seen = dims.clone();
    seen.sort_unstable();
    seen.dedup();
    crate::ensure!(
        seen.len() == dims.len(),
        Runtime,
        "{op}: FFT dims must be unique"
    );
    let sizes: Vec<Option<i64>> = match s {
        Some(s) => {
            crate::ensure!(
                s.len() == dims.len(),
                Runtime,
                "{op}: When given, dim and shape arguments must have the same length"
            );
            s.iter()
                .map(|&v| if v == -1 { None } else { Some(v) })
                .collect()
        }
        None => vec![None; dims.len()],
    };
    Ok((dims, sizes))
}

/// `fft`/`ifft`/`fftn`/`ifftn`: complex transforms over `dims`.
fn c2c_n(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    norm: Option<&str>,
    forward: bool,
) -> Result<Tensor> {
    let mut x = complex_input(op, x)?;
    let (dims, sizes) = shape_and_dims(op, &x, s, dim)?;
    let mut total = 1usize;
    for (&d, &n) in dims.iter().zip(&sizes) {
        let n = points(n, x.shape()[d])?;
        x = resize(&x, d, n)?;
        total *= n;
    }
    fft_c2c(&x, &dims, forward, scale(norm, total, forward)?)
}

/// `rfftn` (and `ihfftn`, `conj` of an inverse-scaled one): the one-sided
/// transform over the last of `dims`, then complex transforms over the rest.
fn r2c_n(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    norm: Option<&str>,
    forward: bool,
) -> Result<Tensor> {
    let mut x = real_input(op, x)?;
    let (dims, sizes) = shape_and_dims(op, &x, s, dim)?;
    crate::ensure!(
        !dims.is_empty(),
        Runtime,
        "{op} must transform at least one axis"
    );
    let mut total = 1usize;
    for (&d, &n) in dims.iter().zip(&sizes) {
        let n = points(n, x.shape()[d])?;
        x = resize(&x, d, n)?;
        total *= n;
    }
    let k = scale(norm, total, forward)?;
    let last = *dims.last().expect("nonempty");
    let mut y = fft_r2c(&x, last, k)?;
    if !forward {
        // ihfftn: conj(rfftn(x)) = the inverse transform of the conjugate
        // over the other dims, as torch orders it
        y = y.conj()?;
    }
    let rest = &dims[..dims.len() - 1];
    if rest.is_empty() {
        Ok(y)
    } else {
        fft_c2c(&y, rest, forward, 1.0)
    }
}

/// `irfftn` (and `hfftn`, of the conjugate with a forward scale): complex
/// inverse transforms over all dims but the last, then the real one.
fn c2r_n(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    norm: Option<&str>,
    forward: bool,
) -> Result<Tensor> {
    let mut x = complex_input(op, x)?;
    if forward {
        x = x.conj()?;
    }
    let (dims, sizes) = shape_and_dims(op, &x, s, dim)?;
    crate::ensure!(
        !dims.is_empty(),
        Runtime,
        "{op} must transform at least one axis"
    );
    let (last, rest) = dims.split_last().expect("nonempty");
    let mut total = 1usize;
    for (&d, &n) in rest.iter().zip(&sizes) {
        let n = points(n, x.shape()[d])?;
        x = resize(&x, d, n)?;
        total *= n;
    }
    let n_last = match sizes[sizes.len() - 1] {
        Some(n) => points(Some(n), 0)?,
        None => {
            let m = x.shape()[*last];
            crate::ensure!(
                m >= 1,
                Runtime,
                "Invalid number of data points (0) specified"
            );
            2 * (m - 1)
        }
    };
    crate::ensure!(
        n_last >= 1,
        Runtime,
        "Invalid number of data points ({n_last}) specified"
    );
    total *= n_last;
    let k = scale(norm, total, forward)?;
    if !rest.is_empty() {
        x = fft_c2c(&x, rest, false, 1.0)?;
    }
    x = resize(&x, *last, n_last / 2 + 1)?;
    fft_c2r(&x, *last, n_last, k)
}

/// The `torch.fft` functions, one line each: the one-dim ones (`n`,
/// `dim`; an absent `n` is the `-1` of `s`) and the n-dim ones (`s`,
/// `dim`), each a transform family of this file with its direction.
macro_rules! fft_ops {
    (one { $($(#[$doc:meta])* $name:ident = $op:literal: $family:ident, $forward:literal;)* }
     many { $($(#[$doc_n:meta])* $name_n:ident = $op_n:literal: $family_n:ident, $forward_n:literal;)* }) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
                    crate::enter_op!($op, self, n, dim, norm);
                    $family($op, self, Some(&[n.unwrap_or(-1)]), Some(&[dim]), norm, $forward)
                }
            )*
            $(
                $(#[$doc_n])*
                pub fn $name_n(
                    &self,
                    s: Option<&[i64]>,
                    dim: Option<&[i64]>,
                    norm: Option<&str>,
                ) -> Result<Tensor> {
                    crate::enter_op!($op_n, self, s, dim, norm);
                    $family_n($op_n, self, s, dim, norm, $forward_n)
                }
            )*
        }
    };
}

fft_ops! {
    one {
    /// `torch.fft.fft(input, n=None, dim=-1, norm=None)`.
    fft_fft = "fft_fft": c2c_n, true;
    /// `torch.fft.ifft(input, n=None, dim=-1, norm=None)`.
    fft_ifft = "fft_ifft": c2c_n, false;
    /// `torch.fft.rfft(input, n=None, dim=-1, norm=None)`: the `n/2 + 1`
    /// non-negative frequencies of a real signal.
    fft_rfft = "fft_rfft": r2c_n, true;
    /// `torch.fft.irfft(input, n=None, dim=-1, norm=None)`: the real
    /// signal (length `n`, default `2(m-1)`) of a one-sided spectrum.
    fft_irfft = "fft_irfft": c2r_n, false;
    /// `torch.fft.hfft(input, n=None, dim=-1, norm=None)`: the real
    /// spectrum of a signal with Hermitian symmetry, given its first half.
    fft_hfft = "fft_hfft": c2r_n, true;
    /// `torch.fft.ihfft(input, n=None, dim=-1, norm=None)`: the inverse of
    /// `hfft`, one-sided.
    fft_ihfft = "fft_ihfft": r2c_n, false;
    }
    many {
    /// `torch.fft.fftn(input, s=None, dim=None, norm=None)`.
    fft_fftn = "fft_fftn": c2c_n, true;
    /// `torch.fft.ifftn(input, s=None, dim=None, norm=None)`.
    fft_ifftn = "fft_ifftn": c2c_n, false;
    /// `torch.fft.rfftn(input, s=None, dim=None, norm=None)`.
    fft_rfftn = "fft_rfftn": r2c_n, true;
    /// `torch.fft.irfftn(input, s=None, dim=None, norm=None)`.
    fft_irfftn = "fft_irfftn": c2r_n, false;
    /// `torch.fft.hfftn(input, s=None, dim=None, norm=None)`.
    fft_hfftn = "fft_hfftn": c2r_n, true;
    /// `torch.fft.ihfftn(input, s=None, dim=None, norm=None)`.
    fft_ihfftn = "fft_ihfftn": r2c_n, false;
    }
}

crate::ops! {
    register = register_shifts;
    /// `torch.fft.fftshift(input, dim=None)`: the zero frequency moved to
    /// the middle.
    #[op = "fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor"]
    pub fn fft_fftshift(&self, dim: Option<&[i64]>) -> Result<Tensor> {
        self.fft_shift(dim, 1)
    }

    /// `torch.fft.ifftshift(input, dim=None)`: `fftshift` undone.
    #[op = "fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor"]
    pub fn fft_ifftshift(&self, dim: Option<&[i64]>) -> Result<Tensor> {
        self.fft_shift(dim, -1)
    }

    fn fft_shift(&self, dim: Option<&[i64]>, sign: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return Ok(self.clone());
        }
        let all: Vec<i64> = (0..self.dim() as i64).collect();
        let dims = dim.unwrap_or(&all);
        let shifts: Vec<i64> = dims
            .iter()
            .map(|&d| Ok(sign * (self.shape()[wrap_dim(d, self.dim())?] / 2) as i64))
            .collect::<Result<_>>()?;
        if dims.is_empty() {
            return Ok(self.clone());
        }
        self.roll(&shifts, dims)
    }
}

/// `torch.fft.fftfreq(n, d=1.0)`: the sample frequencies of an `n`-point
/// transform, `[0, 1, ..., -1] / (d n)`.
pub fn fftfreq(n: i64, d: f64, dtype: Option<DType>) -> Result<Tensor> {
    crate::ensure!(
        n >= 0,
        Runtime,
        "fft_fftfreq: n must be non-negative, got {n}"
    );
    let mut v: Vec<f64> = crate::storage::try_vec(n as usize)?;
    v.extend((0..n).map(|i| if i < (n + 1) / 2 { i } else { i - n } as f64 / (d * n as f64)));
    Tensor::from_vec(v, &[n as usize])?.to_dtype(dtype.unwrap_or_else(get_default_dtype))
}

/// `torch.fft.rfftfreq(n, d=1.0)`: the non-negative frequencies,
/// `[0, ..., n/2] / (d n)`.
pub fn rfftfreq(n: i64, d: f64, dtype: Option<DType>) -> Result<Tensor> {
    crate::ensure!(
        n >= 0,
        Runtime,
        "fft_rfftfreq: n must be non-negative, got {n}"
    );
    let mut v: Vec<f64> = crate::storage::try_vec(n as usize / 2 + 1)?;
    v.extend((0..=n / 2).map(|i| i as f64 / (d * n as f64)));
    let len = v.len();
    Tensor::from_vec(v, &[len])?.to_dtype(dtype.unwrap_or_else(get_default_dtype))
}

pub(crate) fn register(r: &mut Registry) {
    register_shifts(r);
    type T = Tensor;
    type N = Option<i64>;
    type S = Option<String>;
    type L = Option<Vec<i64>>;
    for (name, f) in [
        (
            "fft_fft",
            T::fft_fft as fn(&T, N, i64, Option<&str>) -> Result<T>,
        ),
        ("fft_ifft", T::fft_ifft),
        ("fft_rfft", T::fft_rfft),
        ("fft_irfft", T::fft_irfft),
        ("fft_hfft", T::fft_hfft),
        ("fft_ihfft", T::fft_ihfft),
    ] {
        r.def_typed(
            &format!("{name}(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"),
            move |x: T, n: N, d: i64, norm: S| f(&x, n, d, norm.as_deref()),
        );
    }
    type Fnd = fn(&T, Option<&[i64]>, Option<&[i64]>, Option<&str>) -> Result<T>;
    for (name, f, two) in [
        ("fft_fftn", T::fft_fftn as Fnd, false),
        ("fft_ifftn", T::fft_ifftn, false),
        ("fft_rfftn", T::fft_rfftn, false),
        ("fft_irfftn", T::fft_irfftn, false),
        ("fft_hfftn", T::fft_hfftn, false),
        ("fft_ihfftn", T::fft_ihfftn, false),
        ("fft_fft2", T::fft_fftn, true),
        ("fft_ifft2", T::fft_ifftn, true),
        ("fft_rfft2", T::fft_rfftn, true),
        ("fft_irfft2", T::fft_irfftn, true),
        ("fft_hfft2", T::fft_hfftn, true),
        ("fft_ihfft2", T::fft_ihfftn, true),
    ] {
        if two {
            r.def_typed(
                &format!("{name}(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor"),
                move |x: T, s: L, d: Vec<i64>, norm: S| f(&x, s.as_deref(), Some(&d), norm.as_deref()),
            );
        } else {
            r.def_typed(
                &format!("{name}(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"),
                move |x: T, s: L, d: L, norm: S| f(&x, s.as_deref(), d.as_deref(), norm.as_deref()),
            );
        }
    }
    r.def_typed(
        &format!("fft_fftfreq(int n, float d=1.0, *, {OPTS}) -> Tensor"),
        |n: i64, d: f64, dt: Option<DType>, _: Strided, dev: DeviceArg, _: Option<bool>| {
            fftfreq(n, d, opts(dt, dev).dtype)
        },
    );
    r.def_typed(
        &format!("fft_rfftfreq(int n, float d=1.0, *, {OPTS}) -> Tensor"),
        |n: i64, d: f64, dt: Option<DType>, _: Strided, dev: DeviceArg, _: Option<bool>| {
            rfftfreq(n, d, opts(dt, dev).dtype)
        },
    );
    super::stft::register(r);
}
