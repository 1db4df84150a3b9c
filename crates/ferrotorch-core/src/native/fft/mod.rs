//! `torch.fft`: the three transforms every FFT op is made of — complex to
//! complex, real to one-sided complex, one-sided complex to real — with
//! their derivatives (PyTorch's `_fft_c2c`, `_fft_r2c`, `_fft_c2r`), and
//! the user-facing ops built on them (`api.rs`), windows and the
//! short-time transforms (`stft.rs`).
//!
//! # Note [FFT normalization]
//! Each primitive takes the scale factor its result is multiplied by, not
//! a norm name: `fft(norm="ortho")` is a forward transform times
//! `1/√n`. The adjoint of `s·F` is `s·Fᴴ`, so a primitive's backward is
//! the opposite-direction transform with the *same* scale (torch's
//! formulas in `derivatives.yaml`).

mod api;
mod kernels;
mod stft;

use crate::autograd::{needs_grad, raw, record1};
use crate::error::Result;
use crate::tensor::Tensor;

/// Complex DFT of complex `x` over `dims` (each in turn), times `scale`.
pub(crate) fn fft_c2c(x: &Tensor, dims: &[usize], forward: bool, scale: f64) -> Result<Tensor> {
    let y = raw(&[x], || {
        let mut t = x.clone();
        for (i, &d) in dims.iter().enumerate() {
            t = kernels::c2c(&t, d, forward, if i == 0 { scale } else { 1.0 })?;
        }
        Ok::<_, crate::Error>(t)
    })?;
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let dims = dims.to_vec();
    record1(
        "FftC2CBackward0",
        &[x],
        y,
        smallvec::smallvec![],
        move |c| {
            Ok(smallvec::smallvec![Some(fft_c2c(
                c.grad(),
                &dims,
                !forward,
                scale
            )?)])
        },
    )
}

/// One-sided forward DFT of real `x` along `dim`, times `scale`.
pub(crate) fn fft_r2c(x: &Tensor, dim: usize, scale: f64) -> Result<Tensor> {
    let n = x.shape()[dim];
    let y = raw(&[x], || kernels::r2c(x, dim, scale))?;
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "FftR2CBackward0",
        &[x],
        y,
        smallvec::smallvec![],
        move |c| {
            // the spectrum's other half does not reach the loss: zero-pad
            // the gradient to full length, take the adjoint transform's real part
            let g = c.grad();
            let m = g.shape()[dim];
            let full = if n > m {
                let mut zs: Vec<usize> = g.shape().to_vec();
                zs[dim] = n - m;
                let z = Tensor::zeros(&zs, g.dtype())?;
                crate::native::cat(&[g.clone(), z], dim as i64)?
            } else {
                g.clone()
            };
            Ok(smallvec::smallvec![Some(
                fft_c2c(&full, &[dim], false, scale)?.real()?
            )])
        },
    )
}

/// The real length-`n` signal along `dim` of the one-sided spectrum `x`
/// (`n/2 + 1` entries), times `scale`.
pub(crate) fn fft_c2r(x: &Tensor, dim: usize, n: usize, scale: f64) -> Result<Tensor> {
    let y = raw(&[x], || kernels::c2r(x, dim, n, scale))?;
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "FftC2RBackward0",
        &[x],
        y,
        smallvec::smallvec![],
        move |c| {
            // torch's fft_c2r_backward: the forward transform of the gradient,
            // with the entries whose mirror image lies outside the one-sided
            // range counted twice
            let gi = fft_r2c(c.grad(), dim, scale)?;
            let m = gi.shape()[dim];
            let doubled = n - m;
            if doubled == 0 {
                return Ok(smallvec::smallvec![Some(gi)]);
            }
            let mut w = vec![1.0f64; m];
            w[1..=doubled].iter_mut().for_each(|v| *v = 2.0);
            let mut ws = vec![1usize; gi.dim()];
            ws[dim] = m;
            let w = Tensor::from_vec(w, &ws)?.to_dtype(gi.dtype().to_real())?;
            Ok(smallvec::smallvec![Some(gi.mul(&w)?)])
        },
    )
}

pub(crate) use api::register;
