//! Pooling: `max_pool1d`/`max_pool2d` (with indices), `avg_pool2d`,
//! `adaptive_avg_pool2d`, `adaptive_max_pool2d`. Computed per plane in f64
//! and converted back; indices are flat positions within each input plane,
//! as PyTorch returns them.

use crate::dispatch::typed::single;
use crate::dispatch::Registry;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::parallel;

fn pair(op: &str, name: &str, v: &[usize], default: Option<[usize; 2]>) -> Result<[usize; 2]> {
    match (v, default) {
        ([], Some(d)) => Ok(d),
        _ => pair_given(op, name, v),
    }
}

fn pair_given(op: &str, name: &str, v: &[usize]) -> Result<[usize; 2]> {
    match v {
        [a] => Ok([*a, *a]),
        [a, b] => Ok([*a, *b]),
        _ => crate::bail!(
            Runtime,
            "{op}: {name} must either be a single int, or a tuple of two ints"
        ),
    }
}

/// Output length of a pooling window sweep, with PyTorch's ceil_mode rule
/// (the last window must start inside the input or left padding).
fn pooled_len(input: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> Option<usize> {
    let span = d * (k - 1) + 1;
    let num = (input + 2 * p).checked_sub(span)?;
    let mut out = if ceil { num.div_ceil(s) } else { num / s } + 1;
    if ceil && (out - 1) * s >= input + p {
        out -= 1;
    }
    Some(out)
}

/// A checked 2-D pooling window and the output size it gives.
struct Window {
    k: [usize; 2],
    s: [usize; 2],
    p: [usize; 2],
    d: [usize; 2],
    out: [usize; 2],
}

impl Window {
    /// Parse kernel/stride (default: the kernel)/padding/dilation as
    /// PyTorch does and compute the output size for the `[N, C, H, W]` input.
    fn new(
        op: &str,
        x: &Tensor,
        kernel_size: &[usize],
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        ceil_mode: bool,
    ) -> Result<Window> {
        let k = pair(op, "kernel_size", kernel_size, None)?;
        let s = pair(op, "stride", stride, Some(k))?;
        let p = pair(op, "padding", padding, Some([0, 0]))?;
        let d = pair(op, "dilation", dilation, Some([1, 1]))?;
        crate::ensure!(
            k.iter().chain(&s).chain(&d).all(|&v| v > 0),
            Runtime,
            "{op}: kernel size, stride and dilation must be greater than zero"
        );
        crate::ensure!(
            p[0] <= k[0] / 2 && p[1] <= k[1] / 2,
            Runtime,
            "{op}: pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
            p[0],
            k[0],
            d[0]
        );
        let (h, w) = (x.shape()[2], x.shape()[3]);
        let (Some(ho), Some(wo)) = (
            pooled_len(h, k[0], s[0], p[0], d[0], ceil_mode),
            pooled_len(w, k[1], s[1], p[1], d[1], ceil_mode),
        ) else {
            crate::bail!(
                Runtime,
                "{op}: Given input size: {:?}. Calculated output size is too small",
                x.shape()
            );
        };
        Ok(Window {
            k,
            s,
            p,
            d,
            out: [ho, wo],
        })
    }
}

/// `[N, C, H, W]` or `[C, H, W]` → (batched view, was_unbatched).
fn batched(op: &str, x: &Tensor) -> Result<(Tensor, bool)> {
    crate::ensure!(
        x.dim() == 3 || x.dim() == 4,
        Runtime,
        "{op}: Expected 3D or 4D (batch mode) tensor for input, but got: {:?}",
        x.shape()
    );
    crate::ensure!(
        x.is_floating_point(),
        NotImplemented,
        "{op}: not implemented for '{}'",
        x.dtype().name_title()
    );
    Ok(if x.dim() == 3 {
        (x.unsqueeze(0)?, true)
    } else {
        (x.clone(), false)
    })
}

/// Apply `f(plane, out_plane, idx_plane)` to each `[H, W]` plane in parallel.
fn per_plane(
    x: &Tensor,
    ho: usize,
    wo: usize,
    f: impl Fn(&[f64], &mut [f64], &mut [i64]) + Sync + Send,
) -> Result<(Tensor, Tensor)> {
    let (n, c, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    // Work buffers come from the caching allocator (not fresh Vecs), so
    // repeated calls reuse warm pages instead of faulting in new ones.
    let data = x.to_dtype(crate::DType::F64)?.contiguous()?;
    let planes = n * c;
    // Zeroed: the average pool's transpose accumulates into its output.
    let out = Tensor::zeros(&[n, c, ho, wo], crate::DType::F64)?;
    let idx = Tensor::zeros(&[n, c, ho, wo], crate::DType::I64)?;
    {
        let _guard =
            crate::storage::lock_storages(&[data.storage()], &[out.storage(), idx.storage()]);
        let (dp, op, ip) = (
            data.data_ptr() as usize,
            out.data_ptr() as usize,
            idx.data_ptr() as usize,
        );
        parallel::parallel_for(planes, 1.max(4096 / (h * w).max(1)), |r| {
            for p in r {
                // SAFETY: the three tensors are fresh or contiguous, locked,
                // and sized planes × plane; plane p of both outputs is
                // written by this task only.
                let (d, o, i) = unsafe {
                    (
                        std::slice::from_raw_parts((dp as *const f64).add(p * h * w), h * w),
                        std::slice::from_raw_parts_mut((op as *mut f64).add(p * ho * wo), ho * wo),
                        std::slice::from_raw_parts_mut((ip as *mut i64).add(p * ho * wo), ho * wo),
                    )
                };
                f(d, o, i);
            }
        });
    }
    Ok((out.to_dtype(x.dtype())?, idx))
}

/// NaN-propagating maximum (PyTorch's max pooling returns NaN for a window
/// holding one); a branch-free select the compiler vectorises.
#[inline(always)]
fn nan_max(m: f32, v: f32) -> f32 {
    if v > m || v.is_nan() {
        v
    } else {
        m
    }
}

ferrotorch_kernels::multiversion! {
    /// One `[h, w]` plane of [`max_values_f32`] into `dst` (`[ho, wo]`),
    /// with `vm` the padded row buffer (`-inf` outside `pw..pw + w`),
    /// compiled per CPU level (Note [Multiversioned loops]).
    ///
    /// # Safety
    /// None beyond the slices' bounds; `unsafe` only for the dispatch.
    unsafe fn max_plane[](src: &[f32], dst: &mut [f32], vm: &mut [f32], win: &Window, hw: [usize; 2]) {
        let [h, w] = hw;
        let [ho, wo] = win.out;
        let ([kh, kw], [sh, sw], [ph, pw], [dh, dw]) = (win.k, win.s, win.p, win.d);
        for (oh, drow) in dst.chunks_exact_mut(wo.max(1)).enumerate().take(ho) {
            let row = &mut vm[pw..pw + w];
            row.fill(f32::NEG_INFINITY);
            for ki in 0..kh {
                let ih = (oh * sh + ki * dh) as isize - ph as isize;
                if ih >= 0 && (ih as usize) < h {
                    let s = &src[ih as usize * w..][..w];
                    for (m, &v) in row.iter_mut().zip(s) {
                        *m = nan_max(*m, v);
                    }
                }
            }
            if (kw, sw, dw) == (3, 2, 1) {
                // the common 3×3/2 window, as plain slices the compiler
                // vectorises (stride-2 loads)
                for (ow, d) in drow.iter_mut().enumerate() {
                    let t = &vm[2 * ow..2 * ow + 3];
                    *d = nan_max(nan_max(t[0], t[1]), t[2]);
                }
                continue;
            }
            for (ow, d) in drow.iter_mut().enumerate() {
                let base = ow * sw;
                let mut best = vm[base];
                for kj in 1..kw {
                    best = nan_max(best, vm[base + kj * dw]);
                }
                *d = best;
            }
        }
    }
}

/// Max pooling of a contiguous f32 `[N, C, H, W]` batch, values only
/// (the no-grad path of `max_pool2d`), with the NaN rule of
/// [`Tensor::max_pool2d_with_indices`], planes shared over the threads.
/// Each output row first takes the maximum over its window's input rows,
/// a vectorised pass over whole rows, into a buffer laid out in padded
/// columns (`-inf` outside the image), then the maximum over each
/// window's columns of that buffer.
fn max_values_f32(x: &Tensor, win: &Window) -> Result<Tensor> {
    let (n, c, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let [ho, wo] = win.out;
    let ([_, kw], [_, sw], [_, pw], [_, dw]) = (win.k, win.s, win.p, win.d);
    // ceil_mode windows may reach past the right padding
    let width = (pw + w).max((wo.max(1) - 1) * sw + (kw - 1) * dw + 1);
    let out = Tensor::empty(&[n, c, ho, wo], crate::DType::F32)?;
    let guard = crate::storage::lock_storages(&[x.storage()], &[out.storage()]);
    let (xp, op) = (x.data_ptr() as usize, out.data_ptr() as usize);
    parallel::parallel_for(n * c, 1.max(4096 / (h * w).max(1)), |r| {
        let mut vm = vec![f32::NEG_INFINITY; width];
        for p in r {
            // SAFETY: x is contiguous and locked, out is fresh; plane p of
            // out is written by this task only.
            let (src, dst) = unsafe {
                (
                    std::slice::from_raw_parts((xp as *const f32).add(p * h * w), h * w),
                    std::slice::from_raw_parts_mut((op as *mut f32).add(p * ho * wo), ho * wo),
                )
            };
            // SAFETY: the plane's slices were checked above; the loop
            // only dispatches on the CPU's features.
            unsafe { max_plane(src, dst, &mut vm, win, [h, w]) };
        }
    });
    drop(guard);
    Ok(out)
}

/// Max pooling of a contiguous f32 `[N, C, H, W]` batch with the flat
/// per-plane index of each maximum (the path that records a backward), in
/// f32 throughout, planes shared over the threads; the same choice of
/// maximum as the general path and torch's kernel (the first maximum, or
/// the window's last NaN).
fn max_indices_f32(x: &Tensor, win: &Window) -> Result<(Tensor, Tensor)> {
    let (n, c, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let [ho, wo] = win.out;
    let ([kh, kw], [sh, sw], [ph, pw], [dh, dw]) = (win.k, win.s, win.p, win.d);
    let out = Tensor::empty(&[n, c, ho, wo], crate::DType::F32)?;
    let idx = Tensor::empty(&[n, c, ho, wo], crate::DType::I64)?;
    let guard = crate::storage::lock_storages(&[x.storage()], &[out.storage(), idx.storage()]);
    let (xp, op, ip) = (
        x.data_ptr() as usize,
        out.data_ptr() as usize,
        idx.data_ptr() as usize,
    );
    parallel::parallel_for(n * c, 1.max(4096 / (h * w).max(1)), |r| {
        for p in r {
            // SAFETY: x is contiguous and locked, out and idx are fresh;
            // plane p of both is written by this task only.
            let (src, dst, ix) = unsafe {
                (
                    std::slice::from_raw_parts((xp as *const f32).add(p * h * w), h * w),
                    std::slice::from_raw_parts_mut((op as *mut f32).add(p * ho * wo), ho * wo),
                    std::slice::from_raw_parts_mut((ip as *mut i64).add(p * ho * wo), ho * wo),
                )
            };
            if (kh, kw, sh, sw, ph, pw, dh, dw) == (2, 2, 2, 2, 0, 0, 1, 1)
                && 2 * ho <= h
                && 2 * wo <= w
            {
                // the common 2×2 window, stride 2: four candidates per output,
                // in the general path's order (row by row; the last NaN wins)
                for oh in 0..ho {
                    let (r0, r1) = (&src[2 * oh * w..], &src[(2 * oh + 1) * w..]);
                    for ow in 0..wo {
                        let j = 2 * ow;
                        let base = (2 * oh + 1) * w + j;
                        let (mut best, mut at) = (r0[j], 2 * oh * w + j);
                        for (v, pos) in [(r0[j + 1], at + 1), (r1[j], base), (r1[j + 1], base + 1)]
                        {
                            if v > best || v.is_nan() {
                                (best, at) = (v, pos);
                            }
                        }
                        dst[oh * wo + ow] = best;
                        ix[oh * wo + ow] = at as i64;
                    }
                }
                continue;
            }
            for oh in 0..ho {
                for ow in 0..wo {
                    let (mut best, mut at) = (f32::NEG_INFINITY, -1i64);
                    for ki in 0..kh {
                        let ih = (oh * sh + ki * dh) as isize - ph as isize;
                        if ih < 0 || ih >= h as isize {
                            continue;
                        }
                        let row = ih as usize * w;
                        for kj in 0..kw {
                            let iw = (ow * sw + kj * dw) as isize - pw as isize;
                            if iw < 0 || iw >= w as isize {
                                continue;
                            }
                            let pos = row + iw as usize;
                            let v = src[pos];
                            if v > best || v.is_nan() || at < 0 {
                                best = v;
                                at = pos as i64;
                            }
                        }
                    }
                    dst[oh * wo + ow] = best;
                    ix[oh * wo + ow] = at;
                }
            }
        }
    });
    drop(guard);
    Ok((out, idx))
}

/// One averaging window of an output position: rows `h0..h1`, columns
/// `w0..w1`, and the divisor.
struct AvgWindow {
    h0: usize,
    h1: usize,
    w0: usize,
    w1: usize,
    div: f64,
}

/// Average pooling as a linear map from `[.., h, w]` planes to
/// `[.., ho, wo]` planes (one window per output position, the same for
/// every plane), so its transpose (the backward) reuses the windows.
pub(crate) struct AvgPool {
    ho: usize,
    wo: usize,
    h: usize,
    w: usize,
    wins: Vec<AvgWindow>,
}

impl AvgPool {
    /// The map from `[h, w]` to `[ho, wo]` planes whose window at each
    /// output position `(oh, ow)` is `window(oh, ow)`.
    fn new(
        [ho, wo]: [usize; 2],
        [h, w]: [usize; 2],
        window: impl Fn(usize, usize) -> AvgWindow,
    ) -> AvgPool {
        let wins = (0..ho)
            .flat_map(|oh| (0..wo).map(move |ow| (oh, ow)))
            .map(|(oh, ow)| window(oh, ow))
            .collect();
        AvgPool { ho, wo, h, w, wins }
    }

    /// Pool `[N, C, h, w]` to `[N, C, ho, wo]`.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let w = self.w;
        Ok(per_plane(x, self.ho, self.wo, |p, o, _| {
            for (k, win) in self.wins.iter().enumerate() {
                let mut s = 0.0;
                for ih in win.h0..win.h1 {
                    s += p[ih * w + win.w0..ih * w + win.w1].iter().sum::<f64>();
                }
                o[k] = s / win.div;
            }
        })?
        .0)
    }

    /// The transpose: spread `[N, C, ho, wo]` back over `[N, C, h, w]`.
    pub(crate) fn transpose(&self, g: &Tensor) -> Result<Tensor> {
        let w = self.w;
        Ok(per_plane(g, self.h, self.w, |p, o, _| {
            for (k, win) in self.wins.iter().enumerate() {
                let v = p[k] / win.div;
                for ih in win.h0..win.h1 {
                    for x in &mut o[ih * w + win.w0..ih * w + win.w1] {
                        *x += v;
                    }
                }
            }
        })?
        .0)
    }
}

fn unbatch(t: Tensor, was: bool) -> Result<Tensor> {
    if was {
        t.squeeze_dims(&[0])
    } else {
        Ok(t)
    }
}

crate::ops! {
    register = register_ops;
    /// `F.max_pool2d(..., return_indices=True)`: (values, flat indices).
    #[op = "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"]
    pub fn max_pool2d_with_indices(
        &self,
        kernel_size: &[usize],
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        ceil_mode: bool,
    ) -> Result<(Tensor, Tensor)> {
        let op = "max_pool2d";
        let (x, unb) = batched(op, self)?;
        let Window {
            k: [kh, kw],
            s: [sh, sw],
            p: [ph, pw],
            d: [dh, dw],
            out: [ho, wo],
        } = Window::new(op, &x, kernel_size, stride, padding, dilation, ceil_mode)?;
        let (h, w) = (x.shape()[2], x.shape()[3]);
        let (v, i) = crate::autograd::raw(&[&x], || {
            if x.dtype() == crate::DType::F32 {
                let win = Window {
                    k: [kh, kw],
                    s: [sh, sw],
                    p: [ph, pw],
                    d: [dh, dw],
                    out: [ho, wo],
                };
                return max_indices_f32(&x.contiguous()?, &win);
            }
            per_plane(&x, ho, wo, |p, o, ix| {
                for oh in 0..ho {
                    for ow in 0..wo {
                        let (mut best, mut at) = (f64::NEG_INFINITY, -1i64);
                        for ki in 0..kh {
                            let ih = (oh * sh + ki * dh) as isize - ph as isize;
                            if ih < 0 || ih >= h as isize {
                                continue;
                            }
                            for kj in 0..kw {
                                let iw = (ow * sw + kj * dw) as isize - pw as isize;
                                if iw < 0 || iw >= w as isize {
                                    continue;
                                }
                                let pos = ih as usize * w + iw as usize;
                                let v = p[pos];
                                if v > best || v.is_nan() || at < 0 {
                                    best = v;
                                    at = pos as i64;
                                }
                            }
                        }
                        o[oh * wo + ow] = best;
                        ix[oh * wo + ow] = at;
                    }
                }
            })
        })?;
        let v = crate::autograd::derivatives::nn::pool_indices(
            "MaxPool2DWithIndicesBackward0",
            &x,
            v,
            &i,
        )?;
        Ok((unbatch(v, unb)?, unbatch(i, unb)?))
    }

    /// `F.max_pool2d` (values only).
    #[op = "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor"]
    pub fn max_pool2d(
        &self,
        kernel_size: &[usize],
        stride: &[usize],
        padding: &[usize],
        dilation: &[usize],
        ceil_mode: bool,
    ) -> Result<Tensor> {
        if self.dtype() == crate::DType::F32
            && (self.dim() == 4 || self.dim() == 3)
            && !crate::autograd::needs_grad(&[self])
        {
            // Nothing to differentiate: f32 values only, no indices.
            let (x, unb) = batched("max_pool2d", self)?;
            let win = Window::new(
                "max_pool2d",
                &x,
                kernel_size,
                stride,
                padding,
                dilation,
                ceil_mode,
            )?;
            return unbatch(max_values_f32(&x.contiguous()?, &win)?, unb);
        }
        Ok(self
            .max_pool2d_with_indices(kernel_size, stride, padding, dilation, ceil_mode)?
            .0)
    }

    /// `F.max_pool1d(..., return_indices=True)` on `[N, C, L]` or `[C, L]`.
    pub fn max_pool1d_with_indices(
        &self,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        dilation: usize,
        ceil_mode: bool,
    ) -> Result<(Tensor, Tensor)> {
        crate::ensure!(
            self.dim() == 2 || self.dim() == 3,
            Runtime,
            "max_pool1d: Expected 2D or 3D input, got {:?}",
            self.shape()
        );
        let (v, i) = self.unsqueeze(-2)?.max_pool2d_with_indices(
            &[1, kernel],
            &[1, stride.unwrap_or(kernel)],
            &[0, padding],
            &[1, dilation],
            ceil_mode,
        )?;
        Ok((v.squeeze_dims(&[-2])?, i.squeeze_dims(&[-2])?))
    }

    /// `F.avg_pool2d`.
    #[allow(clippy::too_many_arguments)]
    pub fn avg_pool2d(
        &self,
        kernel_size: &[usize],
        stride: &[usize],
        padding: &[usize],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Tensor> {
        crate::enter_op!(
            "avg_pool2d",
            self,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override.map(|d| d as i64)
        );
        let op = "avg_pool2d";
        let (x, unb) = batched(op, self)?;
        let Window {
            k: [kh, kw],
            s: [sh, sw],
            p: [ph, pw],
            out: [ho, wo],
            ..
        } = Window::new(op, &x, kernel_size, stride, padding, &[1], ceil_mode)?;
        crate::ensure!(
            divisor_override != Some(0),
            Runtime,
            "{op}: divisor must be not zero"
        );
        let (h, w) = (x.shape()[2], x.shape()[3]);
        let pool = AvgPool::new([ho, wo], [h, w], |oh, ow| {
            let hs = (oh * sh) as isize - ph as isize;
            let ws = (ow * sw) as isize - pw as isize;
            let he = (hs + kh as isize).min((h + ph) as isize);
            let we = (ws + kw as isize).min((w + pw) as isize);
            let pool = ((he - hs) * (we - ws)) as f64;
            let (h0, w0) = (hs.max(0) as usize, ws.max(0) as usize);
            let (h1, w1) = (he.min(h as isize) as usize, we.min(w as isize) as usize);
            let div = match divisor_override {
                Some(d) => d as f64,
                None if count_include_pad => pool,
                None => ((h1 - h0) * (w1 - w0)) as f64,
            };
            AvgWindow {
                h0,
                h1,
                w0,
                w1,
                div,
            }
        });
        let v = crate::autograd::derivatives::nn::avg_pool(std::sync::Arc::new(pool), &x, false)?;
        unbatch(v, unb)
    }

    /// The batched input and PyTorch's adaptive windows for `output_size`.
    fn adaptive(&self, op: &str, output_size: &[usize]) -> Result<(Tensor, bool, AvgPool)> {
        let (x, unb) = batched(op, self)?;
        let [ho, wo] = pair(op, "output_size", output_size, None)?;
        let (h, w) = (x.shape()[2], x.shape()[3]);
        crate::ensure!(
            h > 0 && w > 0,
            Runtime,
            "{op}: input spatial size must be positive, got {:?}",
            self.shape()
        );
        let pool = AvgPool::new([ho, wo], [h, w], |oh, ow| {
            let (h0, h1) = (oh * h / ho, ((oh + 1) * h).div_ceil(ho));
            let (w0, w1) = (ow * w / wo, ((ow + 1) * w).div_ceil(wo));
            let div = ((h1 - h0) * (w1 - w0)) as f64;
            AvgWindow {
                h0,
                h1,
                w0,
                w1,
                div,
            }
        });
        Ok((x, unb, pool))
    }

    /// `F.adaptive_avg_pool2d(output_size)`.
    #[op = "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor"]
    pub fn adaptive_avg_pool2d(&self, output_size: &[usize]) -> Result<Tensor> {
        let (x, unb, pool) = self.adaptive("adaptive_avg_pool2d", output_size)?;
        let v = crate::autograd::derivatives::nn::avg_pool(std::sync::Arc::new(pool), &x, false)?;
        unbatch(v, unb)
    }

    /// `F.adaptive_max_pool2d(output_size, return_indices=True)`.
    #[op = "adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)"]
    pub fn adaptive_max_pool2d(&self, output_size: &[usize]) -> Result<(Tensor, Tensor)> {
        let (x, unb, pool) = self.adaptive("adaptive_max_pool2d", output_size)?;
        let w = pool.w;
        let (v, i) = crate::autograd::raw(&[&x], || {
            per_plane(&x, pool.ho, pool.wo, |p, o, ix| {
                for (k, win) in pool.wins.iter().enumerate() {
                    let (mut best, mut at) = (f64::NEG_INFINITY, -1i64);
                    for ih in win.h0..win.h1 {
                        for iw in win.w0..win.w1 {
                            let pos = ih * w + iw;
                            let v = p[pos];
                            if v > best || v.is_nan() || at < 0 {
                                best = v;
                                at = pos as i64;
                            }
                        }
                    }
                    o[k] = best;
                    ix[k] = at;
                }
            })
        })?;
        let v = crate::autograd::derivatives::nn::pool_indices(
            "AdaptiveMaxPool2DBackward0",
            &x,
            v,
            &i,
        )?;
        Ok((unbatch(v, unb)?, unbatch(i, unb)?))
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    // ops whose arguments are not their methods' (Note [Typed kernels])
    r.def_typed(
        "max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
        |x: Tensor, k: Vec<usize>, s: Vec<usize>, p: Vec<usize>, d: Vec<usize>, ceil: bool| {
            let op = "max_pool1d_with_indices";
            let stride = match s.as_slice() {
                [] => None,
                s => Some(single(op, "stride", s)?),
            };
            x.max_pool1d_with_indices(
                single(op, "kernel_size", &k)?,
                stride,
                single(op, "padding", &p)?,
                single(op, "dilation", &d)?,
                ceil,
            )
        },
    );
    r.def_typed(
        "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
        |x: Tensor, k: Vec<usize>, s: Vec<usize>, p: Vec<usize>, ceil: bool, include_pad: bool, divisor: Option<i64>| {
            // torch divides by a negative divisor too (only 0 is refused)
            let out = x.avg_pool2d(&k, &s, &p, ceil, include_pad, divisor.map(|d| d.unsigned_abs() as usize))?;
            match divisor {
                Some(d) if d < 0 => out.neg(),
                _ => Ok(out),
            }
        },
    );
}
