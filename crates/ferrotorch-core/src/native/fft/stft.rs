//! Window functions (`hann_window`, `hamming_window`, `blackman_window`,
//! `bartlett_window`, `kaiser_window`) and the short-time Fourier
//! transform and its inverse (`stft`, `istft`), made of `pad`, strided
//! frames, the FFT primitives and an overlap-add by `index_add`, so their
//! gradients come from those ops.

use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, DType};
use crate::error::Result;
use crate::native::special_fns as sf;
use crate::scalar::Scalar;
use crate::tensor::create_ops::{opts, DeviceArg, Strided, OPTS};
use crate::tensor::Tensor;

/// A window of `n` points from `f(i, m)` over `m = n - 1` intervals
/// (`periodic`: computed for `n + 1` points, the last dropped), as torch.
fn window(
    op: &str,
    n: i64,
    periodic: bool,
    dtype: Option<DType>,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Tensor> {
    crate::ensure!(
        n >= 0,
        Runtime,
        "{op} requires non-negative window_length, got window_length={n}"
    );
    let dtype = dtype.unwrap_or_else(get_default_dtype);
    crate::ensure!(
        dtype.is_floating_point(),
        Runtime,
        "{op} expects floating point dtypes, got: {dtype}"
    );
    let n = n as usize;
    // fallible: a window length is user input
    let mut v: Vec<f64> = crate::storage::try_vec(n)?;
    match n {
        0 => {}
        1 => v.push(1.0),
        _ => {
            let m = if periodic { n } else { n - 1 } as f64;
            v.extend((0..n).map(|i| f(i as f64, m)));
        }
    }
    Tensor::from_vec(v, &[n])?.to_dtype(dtype)
}

/// `torch.hamming_window(n, periodic=True, alpha=0.54, beta=0.46)`.
pub fn hamming_window(
    n: i64,
    periodic: bool,
    alpha: f64,
    beta: f64,
    dtype: Option<DType>,
) -> Result<Tensor> {
    window("hamming_window", n, periodic, dtype, |i, m| {
        alpha - beta * (2.0 * std::f64::consts::PI * i / m).cos()
    })
}

/// `torch.hann_window(n, periodic=True)`.
pub fn hann_window(n: i64, periodic: bool, dtype: Option<DType>) -> Result<Tensor> {
    window("hann_window", n, periodic, dtype, |i, m| {
        0.5 - 0.5 * (2.0 * std::f64::consts::PI * i / m).cos()
    })
}

/// `torch.blackman_window(n, periodic=True)`.
pub fn blackman_window(n: i64, periodic: bool, dtype: Option<DType>) -> Result<Tensor> {
    window("blackman_window", n, periodic, dtype, |i, m| {
        let t = 2.0 * std::f64::consts::PI * i / m;
        0.42 - 0.5 * t.cos() + 0.08 * (2.0 * t).cos()
    })
}

/// `torch.bartlett_window(n, periodic=True)`.
pub fn bartlett_window(n: i64, periodic: bool, dtype: Option<DType>) -> Result<Tensor> {
    window("bartlett_window", n, periodic, dtype, |i, m| {
        1.0 - (2.0 * i / m - 1.0).abs()
    })
}

/// `torch.kaiser_window(n, periodic=True, beta=12.0)`.
pub fn kaiser_window(n: i64, periodic: bool, beta: f64, dtype: Option<DType>) -> Result<Tensor> {
    let i0b = sf::bessel_i(0, beta, false);
    window("kaiser_window", n, periodic, dtype, |i, m| {
        let a = m / 2.0;
        let r = (i - a) / a;
        sf::bessel_i(0, beta * (1.0 - r * r).max(0.0).sqrt(), false) / i0b
    })
}

/// The `stft`/`istft` arguments every call checks the same way.
struct Frames {
    n_fft: usize,
    hop: usize,
    win: Tensor,
}

fn frames_args(
    op: &str,
    n_fft: i64,
    hop_length: Option<i64>,
    win_length: Option<i64>,
    window: Option<&Tensor>,
    dtype: DType,
) -> Result<Frames> {
    crate::ensure!(
        n_fft > 0,
        Runtime,
        "{op}: expected 0 < n_fft, but got n_fft={n_fft}"
    );
    let hop = hop_length.unwrap_or(n_fft / 4);
    crate::ensure!(
        hop > 0,
        Runtime,
        "{op}: expected hop_length > 0, but got hop_length={hop}"
    );
    let wl = win_length.unwrap_or(n_fft);
    crate::ensure!(
        wl > 0 && wl <= n_fft,
        Runtime,
        "{op}: expected 0 < win_length <= n_fft, but got win_length={wl}"
    );
    let win = match window {
        Some(w) => {
            crate::ensure!(
                w.dim() == 1 && w.shape()[0] as i64 == wl,
                Runtime,
                "{op}: expected a 1D window tensor of size equal to win_length={wl}, but got window with size {:?}",
                w.shape()
            );
            w.clone()
        }
        None => Tensor::ones(&[wl as usize], dtype.to_real())?,
    };
    // centre the window in n_fft points
    let left = (n_fft - wl) / 2;
    let win = if wl < n_fft {
        win.pad(&[left, n_fft - wl - left], "constant", 0.0)?
    } else {
        win
    };
    Ok(Frames {
        n_fft: n_fft as usize,
        hop: hop as usize,
        win,
    })
}

impl Tensor {
    /// `torch.stft(input, n_fft, hop_length=None, win_length=None,
    /// window=None, center=True, pad_mode='reflect', normalized=False,
    /// onesided=None, return_complex=None)`: `[(B,) freq, frames]`.
    #[allow(clippy::too_many_arguments)]
    pub fn stft(
        &self,
        n_fft: i64,
        hop_length: Option<i64>,
        win_length: Option<i64>,
        window: Option<&Tensor>,
        center: bool,
        pad_mode: &str,
        normalized: bool,
        onesided: Option<bool>,
        return_complex: Option<bool>,
    ) -> Result<Tensor> {
        let op = "stft";
        let complex_in = self.is_complex() || window.is_some_and(Tensor::is_complex);
        let Some(return_complex) = return_complex.or(complex_in.then_some(true)) else {
            crate::bail!(
                Runtime,
                "stft requires the return_complex parameter be given for real inputs, and will further require that return_complex=True in a future PyTorch release."
            );
        };
        crate::ensure!(
            self.dim() == 1 || self.dim() == 2,
            Runtime,
            "stft: expected a 1D or 2D tensor, but got {}D",
            self.dim()
        );
        let batched = self.dim() == 2;
        let mut x = if batched {
            self.clone()
        } else {
            self.unsqueeze(0)?
        };
        if !x.is_complex() && !x.is_floating_point() {
            x = x.to_dtype(get_default_dtype())?;
        }
        if center {
            let p = n_fft / 2;
            x = x
                .unsqueeze(1)?
                .pad(&[p, p], pad_mode, 0.0)?
                .squeeze_dims(&[1])?;
        }
        let f = frames_args(op, n_fft, hop_length, win_length, window, x.dtype())?;
        let len = x.shape()[1];
        crate::ensure!(
            f.n_fft <= len,
            Runtime,
            "stft: expected 0 < n_fft < {len}, but got n_fft={n_fft}"
        );
        let n_frames = 1 + (len - f.n_fft) / f.hop;
        let x = x.contiguous()?;
        let (b, s) = (x.shape()[0], x.stride()[0]);
        // [B, frames, n_fft] windows over the signal, then the window
        let frames = x
            .as_strided(
                &[b, n_frames, f.n_fft],
                &[s, f.hop, 1],
                Some(x.storage_offset()),
            )?
            .mul(&f.win)?;
        let onesided = onesided.unwrap_or(!frames.is_complex());
        crate::ensure!(
            !(onesided && frames.is_complex()),
            Runtime,
            "Cannot have onesided output if window or input is complex"
        );
        let k = if normalized {
            1.0 / (f.n_fft as f64).sqrt()
        } else {
            1.0
        };
        let spec = if onesided {
            super::fft_r2c(&frames, 2, k)?
        } else {
            let c = if frames.is_complex() {
                frames
            } else {
                frames.to_dtype(frames.dtype().to_complex().expect("float"))?
            };
            super::fft_c2c(&c, &[2], true, k)?
        };
        let spec = spec.transpose(1, 2)?;
        let spec = if batched {
            spec
        } else {
            spec.squeeze_dims(&[0])?
        };
        if return_complex {
            Ok(spec)
        } else {
            spec.view_as_real()
        }
    }

    /// `torch.istft(input, n_fft, hop_length=None, win_length=None,
    /// window=None, center=True, normalized=False, onesided=None,
    /// length=None, return_complex=False)`: the signal whose `stft` is
    /// `input`, by windowed overlap-add.
    #[allow(clippy::too_many_arguments)]
    pub fn istft(
        &self,
        n_fft: i64,
        hop_length: Option<i64>,
        win_length: Option<i64>,
        window: Option<&Tensor>,
        center: bool,
        normalized: bool,
        onesided: Option<bool>,
        length: Option<i64>,
        return_complex: bool,
    ) -> Result<Tensor> {
        let op = "istft";
        crate::ensure!(
            self.is_complex(),
            Runtime,
            "istft requires a complex-valued input tensor"
        );
        crate::ensure!(
            self.dim() == 2 || self.dim() == 3,
            Runtime,
            "istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got {}D",
            self.dim()
        );
        let batched = self.dim() == 3;
        let spec = if batched {
            self.clone()
        } else {
            self.unsqueeze(0)?
        };
        let f = frames_args(
            op,
            n_fft,
            hop_length,
            win_length,
            window,
            spec.dtype().to_real(),
        )?;
        let fft_size = spec.shape()[1];
        let n_frames = spec.shape()[2];
        let onesided = onesided.unwrap_or(fft_size != f.n_fft);
        if onesided {
            crate::ensure!(
                f.n_fft / 2 + 1 == fft_size,
                Runtime,
                "istft: expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when onesided=True, but got {fft_size}"
            );
        } else {
            crate::ensure!(
                f.n_fft == fft_size,
                Runtime,
                "istft: expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when onesided=False, but got {fft_size}"
            );
        }
        crate::ensure!(
            !(return_complex && onesided),
            Runtime,
            "cannot have onesided output if window or input is complex"
        );
        let k = if normalized {
            (f.n_fft as f64).sqrt()
        } else {
            1.0
        };
        let inv = 1.0 / f.n_fft as f64;
        let frames = spec.transpose(1, 2)?; // [B, frames, freq]
        let frames = if onesided {
            super::fft_c2r(&frames, 2, f.n_fft, inv * k)?
        } else {
            let t = super::fft_c2c(&frames, &[2], false, inv * k)?;
            if return_complex {
                t
            } else {
                crate::ensure!(
                    window.is_none_or(|w| !w.is_complex()),
                    Runtime,
                    "istft: a complex window needs return_complex=True"
                );
                t.real()?
            }
        };
        let frames = frames.mul(&f.win)?; // [B, frames, n_fft]
        let b = frames.shape()[0];
        let total = f
            .hop
            .checked_mul(n_frames.max(1) - 1)
            .and_then(|v| v.checked_add(f.n_fft))
            .ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    format!("istft: hop_length {} is too large", f.hop),
                )
            })?;
        let idx: Vec<i64> = (0..n_frames)
            .flat_map(|t| (0..f.n_fft).map(move |j| (t * f.hop + j) as i64))
            .collect();
        let idx = Tensor::from_vec(idx, &[n_frames * f.n_fft])?;
        let overlap_add = |src: &Tensor| -> Result<Tensor> {
            let zeros = Tensor::zeros(&[src.shape()[0], total], src.dtype())?;
            zeros.index_add(
                1,
                &idx,
                &src.reshape(&[src.shape()[0] as i64, -1])?,
                Scalar::Int(1),
            )
        };
        let y = if frames.is_complex() {
            crate::native::complex(
                &overlap_add(&frames.real()?.contiguous()?)?,
                &overlap_add(&frames.imag()?.contiguous()?)?,
            )?
        } else {
            overlap_add(&frames)?
        };
        let w2 = f
            .win
            .mul(&f.win)?
            .expand(&[1, n_frames as i64, f.n_fft as i64])?
            .contiguous()?;
        let env = overlap_add(&w2)?;
        let start = if center { f.n_fft / 2 } else { 0 };
        let end = match length {
            Some(l) => start.saturating_add(l.max(0) as usize),
            None if center => total.saturating_sub(f.n_fft / 2),
            None => total,
        };
        let keep = end.min(total).saturating_sub(start);
        let y = y.narrow(1, start as i64, keep)?;
        let env = env.narrow(1, start as i64, keep)?;
        crate::ensure!(
            !env.abs()?.lt(1e-11)?.any()?.item()?.to_bool(),
            Runtime,
            "istft(...): window overlap add min: 0 (the window envelope is zero somewhere: check the window, hop_length and n_fft)"
        );
        let mut y = y.div(&env)?;
        if end > total {
            let z = Tensor::zeros(&[b, end - total], y.dtype())?;
            y = crate::native::cat(&[y, z], 1)?;
        }
        if batched {
            Ok(y)
        } else {
            y.squeeze_dims(&[0])
        }
    }
}

pub(crate) fn register(r: &mut Registry) {
    type T = Tensor;
    type Dt = Option<DType>;
    type Pin = Option<bool>;
    macro_rules! win {
        ($name:literal, $f:expr) => {
            r.def_typed(
                &format!("{}(int window_length, *, {OPTS}) -> Tensor", $name),
                |n: i64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
                    $f(n, true, opts(dt, dev).dtype)
                },
            );
            r.def_typed(
                &format!(
                    "{}.periodic(int window_length, bool periodic, *, {OPTS}) -> Tensor",
                    $name
                ),
                |n: i64, p: bool, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
                    $f(n, p, opts(dt, dev).dtype)
                },
            );
        };
    }
    win!("hann_window", hann_window);
    win!("blackman_window", blackman_window);
    win!("bartlett_window", bartlett_window);
    win!("hamming_window", |n, p, d| hamming_window(
        n, p, 0.54, 0.46, d
    ));
    win!("kaiser_window", |n, p, d| kaiser_window(n, p, 12.0, d));
    r.def_typed(
        &format!("hamming_window.periodic_alpha(int window_length, bool periodic, float alpha, *, {OPTS}) -> Tensor"),
        |n: i64, p: bool, a: f64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            hamming_window(n, p, a, 0.46, opts(dt, dev).dtype)
        },
    );
    r.def_typed(
        &format!("hamming_window.periodic_alpha_beta(int window_length, bool periodic, float alpha, float beta, *, {OPTS}) -> Tensor"),
        |n: i64, p: bool, a: f64, b: f64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            hamming_window(n, p, a, b, opts(dt, dev).dtype)
        },
    );
    r.def_typed(
        &format!(
            "kaiser_window.beta(int window_length, bool periodic, float beta, *, {OPTS}) -> Tensor"
        ),
        |n: i64, p: bool, b: f64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            kaiser_window(n, p, b, opts(dt, dev).dtype)
        },
    );
    r.def_typed(
        "stft.center(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, str pad_mode=\"reflect\", bool normalized=False, bool? onesided=None, bool? return_complex=None) -> Tensor",
        |x: T, n: i64, h: Option<i64>, w: Option<i64>, win: Option<T>, c: bool, pm: String, norm: bool, one: Option<bool>, rc: Option<bool>| {
            x.stft(n, h, w, win.as_ref(), c, &pm, norm, one, rc)
        },
    );
    r.def_typed(
        "istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor",
        |x: T, n: i64, h: Option<i64>, w: Option<i64>, win: Option<T>, c: bool, norm: bool, one: Option<bool>, len: Option<i64>, rc: bool| {
            x.istft(n, h, w, win.as_ref(), c, norm, one, len, rc)
        },
    );
}
