//! f32 3×3 stride-1 convolutions by Winograd F(2×2, 3×3)
//! (`ferrotorch_kernels::winograd`, Note [Winograd convolution]) or, for
//! large maps, F(4×4, 3×3) (Note [Winograd F(4×4, 3×3)]).
//!
//! The filters are transformed (`[16, O, C]` or `[36, O, C]`, a few adds
//! per filter value, split over the threads by output channel; kept
//! between calls where Note [Prepacked convolution filters] allows), then
//! the batch's tiles are cut into blocks and the blocks split over the
//! threads, each with its own scratch for one block's transformed input
//! and product.

use super::conv::Geometry;
use super::conv_prepack;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::conv as direct;
use ferrotorch_kernels::parallel;
use ferrotorch_kernels::winograd::{transform_weights, Tile, Winograd};
use ferrotorch_kernels::winograd4;
use ferrotorch_kernels::winograd_few::{self, transform_weights_t, FewTiles, Step};

/// Whether a convolution takes this path (the caller has checked f32):
/// one group, a 3×3 filter, stride 1, no dilation, on a CPU with the
/// direct kernel; at least 16 input and output channels, output maps of
/// at least 14×14 and 48 tiles over the batch (64 with AVX-512). Measured on ResNet-18's
/// 3×3 layers against the path each took before (Zen 3, both in one
/// process): at batch 8 1.47× at 56×56, 1.60× at 28×28, 1.67× at 14×14
/// (against the batched GEMM), but 1.07× at 7×7, where the filter
/// transform of 512 channels (16 MB) costs as much as it saves; at batch 1
/// 1.61×, 1.36×, 1.14×, and 0.37× at 7×7 (16 tiles: one block). With
/// AVX-512 (Zen 4) the batched GEMM is faster at batch 1, 14×14 (49
/// tiles: 2.83 against 2.38 ms at 256 channels, 11.8 against 9.4 at 512,
/// 0.76 against 0.62 at 128), and Winograd wins again from 64 tiles (16×16:
/// 3.05 against 3.72 ms; batch 2 at 14×14: 3.97 against 4.69), so
/// there it needs 64 tiles. Fewer tiles take Note [Winograd for few
/// tiles]'s path, at any map size, where the filters were transformed
/// beforehand (Note [Prepacked convolution filters]).
///
/// `FERROTORCH_CONV_WINOGRAD=1` sends every convolution it can compute
/// here and `=0` none, `=4` every one it can, with 4×4 tiles, and `=2`
/// keeps the rule but with 2×2 tiles only (read once; for testing and
/// measuring the paths).
pub(super) fn wanted(geo: &Geometry, n: usize, weight: &Tensor) -> bool {
    let forced = match forced() {
        Forced::Rule | Forced::F2 => None,
        Forced::Off => Some(false),
        Forced::On | Forced::F4 => Some(true),
    };
    let (h, w) = (geo.hd, geo.wd);
    let can = direct::available()
        && geo.groups == 1
        && geo.cg > 0
        && h.kernel == 3
        && w.kernel == 3
        && h.stride == 1
        && w.stride == 1
        && h.dil == 1
        && w.dil == 1;
    match forced {
        Some(on) => on && can,
        None => {
            let tiles = n * geo.ho.div_ceil(2) * geo.wo.div_ceil(2);
            let min_tiles = match ferrotorch_kernels::cpu::level() {
                ferrotorch_kernels::cpu::Level::Avx512 => 64,
                _ => 48,
            };
            let big = geo.ho * geo.wo >= 14 * 14 && tiles >= min_tiles;
            // Note [Winograd for few tiles], worth it with the filters
            // transformed beforehand (Note [Prepacked convolution filters])
            let few = few_tiles(tiles, geo.cg) && conv_prepack::keeps(weight);
            can && geo.cg >= 16 && geo.og >= 16 && (big || few)
        }
    }
}

/// Whether a layer of `tiles` tiles and `c` input channels takes Note
/// [Winograd for few tiles]'s path (with AVX-512 only: AVX2's 16-tile side
/// is filled by 16 tiles already). Measured with kept filter transforms
/// (Zen 4), against the direct kernel at batch 1 on one thread: 1.51× at
/// 256 channels 14×14 (49 tiles), 1.55× at 512 channels 7×7 (16), 1.34× at
/// 128 channels 7×7, 1.04× at 64 channels 8×8 (16), but 0.82× at 512
/// channels 4×4 (4 tiles: half the 8-tile side, and the transformed filters
/// read for little work); against the plain Winograd path on two threads:
/// 1.39× at 256 channels 14×14 batch 2 (98 tiles), 1.14× at 512 channels
/// 7×7 batch 4 and 8 (64 and 128 tiles), 1.00× at 128 channels 28×28 batch
/// 1 (196), but 0.82× at 64 channels 8×8 batch 8 (128) and 0.83× at 256
/// channels 14×14 batch 8 (392). So: 16 to 63 tiles, and up to 128 where
/// the filters are large (256 input channels or more).
/// (`FERROTORCH_CONV_WINOGRAD=4` sends these to 4×4 tiles too.)
fn few_tiles(tiles: usize, c: usize) -> bool {
    forced() != Forced::F4
        && ferrotorch_kernels::cpu::level() == ferrotorch_kernels::cpu::Level::Avx512
        && ((16..64).contains(&tiles) || ((64..=128).contains(&tiles) && c >= 256))
}

/// The transformed filters of `wt` that `pick` selects (Note [Prepacked
/// convolution filters]): kept ones, or a fresh `len`-value tensor filled by
/// `transform` over `0..units` split across the threads. The result is
/// never written again (a kept form is replaced, not changed, when its
/// filter changes), so its values may be read without a lock.
fn filters(
    wt: &Tensor,
    pick: fn(&mut conv_prepack::Forms) -> &mut Option<Tensor>,
    len: usize,
    units: usize,
    grain: usize,
    transform: impl Fn(std::ops::Range<usize>, *mut f32) + Sync + Send,
) -> Result<Tensor> {
    conv_prepack::form(wt, pick, || {
        let t = Tensor::empty(&[len], DType::F32)?;
        let p = t.data_ptr() as usize;
        parallel::parallel_for(units, grain, |r| transform(r, p as *mut f32));
        Ok(t)
    })
}

/// Whether a layer of `tiles` 4×4 tiles (over the batch) and `c` input
/// channels takes Note [Winograd F(4×4, 3×3)]'s tile rather than 2×2 ones
/// (with AVX-512 only, where it was measured). Measured one layer at a
/// time (Zen 4, filters transformed beforehand, `c` output channels too,
/// the `winograd_layers` example of ferrotorch-kernels), F(4×4) against
/// F(2×2) on two threads: at batch 8 1.55× at 64 channels 56×56 (1568
/// tiles), 1.46× at 128 channels 28×28 (392), but 1.00× at 256 channels
/// 14×14 (128 tiles: a quarter of them padding, and 9.4 MB of transformed
/// filters read again for every block of 48 tiles) and 0.64× at 512
/// channels 7×7; at batch 1 1.26× at 64 channels 56×56 (196 tiles) and
/// 1.25× at 128 channels 28×28 (49 tiles). So: filters of at most 128
/// input channels, and a block of tiles at least.
fn f4_tiles(tiles: usize, c: usize, nr: usize) -> bool {
    match forced() {
        Forced::F4 => true,
        Forced::On | Forced::F2 => false,
        _ => {
            ferrotorch_kernels::cpu::level() == ferrotorch_kernels::cpu::Level::Avx512
                && c <= 128
                && tiles >= nr
        }
    }
}

/// What `FERROTORCH_CONV_WINOGRAD` asks for (see [`wanted`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Forced {
    Rule,
    Off,
    On,
    F4,
    /// The rule, with 2×2 tiles only.
    F2,
}

fn forced() -> Forced {
    static FORCED: std::sync::OnceLock<Forced> = std::sync::OnceLock::new();
    *FORCED.get_or_init(
        || match std::env::var("FERROTORCH_CONV_WINOGRAD").as_deref() {
            Ok("1") => Forced::On,
            Ok("0") => Forced::Off,
            Ok("4") => Forced::F4,
            Ok("2") => Forced::F2,
            _ => Forced::Rule,
        },
    )
}

/// Tiles per block: a multiple of the kernel's `nr` whose transformed
/// input and product (`positions·(C + O)·4` bytes per tile) fill at most
/// half of the core's L2, and small enough to give every thread a few
/// blocks.
fn block_tiles(c: usize, o: usize, tiles: usize, nr: usize, tile: Tile) -> usize {
    let by_cache = ferrotorch_kernels::cpu::l2_bytes() / 2 / (tile.positions() * (c + o) * 4);
    let by_threads = tiles.div_ceil(4 * parallel::get_num_threads());
    (by_cache.min(by_threads) / nr).max(1) * nr
}

/// The convolution of a contiguous f32 batch `x` into `out`
/// (Note [Winograd convolution]); every output starts from the bias, if
/// any, or goes through the fused eval epilogue.
pub(super) fn conv_images(
    x: &Tensor,
    wt: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    geo: Geometry,
    fused: Option<&super::conv_fused::Fused>,
) -> Result<()> {
    let Geometry {
        cg: c,
        og: o,
        hd,
        wd,
        ho,
        wo,
        ..
    } = geo;
    let n = x.shape()[0];
    if n * o * ho * wo == 0 {
        return Ok(());
    }
    let residual = fused.and_then(|f| f.residual.as_ref());
    let (_l, xs, ws, bs) = super::conv::locked_operands::<f32>(x, wt, bias, residual, out);
    let tiles = n * ho.div_ceil(2) * wo.div_ceil(2);
    let res_ptr = residual.map(|r| r.data_ptr() as usize);
    // Built per task: an epilogue's residual pointer is not `Sync`.
    macro_rules! layer {
        ($u:expr, $block:expr, $tile:expr) => {
            Winograd {
                x: xs,
                n,
                c,
                h: hd.input,
                w: wd.input,
                pad: (hd.pad, wd.pad),
                ho,
                wo,
                u: $u,
                oc: o,
                bias: bs,
                epilogue: fused.map(|f| direct::Epilogue {
                    scale: f.scale,
                    shift: f.shift,
                    residual: res_ptr.map(|p| p as *const f32),
                    relu: f.relu,
                }),
                block: $block,
                tile: $tile,
            }
        };
    }
    let out_ptr = out.data_ptr() as usize;
    if few_tiles(tiles, c) {
        // Note [Winograd for few tiles]
        let ocp = winograd_few::oc_padded(o);
        let ut = filters(
            wt,
            |f| &mut f.ut,
            16 * c * ocp,
            c,
            16,
            |r, p| {
                // SAFETY: `p` holds [16, c, ocp]; each task writes its own input
                // channels.
                unsafe { transform_weights_t(ws, o, c, r, p) }
            },
        )?;
        // SAFETY: see `filters`.
        let uts = unsafe { std::slice::from_raw_parts(ut.data_ptr() as *const f32, 16 * c * ocp) };
        let few = || FewTiles {
            layer: layer!(&[], FewTiles::block(tiles), Tile::F2),
            ut: uts,
        };
        let scratch = Tensor::empty(&[few().scratch_len()], DType::F32)?;
        let sp = scratch.data_ptr() as usize;
        for step in Step::ALL {
            let grain = match step {
                Step::Input | Step::Output => 16,
                _ => 1,
            };
            parallel::parallel_for(few().units(step), grain, |r| {
                // SAFETY: `scratch` is this call's, sized by `scratch_len`;
                // tasks run disjoint units of one step at a time; `out` is
                // the fresh [n, o, ho, wo] output, locked.
                unsafe { few().run(step, r, sp as *mut f32, out_ptr as *mut f32) }
            });
        }
        return Ok(());
    }
    let sh = direct::shape().expect("Winograd convolution needs the direct kernel");
    let tiles4 = n * ho.div_ceil(4) * wo.div_ceil(4);
    let (tile, tiles) = if f4_tiles(tiles4, c, sh.nr) {
        (Tile::F4, tiles4)
    } else {
        (Tile::F2, tiles)
    };
    let len = tile.positions() * o * c;
    let u = match tile {
        // SAFETY (both): `p` holds [positions, o, c]; each task writes its
        // own channels.
        Tile::F2 => filters(
            wt,
            |f| &mut f.u,
            len,
            o,
            8,
            |r, p| unsafe { transform_weights(ws, o, c, r, p) },
        )?,
        Tile::F4 => filters(
            wt,
            |f| &mut f.u4,
            len,
            o,
            4,
            |r, p| unsafe { winograd4::transform_weights(ws, o, c, r, p) },
        )?,
    };
    // SAFETY: see `filters`.
    let us = unsafe { std::slice::from_raw_parts(u.data_ptr() as *const f32, len) };
    let block = block_tiles(c, o, tiles, sh.nr, tile);
    let layer = || layer!(us, block, tile);
    // One scratch per task, from the caching allocator (a fresh 400 KB
    // vector per call would be mapped and zeroed page by page: 6 % of a
    // 64-channel layer); its values need no initialising, `run` writes
    // what it reads.
    let blocks = tiles.div_ceil(block);
    let tasks = parallel::get_num_threads().clamp(1, blocks);
    let len = layer().scratch_len();
    let scratch = Tensor::empty(&[tasks * len], DType::F32)?;
    let sp = scratch.data_ptr() as usize;
    parallel::parallel_for(tasks, 1, |r| {
        let layer = layer();
        for t in r {
            // SAFETY: task `t` alone uses slot `t` of `scratch`.
            let buf = unsafe { std::slice::from_raw_parts_mut((sp as *mut f32).add(t * len), len) };
            let mine = blocks * t / tasks..blocks * (t + 1) / tasks;
            // SAFETY: `out` is the fresh [n, o, ho, wo] output, locked;
            // tasks compute disjoint blocks of tiles.
            unsafe { layer.run(mine, buf, out_ptr as *mut f32) }
        }
    });
    Ok(())
}
