//! The FFT kernels: rustfft for complex transforms, realfft for the real
//! ones, along one dimension of a tensor, with a per-thread plan cache.
//! No autograd here (see `mod.rs`).

use crate::dtype::{Complex, DType, Element};
use crate::error::Result;
use crate::tensor::Tensor;
use realfft::RealFftPlanner;
use rustfft::num_complex::Complex as Nc;
use rustfft::{FftDirection, FftNum, FftPlanner};
use std::cell::RefCell;

/// f32 and f64, with their per-thread planners.
pub(super) trait Real: FftNum + Element {
    fn with_planner<R>(f: impl FnOnce(&mut FftPlanner<Self>) -> R) -> R;
    fn with_real_planner<R>(f: impl FnOnce(&mut RealFftPlanner<Self>) -> R) -> R;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            fn with_planner<R>(f: impl FnOnce(&mut FftPlanner<Self>) -> R) -> R {
                thread_local! {
                    static P: RefCell<FftPlanner<$t>> = RefCell::new(FftPlanner::new());
                }
                P.with(|p| f(&mut p.borrow_mut()))
            }
            fn with_real_planner<R>(f: impl FnOnce(&mut RealFftPlanner<Self>) -> R) -> R {
                thread_local! {
                    static P: RefCell<RealFftPlanner<$t>> = RefCell::new(RealFftPlanner::new());
                }
                P.with(|p| f(&mut p.borrow_mut()))
            }
        }
    };
}
real!(f32);
real!(f64);

/// Our complex elements as rustfft's (the same `repr(C)` `{re, im}` pair).
fn as_nc<T>(v: &mut [Complex<T>]) -> &mut [Nc<T>] {
    // SAFETY: `Complex<T>` and `num_complex::Complex<T>` are both
    // `#[repr(C)]` structs of two `T`s, `re` then `im`: same size,
    // alignment and layout; the length is unchanged.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<Nc<T>>(), v.len()) }
}

/// `t` with `dim` moved last and made contiguous, its elements, and the
/// shape of that arrangement.
fn rows_of<E: Element>(t: &Tensor, dim: usize) -> Result<(Vec<E>, Vec<usize>)> {
    let last = t.dim() as i64 - 1;
    let m = t.movedim(&[dim as i64], &[last])?.contiguous()?;
    Ok((m.to_vec::<E>()?, m.shape().to_vec()))
}

/// A tensor from row data in the moved arrangement, with `dim` put back.
fn from_rows<E: Element>(data: Vec<E>, shape: &[usize], dim: usize) -> Result<Tensor> {
    let last = shape.len() as i64 - 1;
    Tensor::from_vec(data, shape)?.movedim(&[last], &[dim as i64])
}

fn c2c_typed<T: Real>(x: &Tensor, dim: usize, forward: bool, scale: f64) -> Result<Tensor>
where
    Complex<T>: Element,
{
    let (mut data, shape) = rows_of::<Complex<T>>(x, dim)?;
    let n = shape[shape.len() - 1];
    if n > 0 && !data.is_empty() {
        let dir = if forward {
            FftDirection::Forward
        } else {
            FftDirection::Inverse
        };
        let fft = T::with_planner(|p| p.plan_fft(n, dir));
        let buf = as_nc(&mut data);
        let mut scratch = vec![
            Nc::new(<T as Element>::zero(), <T as Element>::zero());
            fft.get_inplace_scratch_len()
        ];
        fft.process_with_scratch(buf, &mut scratch);
        if scale != 1.0 {
            let s = <T as Element>::from_f64(scale);
            buf.iter_mut().for_each(|z| *z = *z * s);
        }
    }
    from_rows(data, &shape, dim)
}

/// The complex DFT of `x` along `dim` (`forward`: `e^{-2πi jk/n}`),
/// times `scale`.
pub(super) fn c2c(x: &Tensor, dim: usize, forward: bool, scale: f64) -> Result<Tensor> {
    match x.dtype() {
        DType::C64 => c2c_typed::<f32>(x, dim, forward, scale),
        _ => c2c_typed::<f64>(x, dim, forward, scale),
    }
}

fn r2c_typed<T: Real>(x: &Tensor, dim: usize, scale: f64) -> Result<Tensor>
where
    Complex<T>: Element,
{
    let (mut data, mut shape) = rows_of::<T>(x, dim)?;
    let n = shape[shape.len() - 1];
    let m = n / 2 + 1;
    let rows = if n == 0 { 0 } else { data.len() / n };
    let mut out = vec![Complex::<T>::default(); rows * m];
    if rows > 0 {
        let fft = T::with_real_planner(|p| p.plan_fft_forward(n));
        let mut scratch = fft.make_scratch_vec();
        let s = <T as Element>::from_f64(scale);
        for (inp, o) in data.chunks_exact_mut(n).zip(out.chunks_exact_mut(m)) {
            let o = as_nc(o);
            fft.process_with_scratch(inp, o, &mut scratch)
                .map_err(|e| crate::Error::new(crate::ErrorKind::Runtime, format!("rfft: {e}")))?;
            if scale != 1.0 {
                o.iter_mut().for_each(|z| *z = *z * s);
            }
        }
    }
    *shape.last_mut().expect("at least one dim") = m;
    from_rows(out, &shape, dim)
}

/// The one-sided DFT of real `x` along `dim` (`n/2 + 1` outputs), times
/// `scale`.
pub(super) fn r2c(x: &Tensor, dim: usize, scale: f64) -> Result<Tensor> {
    match x.dtype() {
        DType::F32 => r2c_typed::<f32>(x, dim, scale),
        _ => r2c_typed::<f64>(x, dim, scale),
    }
}

fn c2r_typed<T: Real>(x: &Tensor, dim: usize, n: usize, scale: f64) -> Result<Tensor>
where
    Complex<T>: Element,
{
    let (mut data, mut shape) = rows_of::<Complex<T>>(x, dim)?;
    let m = shape[shape.len() - 1];
    debug_assert_eq!(m, n / 2 + 1);
    let rows = if m == 0 { 0 } else { data.len() / m };
    let mut out = vec![<T as Element>::zero(); rows * n];
    if rows > 0 && n > 0 {
        let fft = T::with_real_planner(|p| p.plan_fft_inverse(n));
        let mut scratch = fft.make_scratch_vec();
        let s = <T as Element>::from_f64(scale);
        for (inp, o) in data.chunks_exact_mut(m).zip(out.chunks_exact_mut(n)) {
            // the imaginary parts of the zero (and, for even n, the
            // Nyquist) frequency do not enter a real signal: pocketfft
            // ignores them, realfft wants them zero
            inp[0].im = <T as Element>::zero();
            if n % 2 == 0 {
                inp[m - 1].im = <T as Element>::zero();
            }
            fft.process_with_scratch(as_nc(inp), o, &mut scratch)
                .map_err(|e| crate::Error::new(crate::ErrorKind::Runtime, format!("irfft: {e}")))?;
            if scale != 1.0 {
                o.iter_mut().for_each(|v| *v = *v * s);
            }
        }
    }
    *shape.last_mut().expect("at least one dim") = n;
    from_rows(out, &shape, dim)
}

/// The real signal of length `n` whose one-sided spectrum along `dim` is
/// `x` (`n/2 + 1` entries; `e^{+2πi jk/n}`), times `scale`.
pub(super) fn c2r(x: &Tensor, dim: usize, n: usize, scale: f64) -> Result<Tensor> {
    match x.dtype() {
        DType::C64 => c2r_typed::<f32>(x, dim, n, scale),
        _ => c2r_typed::<f64>(x, dim, n, scale),
    }
}
