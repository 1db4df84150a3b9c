//! Matrix multiplication on strided operands.
//!
//! f32, f64 and f16 go to the `gemm` crate, built with its x86-64-v4
//! (AVX-512) kernels, which it selects at run time. Other element types use a
//! simple blocked loop (integer matmul is rare and PyTorch's is not fast either).

use crate::parallel;

/// A strided matrix operand: pointer plus row and column strides in elements.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<T> {
    /// First element.
    pub ptr: *const T,
    /// Distance between rows, in elements.
    pub rs: isize,
    /// Distance between columns, in elements.
    pub cs: isize,
}

/// A strided mutable matrix operand.
#[derive(Clone, Copy, Debug)]
pub struct MatMut<T> {
    /// First element.
    pub ptr: *mut T,
    /// Distance between rows, in elements.
    pub rs: isize,
    /// Distance between columns, in elements.
    pub cs: isize,
}

/// Element types with a GEMM.
pub trait GemmElem: Copy + Send + Sync + 'static {
    /// `dst = beta * dst + alpha * a @ b` (`dst` is not read when `beta == 0`).
    ///
    /// # Safety
    /// Operands must describe valid `m×k`, `k×n` and `m×n` matrices; `dst`
    /// must not overlap `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        n: usize,
        k: usize,
        dst: MatMut<Self>,
        a: MatRef<Self>,
        b: MatRef<Self>,
        alpha: Self,
        beta: Self,
    );
}

/// Parts to split an `m×n×k` product into: one per thread when it is large
/// enough, one when called from inside a parallel job (a caller already
/// parallelises, e.g. convolution over images).
fn parts_for(m: usize, n: usize, k: usize) -> usize {
    let flops = m as f64 * n as f64 * k as f64;
    let t = parallel::get_num_threads();
    if flops < 64.0 * 64.0 * 64.0 || t <= 1 || parallel::in_worker() || m.max(n) < 32 {
        1
    } else {
        t
    }
}

/// # Note [Parallel GEMM]
/// A large product runs on the intra-op pool (Note [Intra-op pool]) as one
/// single-threaded GEMM per thread over a slice of the output: columns when
/// `n >= m`, else rows, in multiples of 16. Each thread packs the operand
/// it shares (`a` for a column split) itself, which costs `m·k` copies
/// against `m·n·k/t` multiply-adds. The gemm crate's own rayon mode woke
/// its sleeping workers on every call, which cost about 100 µs per product
/// on the MLP and ResNet layers.
///
/// # Note [Transposed right operands]
/// `x @ w.t()` (every `nn.Linear`: the weight is `[out, in]`) gives a
/// right operand whose columns are contiguous. The gemm crate multiplies
/// such an operand slowly into a row-major destination, and fast into a
/// column-major one (one thread, Zen 4: `[8, 1024] @ [4096, 1024].t()`
/// 12.4 ms against 1.4 ms; `[128, 512] @ [512, 512].t()` 1.09 against
/// 0.70 ms; equal at `512 × 512 × 512`). So when the left operand is
/// row-major, the right one column-major, the destination row-major and
/// `m < n` (fewer rows than output features: the batches of inference and
/// of most training steps), the product goes into a column-major scratch
/// and is then added into the destination, an `m·n` copy against `m·n·k`
/// multiply-adds. With 2 threads: 8×1024×4096 0.71 ms (PyTorch 1.63),
/// 128×512×512 0.45 ms (0.47), 128×1024×4096 5.5 ms (6.9). The scratch
/// is not zero-filled, and the add-back transposes 32×32 tiles in
/// registers and splits them over the pool: as a scalar loop on one
/// thread it took 6–8 % of a 128×512×512 or 128×512×784 product.
fn transposed_rhs<T>(
    m: usize,
    n: usize,
    k: usize,
    dst: &MatMut<T>,
    a: &MatRef<T>,
    b: &MatRef<T>,
) -> bool {
    m > 1 && m < n && k > 1 && b.rs == 1 && b.cs.unsigned_abs() > 1 && a.cs == 1 && dst.cs == 1
}

/// `dst = beta * dst + s` for a column-major `m×n` scratch `s` (`dst` not
/// read without `read_dst`), in tiles of 32×32: each tile of `s` is first
/// transposed into a row-major buffer (in registers for 4-byte elements,
/// [`crate::transpose::transpose32`]), then added into `dst` a row piece
/// at a time, which vectorises; tiles are split over the intra-op pool
/// when the product is large (Note [Transposed right operands]).
///
/// # Safety
/// `dst` must describe a valid `m×n` matrix with unit column stride;
/// `s.len() == m * n`.
unsafe fn add_transposed<T>(m: usize, n: usize, s: &[T], dst: MatMut<T>, beta: T, read_dst: bool)
where
    T: Copy + Default + Send + Sync + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    const TILE: usize = 32;
    debug_assert_eq!(dst.cs, 1);
    let (sp, dp) = (s.as_ptr() as usize, dst.ptr as usize);
    let rows_of_tiles = m.div_ceil(TILE);
    let tile_rows = move |range: std::ops::Range<usize>| {
        let mut buf = [T::default(); TILE * TILE];
        for ti in range {
            let i0 = ti * TILE;
            let rows = TILE.min(m - i0);
            for j0 in (0..n).step_by(TILE) {
                let cols = TILE.min(n - j0);
                let src = (sp as *const T).wrapping_add(j0 * m + i0);
                if std::mem::size_of::<T>() == 4 {
                    // SAFETY: the tile's `rows` × `cols` elements of `s`
                    // are in bounds (column stride m); buf holds TILE².
                    unsafe {
                        crate::transpose::transpose32(
                            src.cast(),
                            m as isize,
                            rows,
                            cols,
                            buf.as_mut_ptr().cast(),
                        )
                    };
                } else {
                    for r in 0..rows {
                        for c in 0..cols {
                            // SAFETY: as above.
                            buf[r * cols + c] = unsafe { *src.add(r + c * m) };
                        }
                    }
                }
                for r in 0..rows {
                    let t = &buf[r * cols..(r + 1) * cols];
                    // SAFETY: row i0 + r, columns j0.. j0 + cols of the
                    // caller's m×n destination (unit column stride).
                    let d = unsafe {
                        std::slice::from_raw_parts_mut(
                            (dp as *mut T).offset((i0 + r) as isize * dst.rs + j0 as isize),
                            cols,
                        )
                    };
                    if read_dst {
                        for (d, &v) in d.iter_mut().zip(t) {
                            *d = beta * *d + v;
                        }
                    } else {
                        d.copy_from_slice(t);
                    }
                }
            }
        }
    };
    // (inside a pool job, parallel_for runs inline)
    if m * n >= 1 << 16 {
        parallel::parallel_for(rows_of_tiles, 1, tile_rows);
    } else {
        tile_rows(0..rows_of_tiles);
    }
}

macro_rules! gemm_crate_impl {
    ($t:ty, $zero:expr) => {
        impl GemmElem for $t {
            unsafe fn gemm(
                m: usize,
                n: usize,
                k: usize,
                dst: MatMut<Self>,
                a: MatRef<Self>,
                b: MatRef<Self>,
                alpha: Self,
                beta: Self,
            ) {
                /// The product with the operands as given.
                #[allow(clippy::too_many_arguments)]
                unsafe fn strided(
                    m: usize,
                    n: usize,
                    k: usize,
                    dst: MatMut<$t>,
                    a: MatRef<$t>,
                    b: MatRef<$t>,
                    alpha: $t,
                    beta: $t,
                ) {
                    let read_dst = beta != $zero;
                    // The gemm crate computes dst := alpha_g * dst + beta_g * a @ b.
                    // Pointers travel as addresses so the closure is Send.
                    let (dp, ap, bp) = (dst.ptr as usize, a.ptr as usize, b.ptr as usize);
                    // The product of rows `rows` and columns `cols`.
                    let block = move |rows: std::ops::Range<usize>,
                                      cols: std::ops::Range<usize>| unsafe {
                        let (r0, c0) = (rows.start as isize, cols.start as isize);
                        gemm::gemm(
                            rows.len(),
                            cols.len(),
                            k,
                            (dp as *mut $t).offset(r0 * dst.rs + c0 * dst.cs),
                            dst.cs,
                            dst.rs,
                            read_dst,
                            (ap as *const $t).offset(r0 * a.rs),
                            a.cs,
                            a.rs,
                            (bp as *const $t).offset(c0 * b.cs),
                            b.cs,
                            b.rs,
                            if read_dst { beta } else { $zero },
                            alpha,
                            false,
                            false,
                            false,
                            gemm::Parallelism::None,
                        )
                    };
                    let parts = parts_for(m, n, k);
                    if parts == 1 {
                        return block(0..m, 0..n);
                    }
                    let split = |len: usize| len.div_ceil(parts).div_ceil(16) * 16;
                    if n >= m {
                        let per = split(n);
                        parallel::parallel_for(n.div_ceil(per), 1, |r| {
                            for p in r {
                                block(0..m, p * per..((p + 1) * per).min(n));
                            }
                        });
                    } else {
                        let per = split(m);
                        parallel::parallel_for(m.div_ceil(per), 1, |r| {
                            for p in r {
                                block(p * per..((p + 1) * per).min(m), 0..n);
                            }
                        });
                    }
                }

                if m == 0 || n == 0 {
                    return;
                }
                if transposed_rhs(m, n, k, &dst, &a, &b) {
                    // a column-major product, then added into dst
                    // (Note [Transposed right operands])
                    // not zero-filled: with beta = 0 the product writes
                    // every element without reading any
                    let mut s: Vec<$t> = Vec::with_capacity(m * n);
                    let cm = MatMut {
                        ptr: s.as_mut_ptr(),
                        rs: 1,
                        cs: m as isize,
                    };
                    // SAFETY: s has room for an m×n matrix, which the
                    // product writes whole (m, n, k > 0); a and b are the
                    // caller's.
                    unsafe {
                        strided(m, n, k, cm, a, b, alpha, $zero);
                        s.set_len(m * n);
                    }
                    // SAFETY: dst is the caller's m×n matrix, s is m×n.
                    unsafe { add_transposed(m, n, &s, dst, beta, beta != $zero) };
                    return;
                }
                // SAFETY: the caller's contract.
                unsafe { strided(m, n, k, dst, a, b, alpha, beta) }
            }
        }
    };
}

gemm_crate_impl!(f32, 0.0f32);
gemm_crate_impl!(f64, 0.0f64);
gemm_crate_impl!(half::f16, half::f16::ZERO);

/// Naive i-k-j loop for element types the gemm crate lacks.
macro_rules! naive_impl {
    ($($t:ty),*) => {$(
        impl GemmElem for $t {
            unsafe fn gemm(
                m: usize, n: usize, k: usize,
                dst: MatMut<Self>, a: MatRef<Self>, b: MatRef<Self>,
                alpha: Self, beta: Self,
            ) {
                unsafe {
                    for i in 0..m as isize {
                        for j in 0..n as isize {
                            let mut acc: $t = Default::default();
                            for p in 0..k as isize {
                                acc = acc.wrapping_add(
                                    (*a.ptr.offset(i * a.rs + p * a.cs))
                                        .wrapping_mul(*b.ptr.offset(p * b.rs + j * b.cs)),
                                );
                            }
                            let d = dst.ptr.offset(i * dst.rs + j * dst.cs);
                            let prev = if beta == 0 { 0 } else { (*d).wrapping_mul(beta) };
                            *d = prev.wrapping_add(acc.wrapping_mul(alpha));
                        }
                    }
                }
            }
        }
    )*};
}
naive_impl!(i64, i32, i16, i8, u8);

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, n: usize, k: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    #[test]
    fn f32_gemm_matches_naive_with_alpha_beta_and_transposes() {
        let (m, n, k) = (37, 29, 53);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 31) % 17) as f32 - 8.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 13) % 11) as f32 - 5.0).collect();
        let want = naive(
            m,
            n,
            k,
            &a.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            &b.iter().map(|&x| x as f64).collect::<Vec<_>>(),
        );
        let mut c = vec![1.0f32; m * n];
        unsafe {
            f32::gemm(
                m,
                n,
                k,
                MatMut {
                    ptr: c.as_mut_ptr(),
                    rs: n as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: a.as_ptr(),
                    rs: k as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: b.as_ptr(),
                    rs: n as isize,
                    cs: 1,
                },
                2.0,
                0.5,
            );
        }
        for i in 0..m * n {
            assert_eq!(c[i] as f64, 0.5 + 2.0 * want[i]);
        }
        // column-major destination (transposed strides)
        let mut ct = vec![0.0f32; m * n];
        unsafe {
            f32::gemm(
                m,
                n,
                k,
                MatMut {
                    ptr: ct.as_mut_ptr(),
                    rs: 1,
                    cs: m as isize,
                },
                MatRef {
                    ptr: a.as_ptr(),
                    rs: k as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: b.as_ptr(),
                    rs: n as isize,
                    cs: 1,
                },
                1.0,
                0.0,
            );
        }
        for i in 0..m {
            for j in 0..n {
                assert_eq!(ct[j * m + i] as f64, want[i * n + j]);
            }
        }
        let ai: Vec<i64> = a.iter().map(|&x| x as i64).collect();
        let bi: Vec<i64> = b.iter().map(|&x| x as i64).collect();
        let mut ci = vec![0i64; m * n];
        unsafe {
            i64::gemm(
                m,
                n,
                k,
                MatMut {
                    ptr: ci.as_mut_ptr(),
                    rs: n as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: ai.as_ptr(),
                    rs: k as isize,
                    cs: 1,
                },
                MatRef {
                    ptr: bi.as_ptr(),
                    rs: n as isize,
                    cs: 1,
                },
                1,
                0,
            );
        }
        assert!(ci.iter().zip(&want).all(|(&x, &y)| x as f64 == y));
    }

    /// `a @ w.t()` (Note [Transposed right operands]): the product computed
    /// transposed, with alpha and beta (0: the destination's NaNs are never
    /// read), into row-major destinations (also rows of a wider matrix)
    /// and column-major ones, for shapes that split over threads and ones
    /// that do not, in f32 (tiles transposed in registers) and f64.
    #[test]
    fn transposed_right_operands_match_naive() {
        macro_rules! check {
            ($t:ty) => {
                for &(m, n, k) in &[
                    (37usize, 29usize, 53usize),
                    (2, 300, 64),
                    (130, 520, 512),
                    (64, 8, 3),
                    (41, 70, 9),
                ] {
                    let a: Vec<f64> = (0..m * k).map(|i| ((i * 31) % 17) as f64 - 8.0).collect();
                    let w: Vec<f64> = (0..n * k).map(|i| ((i * 13) % 11) as f64 - 5.0).collect();
                    // b = w.t(): b[p][j] = w[j][p]
                    let b: Vec<f64> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
                    let want = naive(m, n, k, &a, &b);
                    let (at, wt): (Vec<$t>, Vec<$t>) = (
                        a.iter().map(|&x| x as $t).collect(),
                        w.iter().map(|&x| x as $t).collect(),
                    );
                    for (rs, cs, len) in [(n, 1, m * n), (n + 5, 1, m * (n + 5)), (1, m, m * n)] {
                        for beta in [0.0 as $t, 0.5] {
                            let mut c = vec![if beta == 0.0 { <$t>::NAN } else { 3.0 }; len];
                            unsafe {
                                <$t>::gemm(
                                    m,
                                    n,
                                    k,
                                    MatMut {
                                        ptr: c.as_mut_ptr(),
                                        rs: rs as isize,
                                        cs: cs as isize,
                                    },
                                    MatRef {
                                        ptr: at.as_ptr(),
                                        rs: k as isize,
                                        cs: 1,
                                    },
                                    MatRef {
                                        ptr: wt.as_ptr(),
                                        rs: 1,
                                        cs: k as isize,
                                    },
                                    2.0,
                                    beta,
                                );
                            }
                            for i in 0..m {
                                for j in 0..n {
                                    let got = c[i * rs + j * cs] as f64;
                                    assert_eq!(
                                        got,
                                        3.0 * beta as f64 + 2.0 * want[i * n + j],
                                        "{} {m}x{n}x{k} rs {rs} beta {beta} at {i},{j}",
                                        stringify!($t)
                                    );
                                }
                            }
                        }
                    }
                }
            };
        }
        check!(f32);
        check!(f64);
    }
}
