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

/// Our complex elements as rustfft's, read-only.
fn as_nc_ref<T>(v: &[Complex<T>]) -> &[Nc<T>] {
    // SAFETY: as in `as_nc`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<Nc<T>>(), v.len()) }
}

/// Our complex elements as rustfft's (the same `repr(C)` `{re, im}` pair).
fn as_nc<T>(v: &mut [Complex<T>]) -> &mut [Nc<T>] {
    // SAFETY: `Complex<T>` and `num_complex::Complex<T>` are both
    // `#[repr(C)]` structs of two `T`s, `re` then `im`: same size,
    // alignment and layout; the length is unchanged.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<Nc<T>>(), v.len()) }
}

/// `t` with `dim` moved last and made contiguous (a view when it already
/// is), and that arrangement's shape.
fn moved(t: &Tensor, dim: usize) -> Result<Tensor> {
    let last = t.dim() as i64 - 1;
    t.movedim(&[dim as i64], &[last])?.contiguous()
}

/// `out` (moved arrangement, contiguous) with `dim` put back, as a view.
fn put_back(out: Tensor, dim: usize) -> Result<Tensor> {
    let last = out.dim() as i64 - 1;
    out.movedim(&[last], &[dim as i64])
}

fn runtime(op: &str, e: impl std::fmt::Display) -> crate::Error {
    crate::Error::new(crate::ErrorKind::Runtime, format!("{op}: {e}"))
}

fn c2c_typed<T: Real>(x: &Tensor, dim: usize, forward: bool, scale: f64) -> Result<Tensor>
where
    Complex<T>: Element,
{
    let m = moved(x, dim)?;
    // a fresh copy, transformed in place
    let out = Tensor::empty(m.shape(), m.dtype())?;
    let n = m.shape()[m.dim() - 1];
    if n == 0 || m.numel() == 0 {
        return put_back(out, dim);
    }
    let dir = if forward {
        FftDirection::Forward
    } else {
        FftDirection::Inverse
    };
    let fft = T::with_planner(|p| p.plan_fft(n, dir));
    let s = <T as Element>::from_f64(scale);
    crate::tensor::access::contiguous_slices_mut::<Complex<T>>("fft", &[&out], &[&m], |w, r| {
        let buf = as_nc(w[0]);
        buf.copy_from_slice(as_nc_ref(r[0]));
        let mut scratch = vec![
            Nc::new(<T as Element>::zero(), <T as Element>::zero());
            fft.get_inplace_scratch_len()
        ];
        fft.process_with_scratch(buf, &mut scratch);
        if scale != 1.0 {
            buf.iter_mut().for_each(|z| *z = *z * s);
        }
    })?;
    put_back(out, dim)
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
    let m_in = moved(x, dim)?;
    let n = m_in.shape()[m_in.dim() - 1];
    let half = n / 2 + 1;
    let mut shape = m_in.shape().to_vec();
    *shape.last_mut().expect("at least one dim") = half;
    let out = Tensor::empty(&shape, T::DTYPE.to_complex().expect("float"))?;
    if n == 0 || m_in.numel() == 0 {
        return put_back(out, dim);
    }
    let fft = T::with_real_planner(|p| p.plan_fft_forward(n));
    let s = <T as Element>::from_f64(scale);
    let mut failed = None;
    crate::tensor::access::contiguous_slices_mut::<Complex<T>>("rfft", &[&out], &[], |w, _| {
        crate::tensor::access::contiguous_slices_mut::<T>("rfft", &[], &[&m_in], |_, r| {
            let mut scratch = fft.make_scratch_vec();
            let mut row = fft.make_input_vec();
            for (inp, o) in r[0].chunks_exact(n).zip(w[0].chunks_exact_mut(half)) {
                row.copy_from_slice(inp);
                let o = as_nc(o);
                if let Err(e) = fft.process_with_scratch(&mut row, o, &mut scratch) {
                    failed = Some(runtime("rfft", e));
                    return;
                }
                if scale != 1.0 {
                    o.iter_mut().for_each(|z| *z = *z * s);
                }
            }
        })
        .unwrap_or_else(|e| failed = Some(e));
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    put_back(out, dim)
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
    let m_in = moved(x, dim)?;
    let half = m_in.shape()[m_in.dim() - 1];
    debug_assert_eq!(half, n / 2 + 1);
    let mut shape = m_in.shape().to_vec();
    *shape.last_mut().expect("at least one dim") = n;
    let out = Tensor::empty(&shape, T::DTYPE)?;
    if n == 0 || out.numel() == 0 {
        return put_back(out, dim);
    }
    let fft = T::with_real_planner(|p| p.plan_fft_inverse(n));
    let s = <T as Element>::from_f64(scale);
    let mut failed = None;
    crate::tensor::access::contiguous_slices_mut::<T>("irfft", &[&out], &[], |w, _| {
        crate::tensor::access::contiguous_slices_mut::<Complex<T>>(
            "irfft",
            &[],
            &[&m_in],
            |_, r| {
                let mut scratch = fft.make_scratch_vec();
                let mut row = fft.make_input_vec();
                for (inp, o) in r[0].chunks_exact(half).zip(w[0].chunks_exact_mut(n)) {
                    row.copy_from_slice(as_nc_ref(inp));
                    // the imaginary parts of the zero (and, for even n, the
                    // Nyquist) frequency do not enter a real signal: pocketfft
                    // ignores them, realfft wants them zero
                    row[0].im = <T as Element>::zero();
                    if n.is_multiple_of(2) {
                        row[half - 1].im = <T as Element>::zero();
                    }
                    if let Err(e) = fft.process_with_scratch(&mut row, o, &mut scratch) {
                        failed = Some(runtime("irfft", e));
                        return;
                    }
                    if scale != 1.0 {
                        o.iter_mut().for_each(|v| *v = *v * s);
                    }
                }
            },
        )
        .unwrap_or_else(|e| failed = Some(e));
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    put_back(out, dim)
}

/// The real signal of length `n` whose one-sided spectrum along `dim` is
/// `x` (`n/2 + 1` entries; `e^{+2πi jk/n}`), times `scale`.
pub(super) fn c2r(x: &Tensor, dim: usize, n: usize, scale: f64) -> Result<Tensor> {
    match x.dtype() {
        DType::C64 => c2r_typed::<f32>(x, dim, n, scale),
        _ => c2r_typed::<f64>(x, dim, n, scale),
    }
}
