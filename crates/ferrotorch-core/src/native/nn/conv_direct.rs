//! f32 convolutions by the direct kernel (`ferrotorch_kernels::conv`,
//! Note [Direct convolution]), any stride and dilation.
//!
//! Each task lays out a stack of images (one group) in a scratch buffer
//! the kernel reads with one offset per tap, and computes a range of its
//! output channels. The buffer holds, per input channel, one plane per
//! stride phase that some tap reads; a plane is `rows × wq`:
//!
//! - With stride 1 along a dim, rows (and images) share their zero
//!   padding: a row is `pad` zeros then the data (`wq = w + pad`, or the
//!   output width if that is larger), and a read past its end lands in the
//!   next row's leading zeros. The waste (scratch positions computed and
//!   dropped) is then `pad/w` instead of `2·pad/w`.
//! - With stride `s > 1`, phase `b` holds padded columns `b, b + s, ...`
//!   (`wq = ceil((w + 2·pad)/s)`); valid outputs never read past a row.
//!
//! Small images are stacked, image `i` starting at row `i·hq`, so that
//! tiles span images instead of leaving most of each tile as scratch. (The
//! 7×7 and 14×14 maps of a ResNet's last stages mostly go to one GEMM over
//! the batch instead, Note [Batched im2col], and its 3×3 stride-1 layers
//! to Winograd, Note [Winograd convolution]; stacking serves grouped
//! convolutions, few filters and a 7×7 map at batch 1.)

use super::conv::{Dim, Geometry};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::conv::{self as direct, Images, Shape};
use ferrotorch_kernels::parallel;

/// Tiles a stack of small images should reach.
const STACK_TILES: usize = 16;
/// Bytes of input a group of tiles may read: a quarter of the core's L2
/// (512 KiB on a 2 MiB Xeon L2, 128 KiB on Zen 3's 512 KiB, where the
/// stride-2 layers of ResNet-18 ran 10-30 % faster than with 512 KiB).
fn tile_group_bytes() -> usize {
    ferrotorch_kernels::cpu::l2_bytes() / 4
}

/// The buffer layout along one spatial dim.
#[derive(Clone, Copy)]
struct Axis {
    d: Dim,
    /// Buffer extent per row (columns) or per image (rows).
    q: usize,
}

impl Axis {
    fn new(d: Dim, out: usize) -> Axis {
        let q = if d.stride == 1 {
            (d.input + d.pad).max(out)
        } else {
            (d.input + 2 * d.pad).div_ceil(d.stride)
        };
        Axis { d, q }
    }

    /// (phase, shift in buffer units) of kernel tap `k`.
    fn tap(&self, k: usize) -> (usize, usize) {
        let c = k * self.d.dil;
        (c % self.d.stride, c / self.d.stride)
    }

    /// Fill `dst` (`q` entries of phase `phase`) from the input line `src`
    /// (`None`: a padding line).
    fn fill(&self, dst: &mut [f32], src: Option<&[f32]>, phase: usize) {
        let Some(src) = src else {
            dst.fill(0.0);
            return;
        };
        let (s, pad, n) = (self.d.stride, self.d.pad, self.d.input);
        if s == 1 {
            let lead = pad.min(dst.len());
            dst[..lead].fill(0.0);
            let end = (pad + n).min(dst.len());
            dst[lead..end].copy_from_slice(&src[..end - lead]);
            dst[end..].fill(0.0);
            return;
        }
        for (j, v) in dst.iter_mut().enumerate() {
            let c = j * s + phase;
            *v = if c >= pad && c - pad < n {
                src[c - pad]
            } else {
                0.0
            };
        }
    }

    /// The input line under buffer line `j` of phase `phase`, if any.
    fn source(&self, j: usize, phase: usize) -> Option<usize> {
        let c = j * self.d.stride + phase;
        (c >= self.d.pad && c - self.d.pad < self.d.input).then(|| c - self.d.pad)
    }
}

/// The buffer layout of a convolution, the same for every stack.
pub(super) struct Plan {
    /// The kernel's tile.
    sh: Shape,
    h: Axis,
    w: Axis,
    /// Phase pairs some tap reads, in slot order, and each pair's slot.
    phases: Vec<(usize, usize)>,
    /// Images per stack and rows of each plane.
    imgs: usize,
    rows: usize,
    offsets: Vec<usize>,
    len: usize,
    tile_group: usize,
}

impl Plan {
    fn new(geo: &Geometry, n: usize, sh: Shape) -> Plan {
        let (h, w) = (Axis::new(geo.hd, geo.ho), Axis::new(geo.wd, geo.wo));
        let mut phases = Vec::new();
        for i in 0..geo.hd.kernel {
            for j in 0..geo.wd.kernel {
                let ph = (h.tap(i).0, w.tap(j).0);
                if !phases.contains(&ph) {
                    phases.push(ph);
                }
            }
        }
        let per_image = h.q * w.q;
        // as many images as reach STACK_TILES, spread evenly
        let most = (STACK_TILES * sh.nr)
            .div_ceil(per_image.max(1))
            .clamp(1, n.max(1));
        let imgs = n.max(1).div_ceil(n.max(1).div_ceil(most));
        // reads past the last image: the taps' reach, a wrapped row, and a
        // spare row of zeros
        let rows = imgs * h.q + h.tap(geo.hd.kernel - 1).1 + 2;
        let plane = rows * w.q;
        let mut offsets = Vec::with_capacity(geo.cg * geo.hd.kernel * geo.wd.kernel);
        for ci in 0..geo.cg {
            for i in 0..geo.hd.kernel {
                for j in 0..geo.wd.kernel {
                    let ((a, qh), (b, qw)) = (h.tap(i), w.tap(j));
                    let slot = phases.iter().position(|&p| p == (a, b)).unwrap_or(0);
                    offsets.push((ci * phases.len() + slot) * plane + qh * w.q + qw);
                }
            }
        }
        let tiles = (imgs * per_image).div_ceil(sh.nr);
        let len = (geo.cg * phases.len() * plane)
            .max(tiles * sh.nr + offsets.iter().copied().max().unwrap_or(0));
        // a tile reads nr positions past each tap's offset in every plane
        let planes = geo.cg * phases.len();
        let reach = h.tap(geo.hd.kernel - 1).1 * w.q + w.tap(geo.wd.kernel - 1).1;
        let tile_group = (tile_group_bytes() / 4 / planes.max(1)).saturating_sub(reach) / sh.nr;
        Plan {
            sh,
            h,
            w,
            phases,
            imgs,
            rows,
            offsets,
            len,
            tile_group: tile_group.max(1),
        }
    }

    /// Positions computed for every useful one, channel blocks included.
    fn waste(&self, geo: &Geometry, n: usize) -> f64 {
        let stacks = n.div_ceil(self.imgs);
        let Shape { mr, nr } = self.sh;
        let tiles = (self.imgs * self.h.q * self.w.q).div_ceil(nr);
        let computed = (stacks * tiles * nr) as f64 * (geo.og.div_ceil(mr) * mr) as f64;
        computed / (n * geo.ho * geo.wo * geo.og) as f64
    }

    /// Lay out images `imgs` of `src` (`[n, C, H, W]` contiguous, channels
    /// `c0..c0 + cg` of each) into `buf`.
    fn fill(
        &self,
        src: &[f32],
        imgs: std::ops::Range<usize>,
        c0: usize,
        c: usize,
        buf: &mut [f32],
    ) {
        let (hh, ww) = (self.h.d.input, self.w.d.input);
        let wq = self.w.q;
        let plane = self.rows * wq;
        let cg = self.offsets.len() / (self.h.d.kernel * self.w.d.kernel);
        for ci in 0..cg {
            for (slot, &(a, b)) in self.phases.iter().enumerate() {
                let p = &mut buf[(ci * self.phases.len() + slot) * plane..][..plane];
                for (i, img) in imgs.clone().enumerate() {
                    let chan = &src[(img * c + c0 + ci) * hh * ww..][..hh * ww];
                    for j in 0..self.h.q {
                        let line = self.h.source(j, a).map(|r| &chan[r * ww..][..ww]);
                        self.w
                            .fill(&mut p[(i * self.h.q + j) * wq..][..wq], line, b);
                    }
                }
                p[imgs.len() * self.h.q * wq..].fill(0.0);
            }
        }
        buf[cg * self.phases.len() * plane..].fill(0.0);
    }
}

/// The direct kernel's plan for a batch of `n`, where the kernel applies
/// and wastes little: the scratch positions, tile tails and channel blocks
/// add at most 40 % to the work.
pub(super) fn plan(geo: &Geometry, n: usize) -> Option<Plan> {
    let sh = direct::shape()?;
    if geo.ho * geo.wo == 0 || geo.og == 0 || n == 0 {
        return None;
    }
    let plan = Plan::new(geo, n, sh);
    (plan.waste(geo, n) <= 1.4).then_some(plan)
}

/// The convolution of a contiguous f32 batch into `out`, by a [`plan`]
/// made for this geometry and batch. With a bias every output starts from it.
pub(super) fn conv_images(
    x: &Tensor,
    wt: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    geo: Geometry,
    plan: &Plan,
    fused: Option<&super::conv_fused::Fused>,
) -> Result<()> {
    let Geometry {
        groups,
        cg,
        og,
        ho,
        wo,
        ..
    } = geo;
    let n = x.shape()[0];
    let k = plan.offsets.len();
    let residual = fused.and_then(|f| f.residual.as_ref());
    let (_l, xs, ws, bs) = super::conv::locked_operands::<f32>(x, wt, bias, residual, out);
    // The residual's base, offset like `out` below.
    let res_ptr = residual.map(|r| r.data_ptr() as usize);
    let stacks = n.div_ceil(plan.imgs);
    let tiles = (plan.imgs * plan.h.q * plan.w.q).div_ceil(plan.sh.nr);
    let blocks = og.div_ceil(plan.sh.mr);
    // Enough tasks for every thread even for one stack: split its channel
    // blocks, then its tiles.
    let chunks = parallel::get_num_threads().div_ceil(stacks * groups);
    let cb = chunks.clamp(1, blocks);
    let ct = chunks.div_ceil(cb).clamp(1, tiles);
    let per_stack = groups * cb * ct;
    let tasks = stacks * per_stack;
    let out_image = og * groups * ho * wo;
    let out_ptr = out.data_ptr() as usize;
    let c = cg * groups;
    let run = |range: std::ops::Range<usize>| -> Result<()> {
        let scratch = Tensor::empty(&[plan.len], DType::F32)?;
        // SAFETY: `scratch` is this task's own fresh buffer.
        let buf =
            unsafe { std::slice::from_raw_parts_mut(scratch.data_ptr() as *mut f32, plan.len) };
        let mut filled = None;
        for task in range {
            let (st, g) = (task / per_stack, (task / (cb * ct)) % groups);
            let (bc, tc) = ((task / ct) % cb, task % ct);
            let imgs = st * plan.imgs..((st + 1) * plan.imgs).min(n);
            if filled != Some((st, g)) {
                plan.fill(xs, imgs.clone(), g * cg, c, buf);
                filled = Some((st, g));
            }
            let im = Images {
                x: buf,
                offsets: &plan.offsets,
                weights: &ws[g * og * k..][..og * k],
                og,
                imgs: imgs.len(),
                hq: plan.h.q,
                wq: plan.w.q,
                ho,
                wo,
                out_image,
                tile_group: plan.tile_group,
                epilogue: fused.map(|f| direct::Epilogue {
                    scale: &f.scale[g * og..][..og],
                    shift: &f.shift[g * og..][..og],
                    residual: res_ptr.map(|p| {
                        (p as *const f32).wrapping_add(imgs.start * out_image + g * og * ho * wo)
                    }),
                    relu: f.relu,
                }),
            };
            let t = im.tiles();
            // SAFETY: this task alone writes these tiles of these channels
            // of these images; the block is inside `out`.
            unsafe {
                im.run(
                    tc * t / ct..(tc + 1) * t / ct,
                    bc * blocks / cb..(bc + 1) * blocks / cb,
                    bs.map(|bv| &bv[g * og..][..og]),
                    (out_ptr as *mut f32).add(imgs.start * out_image + g * og * ho * wo),
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
