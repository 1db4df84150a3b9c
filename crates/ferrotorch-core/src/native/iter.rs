//! The elementwise engine (ATen's `TensorIterator`, reduced to its core).
//!
//! Given an iteration shape and, per operand, a base pointer and element
//! strides (0 on broadcast dimensions), [`for_each`] coalesces dimensions
//! that are contiguous for every operand, splits the flat index range across
//! the thread pool, and calls the inner kernel once per run along the
//! innermost dimension with that run's pointers, strides and length. The
//! inner kernels are the multiversioned loops of `ferrotorch_kernels::simd`,
//! so there is no per-element dispatch.
//!
//! The typed helpers ([`map_unary`], [`map_binary`], [`map_ternary`]) add the
//! storage locking of Note [Storage access locks] and the output layout rule
//! of Note [Output layout].

use crate::dtype::Element;
use crate::error::Result;
use crate::storage::lock_storages;
use crate::tensor::layout::{broadcast_strides, Layout};
use crate::tensor::Tensor;
use crate::DType;
use ferrotorch_kernels::{parallel, simd};
use smallvec::SmallVec;

/// Elements per thread below which elementwise work stays on one thread.
pub(crate) const GRAIN: usize = 32 * 1024;

#[derive(Clone, Copy)]
struct SendPtr(*mut u8);
// SAFETY: pointers are only dereferenced inside kernels, under storage locks,
// on disjoint output ranges.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

/// Iterate `shape` over `N` operands (see the module docs). `ptrs` point at
/// each operand's element 0; `strides[k]` has one entry per dim of `shape`;
/// `esize[k]` is the operand's element size. `f` gets per-run pointers,
/// strides in elements and the run length.
#[inline]
pub(crate) fn for_each<const N: usize>(
    shape: &[usize],
    ptrs: [*mut u8; N],
    strides: [&[usize]; N],
    esize: [usize; N],
    f: impl Fn([*mut u8; N], [isize; N], usize) + Sync + Send,
) {
    walk(shape, ptrs, strides, esize, &f)
}

/// The inner kernel of a walk: per-run pointers, strides, run length.
type RunFn<'a, const N: usize> = &'a (dyn Fn([*mut u8; N], [isize; N], usize) + Sync + Send);

/// # Note [One elementwise walk per arity]
/// [`for_each`] is called with a different kernel closure by every op and
/// dtype (about 2,300 of them). Were the walk generic over the closure,
/// each would get its own copy of the walk, the tiling and the gather
/// loops: that was half of the core crate's LLVM IR and most of its
/// release build time. The walk takes the kernel as `&dyn Fn` instead, so
/// it is compiled once per operand count; the kernel is called once per
/// run of the innermost dimension (or tile row), where it runs its own
/// vectorised loop, so the indirect call costs nothing measurable.
fn walk<const N: usize>(
    shape: &[usize],
    ptrs: [*mut u8; N],
    strides: [&[usize]; N],
    esize: [usize; N],
    f: RunFn<'_, N>,
) {
    // Collect non-trivial dims, innermost first, then merge.
    let mut dims: SmallVec<[(usize, [isize; N]); 6]> = SmallVec::new();
    for d in (0..shape.len()).rev() {
        if shape[d] == 0 {
            return;
        }
        if shape[d] == 1 {
            continue;
        }
        let st: [isize; N] = std::array::from_fn(|k| strides[k][d] as isize);
        if let Some(last) = dims.last_mut() {
            let (ls, lst) = *last;
            if (0..N).all(|k| st[k] == lst[k] * ls as isize) {
                last.0 *= shape[d];
                continue;
            }
        }
        dims.push((shape[d], st));
    }
    if dims.is_empty() {
        dims.push((1, [0; N]));
    }
    let total: usize = dims.iter().map(|d| d.0).product();
    if wants_tiling(&dims) {
        return for_each_tiled(&dims, ptrs, esize, f);
    }
    let (inner, inner_st) = dims[0];
    let outer = &dims[1..];
    let base: [SendPtr; N] = std::array::from_fn(|k| SendPtr(ptrs[k]));
    let run = |range: std::ops::Range<usize>| {
        let mut idx = range.start;
        // odometer over outer dims, initialised from the start index
        let mut rest = idx / inner;
        let mut counter: SmallVec<[usize; 6]> = SmallVec::new();
        let mut off: [isize; N] = [0; N];
        for (s, st) in outer {
            let c = rest % s;
            rest /= s;
            counter.push(c);
            for k in 0..N {
                off[k] += c as isize * st[k];
            }
        }
        let mut i0 = idx % inner;
        while idx < range.end {
            let len = (inner - i0).min(range.end - idx);
            // SAFETY: offsets stay within each operand's view by construction.
            let p: [*mut u8; N] = std::array::from_fn(|k| unsafe {
                base[k]
                    .0
                    .offset((off[k] + i0 as isize * inner_st[k]) * esize[k] as isize)
            });
            f(p, inner_st, len);
            idx += len;
            i0 = 0;
            // advance the odometer
            for (j, (s, st)) in outer.iter().enumerate() {
                counter[j] += 1;
                for k in 0..N {
                    off[k] += st[k];
                }
                if counter[j] < *s {
                    break;
                }
                for k in 0..N {
                    off[k] -= *s as isize * st[k];
                }
                counter[j] = 0;
            }
        }
    };
    parallel::parallel_for(total, GRAIN, run);
}

/// True when some operand walks the inner dim with a large stride but the
/// next dim contiguously (a transposed operand): then a row-by-row walk
/// touches a new cache line per element, and [`for_each_tiled`] is used.
fn wants_tiling<const N: usize>(dims: &[(usize, [isize; N])]) -> bool {
    dims.len() >= 2
        && dims[0].0 >= 16
        && dims[1].0 >= 16
        && (0..N).any(|k| dims[0].1[k].abs() > 1 && dims[1].1[k].abs() == 1)
}

/// # Note [Tiled elementwise loops]
/// For transposed operands the two innermost dims are walked in tiles of
/// `TILE_R` rows × `TILE_C` columns: within a tile the transposed operand's
/// cache lines (one per column, holding 16 consecutive rows) are reused by
/// the following rows instead of being evicted. Tiles run in parallel.
const TILE_R: usize = 16;
const TILE_C: usize = 256;

fn for_each_tiled<const N: usize>(
    dims: &[(usize, [isize; N])],
    ptrs: [*mut u8; N],
    esize: [usize; N],
    f: RunFn<'_, N>,
) {
    // Walk columns along whichever of the two dims the output is contiguous in.
    let out_k = N - 1;
    let swap = dims[1].1[out_k].abs() == 1 && dims[0].1[out_k].abs() != 1;
    let ((cols, cst), (rows, rst)) = if swap {
        (dims[1], dims[0])
    } else {
        (dims[0], dims[1])
    };
    let outer = &dims[2..];
    let outer_n: usize = outer.iter().map(|d| d.0).product();
    let row_tiles = rows.div_ceil(TILE_R);
    let base: [SendPtr; N] = std::array::from_fn(|k| SendPtr(ptrs[k]));
    let items = outer_n * row_tiles;
    let grain = (GRAIN / (TILE_R * cols).max(1)).max(1);
    // Inputs walked with a stride along the columns are first copied, a
    // tile at a time, into contiguous scratch rows (reading each source
    // column's run of rows as one cache line), so `f` sees unit strides and
    // vectorises. The output must be contiguous along the columns for this.
    let gather: [bool; N] =
        std::array::from_fn(|k| k < out_k && cst[k] != 0 && cst[k] != 1 && cst[out_k] == 1);
    parallel::parallel_for(items, grain, |range| {
        let mut scratch: Vec<Vec<u64>> = gather
            .iter()
            .zip(esize)
            .map(|(&g, e)| {
                if g {
                    // a tile of elements of `e` bytes, in whole u64s
                    // (complex128 elements take two)
                    vec![0u64; TILE_R * TILE_C * e.div_ceil(8)]
                } else {
                    Vec::new()
                }
            })
            .collect();
        for item in range {
            let (mut o, rt) = (item / row_tiles, item % row_tiles);
            let mut off: [isize; N] = [0; N];
            for (s, st) in outer {
                let c = (o % s) as isize;
                o /= s;
                for k in 0..N {
                    off[k] += c * st[k];
                }
            }
            let r0 = rt * TILE_R;
            let r1 = (r0 + TILE_R).min(rows);
            for c0 in (0..cols).step_by(TILE_C) {
                let len = TILE_C.min(cols - c0);
                // SAFETY: (r, c) for r in r0..r1, c in c0..c0+len lies inside
                // every operand's view.
                let at = |k: usize, r: usize, c: usize| unsafe {
                    base[k].0.offset(
                        (off[k] + r as isize * rst[k] + c as isize * cst[k]) * esize[k] as isize,
                    )
                };
                for k in 0..N {
                    if gather[k] && esize[k] == 4 && rst[k] == 1 {
                        // Columns are contiguous runs of rows: transpose
                        // 8×8 blocks in registers.
                        // SAFETY: as below, for 4-byte elements.
                        unsafe {
                            ferrotorch_kernels::transpose::transpose32(
                                at(k, r0, c0) as *const u32,
                                cst[k],
                                r1 - r0,
                                len,
                                scratch[k].as_mut_ptr() as *mut u32,
                            )
                        };
                    } else if gather[k] {
                        // SAFETY: reads inside operand k's view; scratch holds
                        // TILE_R rows of TILE_C elements of esize[k] bytes.
                        unsafe {
                            gather_tile(
                                &mut scratch[k],
                                at(k, r0, c0),
                                [rst[k], cst[k]],
                                r1 - r0,
                                len,
                                esize[k],
                            )
                        };
                    }
                }
                let mut st = cst;
                for k in 0..N {
                    if gather[k] {
                        st[k] = 1;
                    }
                }
                for r in r0..r1 {
                    let p: [*mut u8; N] = std::array::from_fn(|k| {
                        if gather[k] {
                            // row r - r0 of the scratch tile, rows `len` apart
                            unsafe {
                                (scratch[k].as_mut_ptr() as *mut u8).add((r - r0) * len * esize[k])
                            }
                        } else {
                            at(k, r, c0)
                        }
                    });
                    f(p, st, len);
                }
            }
        }
    });
}

/// Copy a `rows × cols` tile, element `(r, c)` at `src + (r * step[0] +
/// c * step[1]) * esize` (steps in elements), into `dst` as contiguous
/// rows of `cols` elements of `esize` bytes. Walks each column down its
/// rows, which is the contiguous direction of a transposed operand. The
/// addresses are computed here, not by a closure: an indirect call per
/// element would cost more than the copy (Note [One elementwise walk per
/// arity]).
///
/// # Safety
/// Every element `(r, c)` must be readable for `esize` bytes, and `dst`
/// must hold `rows * cols * esize` bytes.
unsafe fn gather_tile(
    dst: &mut [u64],
    src: *const u8,
    step: [isize; 2],
    rows: usize,
    cols: usize,
    esize: usize,
) {
    unsafe fn copy<T: Copy>(
        dst: *mut T,
        src: *const u8,
        step: [isize; 2],
        rows: usize,
        cols: usize,
    ) {
        let src = src as *const T;
        for c in 0..cols {
            for r in 0..rows {
                let at = r as isize * step[0] + c as isize * step[1];
                unsafe { *dst.add(r * cols + c) = src.offset(at).read_unaligned() };
            }
        }
    }
    let d = dst.as_mut_ptr() as *mut u8;
    unsafe {
        match esize {
            1 => copy::<u8>(d, src, step, rows, cols),
            2 => copy::<u16>(d as *mut u16, src, step, rows, cols),
            4 => copy::<u32>(d as *mut u32, src, step, rows, cols),
            8 => copy::<u64>(d as *mut u64, src, step, rows, cols),
            // complex128
            16 => copy::<[u64; 2]>(d as *mut [u64; 2], src, step, rows, cols),
            e => unreachable!("no {e}-byte element type"),
        }
    }
}

/// # Note [Output layout]
/// An elementwise result takes the strides of its first input when that
/// input already has the output's shape and is dense (a permutation of a
/// contiguous layout, e.g. a transpose), as PyTorch's `TensorIterator`
/// does: `x.t().exp()` is then a contiguous loop and returns a transposed
/// tensor. Otherwise the result is contiguous.
pub(crate) fn empty_like_layout(
    shape: &[usize],
    dtype: DType,
    like: Option<&Tensor>,
) -> Result<Tensor> {
    if let Some(t) = like {
        if !t.is_contiguous() && t.shape() == shape && t.layout().is_dense() {
            let n = crate::tensor::layout::checked_numel("empty", shape)?;
            let storage = crate::storage::Storage::new_uninit(n * dtype.size())?;
            let layout = Layout::new(shape.into(), t.stride().into(), 0);
            return Ok(Tensor::from_parts(storage, layout, dtype));
        }
    }
    Tensor::empty(shape, dtype)
}

/// # Note [Single-run fast path]
/// Most small elementwise ops (autograd formulas, optimizer steps, tiny
/// models) have a contiguous output below the threading grain and inputs
/// that are either laid out like it or hold one element. Those run as one
/// call of the inner kernel, with stride 1 or 0 per input, skipping the
/// broadcast strides, dimension merging and pool of [`for_each`].
/// `run_stride` gives that stride, or `None` when the general walk is needed.
fn run_stride(t: &Tensor, out: &Tensor) -> Option<isize> {
    if t.numel() == 1 {
        Some(0)
    } else if t.shape() == out.shape() && t.is_contiguous() {
        Some(1)
    } else {
        None
    }
}

/// Whether `out` qualifies for Note [Single-run fast path].
fn single_run(out: &Tensor) -> bool {
    out.numel() <= GRAIN && out.is_contiguous()
}

fn check_dtype<T: Element>(t: &Tensor) {
    debug_assert_eq!(t.dtype(), T::DTYPE, "kernel dtype mismatch");
}

/// `out[i] = f(a[i])`, `a` broadcast to `out`'s shape.
pub(crate) fn map_unary<T: Element, U: Element>(
    a: &Tensor,
    out: &Tensor,
    f: impl Fn(T) -> U + Copy + Send + Sync,
) {
    map_unary_with(a, out, move |n, src, ss, dst, ds| unsafe {
        simd::map1(n, src, ss, dst, ds, f)
    });
}

/// [`map_unary`] with the inner loop given: `kernel(n, src, src_stride,
/// dst, dst_stride)` runs over each 1-D span (e.g. [`simd::map1_tiered`]).
pub(crate) fn map_unary_with<T: Element, U: Element>(
    a: &Tensor,
    out: &Tensor,
    kernel: impl Fn(usize, *const T, isize, *mut U, isize) + Copy + Send + Sync,
) {
    check_dtype::<T>(a);
    check_dtype::<U>(out);
    if single_run(out) {
        if let Some(s) = run_stride(a, out) {
            let _g = lock_storages(&[a.storage()], &[out.storage()]);
            let n = out.numel();
            if n > 0 {
                kernel(n, a.data_ptr() as *const T, s, out.data_ptr() as *mut U, 1);
            }
            return;
        }
    }
    let sa = broadcast_strides(a.shape(), a.stride(), out.shape());
    let _g = lock_storages(&[a.storage()], &[out.storage()]);
    for_each(
        out.shape(),
        [a.data_ptr(), out.data_ptr()],
        [&sa, out.stride()],
        [a.element_size(), out.element_size()],
        |p, s, n| kernel(n, p[0] as *const T, s[0], p[1] as *mut U, s[1]),
    );
}

/// `out[i] = f(a[i], b[i])`, inputs broadcast to `out`'s shape.
pub(crate) fn map_binary<A: Element, B: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    f: impl Fn(A, B) -> U + Copy + Send + Sync,
) {
    check_dtype::<A>(a);
    check_dtype::<B>(b);
    check_dtype::<U>(out);
    if single_run(out) {
        if let (Some(s0), Some(s1)) = (run_stride(a, out), run_stride(b, out)) {
            let _g = lock_storages(&[a.storage(), b.storage()], &[out.storage()]);
            let n = out.numel();
            if n > 0 {
                // SAFETY: each input holds `n` contiguous elements or one
                // (stride 0); the output holds `n` contiguous elements.
                unsafe {
                    simd::map2(
                        n,
                        a.data_ptr() as *const A,
                        s0,
                        b.data_ptr() as *const B,
                        s1,
                        out.data_ptr() as *mut U,
                        1,
                        f,
                    )
                };
            }
            return;
        }
    }
    let sa = broadcast_strides(a.shape(), a.stride(), out.shape());
    let sb = broadcast_strides(b.shape(), b.stride(), out.shape());
    let _g = lock_storages(&[a.storage(), b.storage()], &[out.storage()]);
    for_each(
        out.shape(),
        [a.data_ptr(), b.data_ptr(), out.data_ptr()],
        [&sa, &sb, out.stride()],
        [a.element_size(), b.element_size(), out.element_size()],
        |p, s, n| unsafe {
            simd::map2(
                n,
                p[0] as *const A,
                s[0],
                p[1] as *const B,
                s[1],
                p[2] as *mut U,
                s[2],
                f,
            )
        },
    );
}

/// `out[i] = f(a[i], b[i], c[i])`, inputs broadcast to `out`'s shape.
pub(crate) fn map_ternary<A: Element, B: Element, C: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    out: &Tensor,
    f: impl Fn(A, B, C) -> U + Copy + Send + Sync,
) {
    check_dtype::<A>(a);
    check_dtype::<B>(b);
    check_dtype::<C>(c);
    check_dtype::<U>(out);
    let sa = broadcast_strides(a.shape(), a.stride(), out.shape());
    let sb = broadcast_strides(b.shape(), b.stride(), out.shape());
    let sc = broadcast_strides(c.shape(), c.stride(), out.shape());
    let _g = lock_storages(&[a.storage(), b.storage(), c.storage()], &[out.storage()]);
    for_each(
        out.shape(),
        [a.data_ptr(), b.data_ptr(), c.data_ptr(), out.data_ptr()],
        [&sa, &sb, &sc, out.stride()],
        [
            a.element_size(),
            b.element_size(),
            c.element_size(),
            out.element_size(),
        ],
        |p, s, n| unsafe {
            simd::map3(
                n,
                p[0] as *const A,
                s[0],
                p[1] as *const B,
                s[1],
                p[2] as *const C,
                s[2],
                p[3] as *mut U,
                s[3],
                f,
            )
        },
    );
}
