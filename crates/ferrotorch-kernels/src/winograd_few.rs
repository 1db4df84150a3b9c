//! Winograd F(2×2, 3×3) for layers with few tiles: the late layers of a
//! network at batch 1.
//!
//! # Note [Winograd for few tiles]
//! [`crate::winograd`] puts tiles on the kernel's long side (`nr`, 48
//! with AVX-512): a 7×7 map has 16 tiles and a 14×14 map 49, which fill a
//! third or half of the 48 columns, so there the layers ran as direct
//! convolutions. Here the product of each transform position is computed
//! transposed, `Mᵀ[pos] = Vᵀ[pos]·Uᵀ[pos]` (`[tiles, C] × [C, O]`): output
//! channels go on the long side (512 = 10⅔ × 48) and tiles on the short
//! one (`mr`, 8 with AVX-512: 16 tiles fill it exactly). The same tile
//! kernel computes it: its broadcast rows are `Vᵀ`'s tile rows and its
//! vector operand is `Uᵀ` (`[16, C, O']`, `O'` rounded up to `nr` with
//! zero filters), tap `ci` at offset `ci·O'`.
//!
//! The input and output transforms are [`Winograd`]'s, over all tiles as
//! one block; `V` is transposed to `Vᵀ` after the first and `Mᵀ` back to
//! `M` before the second (each a few hundred KB at these sizes). The steps
//! split over the threads by input channel, transform position and output
//! channel, not by tiles, since there are few.
//!
//! `Uᵀ` costs a transform of every filter (512×512 filters: about as long
//! as the convolution itself), so this pays where the filters are
//! transformed once and kept: the prepacked filters of a frozen graph
//! (Note [Prepacked convolution filters] in ferrotorch-core).

use crate::conv::Shape;
use crate::winograd::{filters16, Run, Tile, Winograd, LANES, POS};
use std::ops::Range;

/// Output channels rounded up to the kernel's `nr`: the row length of `Uᵀ`
/// and `Mᵀ`.
pub fn oc_padded(oc: usize) -> usize {
    let nr = crate::conv::shape().map_or(16, |s| s.nr);
    oc.div_ceil(nr) * nr
}

/// Transform the 3×3 filters (`w`: `[oc, c, 3, 3]` contiguous) of input
/// channels `cs` into `ut` (`[16, c, ocp]`, `ocp = oc_padded(oc)`):
/// `Uᵀ[pos][ci][o] = (G·g·Gᵀ)[pos]` of filter `(o, ci)`, and zeros for
/// `o >= oc`.
///
/// # Safety
/// `ut` must be valid for writes of `16·c·ocp` values; no other thread
/// may write the rows of channels `cs` meanwhile.
pub unsafe fn transform_weights_t(w: &[f32], oc: usize, c: usize, cs: Range<usize>, ut: *mut f32) {
    assert!(w.len() >= oc * c * 9 && cs.end <= c);
    let ocp = oc_padded(oc);
    let mut g = [0.0f32; 16 * 9];
    let mut out = [[0.0f32; 16]; POS];
    for ci in cs {
        for o0 in (0..ocp).step_by(16) {
            let len = 16.min(oc.saturating_sub(o0));
            g.fill(0.0);
            for l in 0..len {
                g[l * 9..][..9].copy_from_slice(&w[((o0 + l) * c + ci) * 9..][..9]);
            }
            filters16(&g, &mut out);
            let n = 16.min(ocp - o0);
            for (pos, vals) in out.iter().enumerate() {
                // SAFETY: (pos, ci, o0..o0 + n) is inside `[16, c, ocp]`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        vals.as_ptr(),
                        ut.add((pos * c + ci) * ocp + o0),
                        n,
                    )
                };
            }
        }
    }
}

/// A [`Winograd`] layer computed the transposed way (Note [Winograd for
/// few tiles]). Its `block` must be [`FewTiles::block`] and its `u` is not
/// read.
pub struct FewTiles<'a> {
    pub layer: Winograd<'a>,
    /// `Uᵀ`, `[16, c, ocp]` ([`transform_weights_t`]).
    pub ut: &'a [f32],
}

/// Where each step's values live in the scratch of [`FewTiles`].
#[derive(Clone, Copy)]
struct Parts {
    /// `V`: `[16, c, bl]`, then `M`: `[16, ocr, bl]` in the same place
    /// (`V` is dead once transposed), positions `v_step`/`m_step` apart
    /// (Note [Winograd position strides]), with `LANES` values of slack.
    vm: usize,
    /// `Vᵀ`: `[16, tr, c]`.
    vt: usize,
    /// `Mᵀ`: `[16, tr, ocp]`.
    mt: usize,
    len: usize,
}

impl FewTiles<'_> {
    fn shape(&self) -> Shape {
        crate::conv::shape().expect("Winograd convolution needs AVX2 with FMA")
    }

    /// The block `layer` must have: every tile, rounded up to `LANES`.
    pub fn block(tiles: usize) -> usize {
        tiles.div_ceil(LANES) * LANES
    }

    /// Tiles rounded up to the kernel's `mr`: the rows of `Vᵀ` and `Mᵀ`.
    fn tile_rows(&self) -> usize {
        let mr = self.shape().mr;
        self.layer.tiles().div_ceil(mr) * mr
    }

    fn parts(&self) -> Parts {
        let l = &self.layer;
        let (c, tr, ocp) = (l.c, self.tile_rows(), oc_padded(l.oc));
        let vm = POS * l.v_step().max(l.m_step()) + LANES;
        let vt = POS * tr * c;
        let mt = POS * tr * ocp;
        Parts {
            vm: 0,
            vt: vm,
            mt: vm + vt,
            len: vm + vt + mt,
        }
    }

    /// Scratch values [`FewTiles::run`] needs (shared by all its steps).
    pub fn scratch_len(&self) -> usize {
        self.parts().len
    }

    /// Units of work of each step, for splitting over threads.
    pub fn units(&self, step: Step) -> usize {
        match step {
            Step::Input => self.layer.c,
            Step::TransposeV | Step::TransposeM => POS,
            Step::Product => POS * (oc_padded(self.layer.oc) / self.shape().nr),
            Step::Output => self.layer.oc,
        }
    }

    /// Run units `units` of `step` (the steps in [`Step::ALL`]'s order,
    /// each finished on every thread before the next begins).
    ///
    /// # Safety
    /// `scratch` must hold [`FewTiles::scratch_len`] values shared by
    /// every thread of the call, `out` the whole output `[n, oc, ho, wo]`;
    /// threads must run disjoint units of a step, and an epilogue's
    /// residual must be valid for reads where the output is.
    pub unsafe fn run(&self, step: Step, units: Range<usize>, scratch: *mut f32, out: *mut f32) {
        let l = &self.layer;
        let sh = self.shape();
        let (c, oc, bl, tr) = (l.c, l.oc, l.block, self.tile_rows());
        let (ocp, ocr, tiles) = (oc_padded(oc), l.oc_rows(), l.tiles());
        assert!(bl == Self::block(tiles) && tiles > 0 && c > 0 && oc > 0);
        assert!(l.tile == Tile::F2, "the few-tile path transforms 2×2 tiles");
        assert!(self.ut.len() >= POS * c * ocp);
        assert!(l.x.len() >= l.n * c * l.h * l.w);
        assert!(l.ho + 2 == l.h + 2 * l.pad.0 && l.wo + 2 == l.w + 2 * l.pad.1);
        assert!(units.end <= self.units(step));
        let p = self.parts();
        let (vs, ms) = (l.v_step(), l.m_step());
        // SAFETY (all steps): each part lies inside the scratch, which the
        // caller sized by `scratch_len`; units write disjoint rows.
        let (vm, vt, mt) = unsafe { (scratch.add(p.vm), scratch.add(p.vt), scratch.add(p.mt)) };
        let mut runs: Vec<Run> = Vec::new();
        match step {
            Step::Input => {
                l.runs(0, tiles, &mut runs);
                for ci in units {
                    for r in &runs {
                        // SAFETY: `V` holds 16·c·bl values.
                        unsafe { l.input(ci, r, vm) };
                    }
                }
            }
            Step::TransposeV => {
                for pos in units {
                    for t in 0..tr {
                        for ci in 0..c {
                            // SAFETY: inside `V` and `Vᵀ`; rows past the
                            // tiles are zero (their products are dropped).
                            unsafe {
                                *vt.add((pos * tr + t) * c + ci) = if t < tiles {
                                    *vm.add(pos * vs + ci * bl + t)
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                }
            }
            Step::Product => {
                let offsets: Vec<usize> = (0..c).map(|ci| ci * ocp).collect();
                let blocks = ocp / sh.nr;
                for u in units {
                    let (pos, ob) = (u / blocks, u % blocks);
                    for tb in 0..tr / sh.mr {
                        // SAFETY: `Vᵀ` rows `tb·mr..` hold `c` values each;
                        // tap `ci` reads `Uᵀ[pos][ci][ob·nr .. + nr]`;
                        // `Mᵀ` rows hold `ocp` values.
                        #[cfg(target_arch = "x86_64")]
                        unsafe {
                            let w: [*const f32; 8] = std::array::from_fn(|r| {
                                vt.add((pos * tr + tb * sh.mr + r.min(sh.mr - 1)) * c) as *const f32
                            });
                            let x = self.ut.as_ptr().add(pos * c * ocp + ob * sh.nr);
                            let at = (pos * tr + tb * sh.mr) * ocp + ob * sh.nr;
                            let acc = std::slice::from_raw_parts_mut(
                                mt.add(at),
                                (sh.mr - 1) * ocp + sh.nr,
                            );
                            if sh.mr == 8 {
                                crate::conv::avx512::tile(
                                    x, &offsets, &w, &[0.0; 8], false, acc, ocp,
                                )
                            } else {
                                let w6 = [w[0], w[1], w[2], w[3], w[4], w[5]];
                                crate::conv::avx2::tile(
                                    x, &offsets, &w6, &[0.0; 6], false, acc, ocp,
                                )
                            }
                        }
                    }
                }
            }
            Step::TransposeM => {
                if units.contains(&(POS - 1)) {
                    // SAFETY: the slack past `M`, inside the scratch; the
                    // output transform's vector loads may read it.
                    unsafe { std::ptr::write_bytes(vm.add(POS * ms), 0, LANES) };
                }
                for pos in units {
                    for o in 0..ocr {
                        for t in 0..bl {
                            // SAFETY: inside `Mᵀ` and `M`; rows past `oc`
                            // and tiles past `tiles` are never stored.
                            unsafe {
                                *vm.add(pos * ms + o * bl + t) = if o < oc && t < tiles {
                                    *mt.add((pos * tr + t) * ocp + o)
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                }
            }
            Step::Output => {
                l.runs(0, tiles, &mut runs);
                for o in units {
                    for r in &runs {
                        // SAFETY: per the contract on `out`; `M` is
                        // followed by LANES values of slack.
                        unsafe { l.output(o, r, vm, out) };
                    }
                }
            }
        }
    }
}

/// The steps of [`FewTiles::run`], in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `V` from the input, by input channel.
    Input,
    /// `V` to `Vᵀ`, by transform position.
    TransposeV,
    /// `Mᵀ = Vᵀ·Uᵀ`, by position and block of `nr` output channels.
    Product,
    /// `Mᵀ` to `M`, by position.
    TransposeM,
    /// The outputs from `M`, by output channel.
    Output,
}

impl Step {
    /// Every step, in the order they run.
    pub const ALL: [Step; 5] = [
        Step::Input,
        Step::TransposeV,
        Step::Product,
        Step::TransposeM,
        Step::Output,
    ];
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::conv::Epilogue;
    use crate::winograd::transform_weights;

    /// `x` convolved with `w` (3×3, stride 1, padding `pad`) in f64.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn naive(
        x: &[f32],
        n: usize,
        c: usize,
        h: usize,
        wd: usize,
        w: &[f32],
        oc: usize,
        pad: usize,
    ) -> Vec<f64> {
        let (ho, wo) = (h + 2 * pad - 2, wd + 2 * pad - 2);
        let mut y = vec![0.0f64; n * oc * ho * wo];
        for img in 0..n {
            for o in 0..oc {
                for i in 0..ho {
                    for j in 0..wo {
                        let mut s = 0.0f64;
                        for ci in 0..c {
                            for a in 0..3 {
                                for b in 0..3 {
                                    let (yi, xj) = (
                                        (i + a) as isize - pad as isize,
                                        (j + b) as isize - pad as isize,
                                    );
                                    if yi >= 0 && xj >= 0 && (yi as usize) < h && (xj as usize) < wd
                                    {
                                        let xv = x
                                            [((img * c + ci) * h + yi as usize) * wd + xj as usize];
                                        s += xv as f64 * w[((o * c + ci) * 3 + a) * 3 + b] as f64;
                                    }
                                }
                            }
                        }
                        y[((img * oc + o) * ho + i) * wo + j] = s;
                    }
                }
            }
        }
        y
    }

    /// A test layer's data: input, filters, bias, the epilogue's scale
    /// and residual, all small exact-ish values from fixed formulas.
    pub(crate) struct Case {
        pub(crate) n: usize,
        pub(crate) c: usize,
        pub(crate) oc: usize,
        pub(crate) h: usize,
        pub(crate) w: usize,
        pub(crate) pad: usize,
        pub(crate) x: Vec<f32>,
        pub(crate) wt: Vec<f32>,
        pub(crate) bias: Vec<f32>,
        pub(crate) scale: Vec<f32>,
        pub(crate) res: Vec<f32>,
    }

    impl Case {
        pub(crate) fn new(n: usize, c: usize, oc: usize, h: usize, w: usize, pad: usize) -> Case {
            let (ho, wo) = (h + 2 * pad - 2, w + 2 * pad - 2);
            Case {
                n,
                c,
                oc,
                h,
                w,
                pad,
                x: (0..n * c * h * w)
                    .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
                    .collect(),
                wt: (0..oc * c * 9)
                    .map(|i| ((i * 11) % 19) as f32 / 9.0 - 1.0)
                    .collect(),
                bias: (0..oc).map(|o| o as f32 * 0.25 - 2.0).collect(),
                scale: (0..oc).map(|o| 1.0 + o as f32 * 0.125).collect(),
                res: (0..n * oc * ho * wo)
                    .map(|i| ((i * 7) % 5) as f32 - 2.0)
                    .collect(),
            }
        }

        /// Output rows and columns.
        pub(crate) fn out_hw(&self) -> (usize, usize) {
            (self.h + 2 * self.pad - 2, self.w + 2 * self.pad - 2)
        }

        /// The layer over transformed filters `u`, with a bias or (`fused`)
        /// the epilogue with a residual and ReLU.
        pub(crate) fn layer<'a>(
            &'a self,
            u: &'a [f32],
            fused: bool,
            block: usize,
            tile: Tile,
        ) -> Winograd<'a> {
            let (ho, wo) = self.out_hw();
            Winograd {
                x: &self.x,
                n: self.n,
                c: self.c,
                h: self.h,
                w: self.w,
                pad: (self.pad, self.pad),
                ho,
                wo,
                u,
                oc: self.oc,
                bias: Some(&self.bias),
                epilogue: fused.then(|| Epilogue {
                    scale: &self.scale,
                    shift: &self.bias,
                    residual: Some(self.res.as_ptr()),
                    relu: true,
                }),
                block,
                tile,
            }
        }

        /// What output `i` should be: the convolution `conv` of it, through
        /// the bias or the epilogue.
        pub(crate) fn expect(&self, i: usize, conv: f64, fused: bool) -> f64 {
            let (ho, wo) = self.out_hw();
            let o = i / (ho * wo) % self.oc;
            if fused {
                (conv * self.scale[o] as f64 + self.bias[o] as f64 + self.res[i] as f64).max(0.0)
            } else {
                conv + self.bias[o] as f64
            }
        }
    }

    /// The transposed product gives the values of [`Winograd::run`] bit
    /// for bit (the same sums in the same order), which are a
    /// convolution's up to rounding: with a bias and with the fused
    /// epilogue, over channel counts that are not multiples of the tile,
    /// odd map sizes, padding 0-2 and two images.
    #[test]
    fn few_tiles_match_winograd_and_naive() {
        let Some(sh) = crate::conv::shape() else {
            return;
        };
        for &(n, c, oc, h, w, pad) in &[
            (1usize, 20usize, 19usize, 7usize, 7usize, 1usize),
            (1, 16, 50, 14, 14, 1),
            (2, 17, 33, 5, 6, 0),
            (1, 24, 16, 9, 7, 2),
        ] {
            let case = Case::new(n, c, oc, h, w, pad);
            let (ho, wo) = case.out_hw();
            let (x, wt) = (&case.x, &case.wt);
            let mut u = vec![0.0f32; 16 * oc * c];
            let ocp = oc_padded(oc);
            let mut ut = vec![f32::NAN; 16 * c * ocp];
            unsafe {
                transform_weights(wt, oc, c, 0..oc, u.as_mut_ptr());
                transform_weights_t(wt, oc, c, 0..c, ut.as_mut_ptr());
            }
            let want = naive(x, n, c, h, w, wt, oc, pad);
            for fused in [false, true] {
                let layer = |block: usize| case.layer(&u, fused, block, Tile::F2);
                let classic = layer(sh.nr * 2);
                let mut y1 = vec![0.0f32; n * oc * ho * wo];
                let mut scratch = vec![0.0f32; classic.scratch_len()];
                unsafe { classic.run(0..classic.blocks(), &mut scratch, y1.as_mut_ptr()) };
                let tiles = classic.tiles();
                let few = FewTiles {
                    layer: layer(FewTiles::block(tiles)), // its `u` is not read
                    ut: &ut,
                };
                let mut y2 = vec![f32::NAN; n * oc * ho * wo];
                let mut scratch = vec![f32::NAN; few.scratch_len()];
                for step in Step::ALL {
                    // in two halves, as two threads would
                    let k = few.units(step);
                    for r in [0..k / 2, k / 2..k] {
                        unsafe { few.run(step, r, scratch.as_mut_ptr(), y2.as_mut_ptr()) };
                    }
                }
                assert_eq!(
                    y1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    y2.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "n={n} c={c} oc={oc} {h}x{w} pad={pad} fused={fused}"
                );
                for (i, (&got, &conv)) in y2.iter().zip(&want).enumerate() {
                    let expect = case.expect(i, conv, fused);
                    assert!(
                        (got as f64 - expect).abs() <= 1e-3 * (1.0 + expect.abs()),
                        "n={n} c={c} oc={oc} {h}x{w} pad={pad} fused={fused} at {i}: {got} vs {expect}"
                    );
                }
            }
        }
    }
}
