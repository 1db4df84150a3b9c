//! Stride-1 f32 convolutions by the direct kernel
//! (`ferrotorch_kernels::conv`, Note [Direct convolution]): each task pads
//! one image (one group) into a scratch buffer and computes a range of its
//! output channels (all of them when there are as many images as threads).

use super::conv::Geometry;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::conv::{self as direct, Image, MR, NR};
use ferrotorch_kernels::parallel;

/// Whether the direct kernel applies, and wastes little: stride 1, and the
/// scratch columns, tile tails and channel blocks add at most a quarter to
/// the work (deep layers on 7×7 maps keep the GEMM path).
pub(super) fn applies(geo: &Geometry) -> bool {
    let Geometry {
        og, hd, wd, ho, wo, ..
    } = *geo;
    if !direct::available() || hd.stride != 1 || wd.stride != 1 || ho * wo == 0 || og == 0 {
        return false;
    }
    let wp = wd.input + 2 * wd.pad;
    let positions = (ho * wp).div_ceil(NR) * NR;
    let channels = og.div_ceil(MR) * MR;
    // computed / useful <= 1.25
    4 * positions * channels <= 5 * ho * wo * og
}

/// The convolution of a contiguous f32 batch into `out`, for a geometry
/// [`applies`] accepted. With a bias every output starts from it.
pub(super) fn conv_images(
    x: &Tensor,
    wt: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    geo: Geometry,
) -> Result<()> {
    let Geometry {
        groups,
        cg,
        og,
        hd,
        wd,
        ho,
        wo,
    } = geo;
    let n = x.shape()[0];
    let (hh, ww) = (hd.input, wd.input);
    let (hp, wp) = (hh + 2 * hd.pad, ww + 2 * wd.pad);
    let plane = hp * wp;
    let xlen = cg * plane + direct::tail((wd.kernel - 1) * wd.dil);
    let k = cg * hd.kernel * wd.kernel;
    let mut offsets = Vec::with_capacity(k);
    for ci in 0..cg {
        for i in 0..hd.kernel {
            for j in 0..wd.kernel {
                offsets.push(ci * plane + i * hd.dil * wp + j * wd.dil);
            }
        }
    }
    let (_l, xs, ws, bs) = super::conv::locked_operands::<f32>(x, wt, bias, out);
    let packs: Vec<Vec<f32>> = (0..groups)
        .map(|g| direct::pack_weights(&ws[g * og * k..][..og * k], og, k))
        .collect();
    let tiles = (ho * wp).div_ceil(NR);
    let blocks = og.div_ceil(MR);
    // Enough tasks for every thread even at batch 1: then each image is
    // split by channel blocks (its tiles can be too few to share evenly).
    let chunks = parallel::get_num_threads()
        .div_ceil(n * groups)
        .clamp(1, blocks);
    let tasks = n * groups * chunks;
    let (img_len, out_len) = (cg * groups * hh * ww, og * groups * ho * wo);
    let out_ptr = out.data_ptr() as usize;
    let run = |range: std::ops::Range<usize>| -> Result<()> {
        let scratch = Tensor::empty(&[xlen], DType::F32)?;
        // SAFETY: `scratch` is this task's own fresh buffer.
        let xpad = unsafe { std::slice::from_raw_parts_mut(scratch.data_ptr() as *mut f32, xlen) };
        let mut padded = None;
        for task in range {
            let (b, g, c) = (
                task / (groups * chunks),
                (task / chunks) % groups,
                task % chunks,
            );
            if padded != Some((b, g)) {
                let src = &xs[b * img_len + g * cg * hh * ww..][..cg * hh * ww];
                pad_image(src, cg, hh, ww, hd.pad, wd.pad, xpad);
                padded = Some((b, g));
            }
            let im = Image {
                xpad,
                offsets: &offsets,
                wpack: &packs[g],
                og,
                wp,
                ho,
                wo,
            };
            let (c0, c1) = (c * blocks / chunks, (c + 1) * blocks / chunks);
            // SAFETY: this task alone writes these channels of image `b`,
            // group `g`; the block is inside `out`.
            unsafe {
                im.run(
                    0..tiles,
                    c0..c1,
                    bs.map(|bv| &bv[g * og..][..og]),
                    (out_ptr as *mut f32).add(b * out_len + g * og * ho * wo),
                )
            };
        }
        Ok(())
    };
    if tasks == 0 {
        return Ok(());
    }
    parallel::parallel_map(tasks, 1, run).into_iter().collect()
}

/// Copy `[c, h, w]` into `dst` as planes of `(h + 2·ph) × (w + 2·pw)` with
/// zero borders, and zero the rest of `dst` (the tail tiles read).
fn pad_image(src: &[f32], c: usize, h: usize, w: usize, ph: usize, pw: usize, dst: &mut [f32]) {
    let wp = w + 2 * pw;
    let plane = (h + 2 * ph) * wp;
    for (ci, chan) in src.chunks_exact(h * w).take(c).enumerate() {
        let p = &mut dst[ci * plane..][..plane];
        p[..ph * wp].fill(0.0);
        p[(ph + h) * wp..].fill(0.0);
        for (r, row) in chan.chunks_exact(w).enumerate() {
            let d = &mut p[(ph + r) * wp..][..wp];
            d[..pw].fill(0.0);
            d[pw..pw + w].copy_from_slice(row);
            d[pw + w..].fill(0.0);
        }
    }
    dst[c * plane..].fill(0.0);
}
