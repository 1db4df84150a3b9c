//! Vectorised element loops, compiled per CPU level and chosen at run time.
//!
//! # Note [Multiversioned loops]
//! Each loop is written once as plain generic Rust over raw strided pointers.
//! [`multiversion!`] compiles that body three times: with AVX-512 enabled, with
//! AVX2+FMA enabled, and for the baseline target; [`crate::cpu::level`] picks one
//! per call (one cached branch, never per element). The element function `f`
//! is a generic closure, so it is inlined into each copy and LLVM vectorises it
//! with the enabled instruction set. This is why the approximations in
//! [`crate::math`] are branch-free: selects vectorise, branches do not.
//!
//! Debug builds compile only the baseline copy (LLVM does not vectorise
//! below opt-level 2 anyway), which keeps test builds fast.
//!
//! Inside a loop the common layouts get their own straight-line code path
//! (all operands contiguous, one operand a broadcast scalar); anything else
//! takes the strided path.

use crate::cpu::Level;

/// Compile an `unsafe fn` body for AVX-512, AVX2+FMA and the baseline, and
/// dispatch on [`crate::cpu::level`] at the call. See Note [Multiversioned loops].
#[macro_export]
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        $vis:vis unsafe fn $name:ident [$($gen:tt)*] ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
    ) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        $vis unsafe fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn body<$($gen)*>($($arg: $ty),*) $(-> $ret)? $body
            // Debug builds (opt-level < 2) do not run the loop vectoriser, so
            // the extra copies would only cost compile time.
            #[cfg(all(target_arch = "x86_64", not(debug_assertions)))]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn v4<$($gen)*>($($arg: $ty),*) $(-> $ret)? { unsafe { body($($arg),*) } }
                #[target_feature(enable = "avx2,fma,f16c")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn v3<$($gen)*>($($arg: $ty),*) $(-> $ret)? { unsafe { body($($arg),*) } }
                match $crate::cpu::level() {
                    $crate::cpu::Level::Avx512 => return unsafe { v4($($arg),*) },
                    $crate::cpu::Level::Avx2 => return unsafe { v3($($arg),*) },
                    $crate::cpu::Level::Baseline => {}
                }
            }
            unsafe { body($($arg),*) }
        }
    };
}

/// The level the loops will run at (for benchmarks and diagnostics).
pub fn active_level() -> Level {
    crate::cpu::level()
}

/// Whether `dst` is `src` itself, element for element (an in-place op).
///
/// # Note [In-place loops vectorise]
/// LLVM vectorises `dst[i] = f(src[i])` behind a run-time check that the
/// two ranges do not overlap, and sends overlapping ones — `src == dst`
/// included, though reading element `i` before writing it is safe — to its
/// scalar loop: every in-place op (`x.div_(2)`, `relu_`, an optimizer's
/// update) ran scalar, `div_` 4× slower than `div` into a fresh tensor.
/// The in-place case gets its own loop that loads and stores through one
/// pointer, which needs no check.
#[inline(always)]
fn in_place<T, U>(src: *const T, dst: *mut U) -> bool {
    std::mem::size_of::<T>() == std::mem::size_of::<U>()
        && std::ptr::eq(src.cast::<u8>(), dst.cast::<u8>().cast_const())
}

multiversion! {
    /// `dst[i*ds] = f(src[i*ss])` for `i < n`. Strides are in elements.
    ///
    /// # Safety
    /// Every address touched must be valid; `dst` must not overlap `src` except
    /// when both are the same contiguous buffer (in-place).
    pub unsafe fn map1[T: Copy, U: Copy, F: Fn(T) -> U](
        n: usize, src: *const T, ss: isize, dst: *mut U, ds: isize, f: F
    ) {
        unsafe {
            if ss == 1 && ds == 1 && in_place(src, dst) {
                // Note [In-place loops vectorise]
                let p = dst as *const T;
                for i in 0..n {
                    *dst.add(i) = f(*p.add(i));
                }
            } else if ss == 1 && ds == 1 {
                for i in 0..n {
                    *dst.add(i) = f(*src.add(i));
                }
            } else if ss == 0 && ds == 1 {
                let v = f(*src);
                for i in 0..n {
                    *dst.add(i) = v;
                }
            } else {
                for i in 0..n as isize {
                    *dst.offset(i * ds) = f(*src.offset(i * ss));
                }
            }
        }
    }
}

multiversion! {
    /// `dst[i] = f(src[i])` where `f` has a cheap form `fast`, good except
    /// on inputs where `needs_slow(x)`, and an accurate form `slow`. Each
    /// block of 16 contiguous inputs is read, then computed with `fast`
    /// unless one of them needs `slow` (a branch per block, not per element,
    /// so both forms vectorise and the rare blocks pay for `slow`).
    ///
    /// # Safety
    /// As [`map1`].
    pub unsafe fn map1_tiered[T: Copy, U: Copy, F: Fn(T) -> U, G: Fn(T) -> U, P: Fn(T) -> bool](
        n: usize, src: *const T, ss: isize, dst: *mut U, ds: isize, fast: F, slow: G, needs_slow: P
    ) {
        unsafe {
            if ss == 1 && ds == 1 {
                let mut i = 0;
                while i + 16 <= n {
                    let mut any = false;
                    for j in 0..16 {
                        any |= needs_slow(*src.add(i + j));
                    }
                    // Element j is read before it is written, so in-place is fine.
                    if any {
                        for j in 0..16 {
                            *dst.add(i + j) = slow(*src.add(i + j));
                        }
                    } else {
                        for j in 0..16 {
                            *dst.add(i + j) = fast(*src.add(i + j));
                        }
                    }
                    i += 16;
                }
                for j in i..n {
                    *dst.add(j) = slow(*src.add(j));
                }
            } else {
                for i in 0..n as isize {
                    let x = *src.offset(i * ss);
                    *dst.offset(i * ds) = if needs_slow(x) { slow(x) } else { fast(x) };
                }
            }
        }
    }
}

multiversion! {
    /// `(d0[i], d1[i]) = f(src[i])` for `i < n`, all contiguous: one pass
    /// for two results that share their work (`math::sigmoid_tanh`).
    ///
    /// # Safety
    /// `n` elements must be valid at each pointer; `d0` and `d1` must not
    /// overlap each other, and may each be `src` itself (in place) or
    /// disjoint from it.
    pub unsafe fn map1x2[T: Copy, U: Copy, F: Fn(T) -> (U, U)](
        n: usize, src: *const T, d0: *mut U, d1: *mut U, f: F
    ) {
        unsafe {
            for i in 0..n {
                let (a, b) = f(*src.add(i));
                *d0.add(i) = a;
                *d1.add(i) = b;
            }
        }
    }
}

multiversion! {
    /// `dst[i] = f(a[i], b[i])` over strided operands (strides in elements).
    ///
    /// # Safety
    /// As [`map1`].
    pub unsafe fn map2[A: Copy, B: Copy, U: Copy, F: Fn(A, B) -> U](
        n: usize, a: *const A, sa: isize, b: *const B, sb: isize, dst: *mut U, ds: isize, f: F
    ) {
        unsafe {
            if ds == 1 && sa == 1 && sb == 1 && in_place(a, dst) {
                // Note [In-place loops vectorise]
                let p = dst as *const A;
                for i in 0..n {
                    *dst.add(i) = f(*p.add(i), *b.add(i));
                }
            } else if ds == 1 && sa == 1 && sb == 1 {
                for i in 0..n {
                    *dst.add(i) = f(*a.add(i), *b.add(i));
                }
            } else if ds == 1 && sa == 1 && sb == 0 && in_place(a, dst) {
                let bv = *b;
                let p = dst as *const A;
                for i in 0..n {
                    *dst.add(i) = f(*p.add(i), bv);
                }
            } else if ds == 1 && sa == 1 && sb == 0 {
                let bv = *b;
                for i in 0..n {
                    *dst.add(i) = f(*a.add(i), bv);
                }
            } else if ds == 1 && sa == 0 && sb == 1 {
                let av = *a;
                for i in 0..n {
                    *dst.add(i) = f(av, *b.add(i));
                }
            } else {
                for i in 0..n as isize {
                    *dst.offset(i * ds) = f(*a.offset(i * sa), *b.offset(i * sb));
                }
            }
        }
    }
}

multiversion! {
    /// `dst[i] = f(a[i], b[i], c[i])` over strided operands (strides in elements).
    ///
    /// # Safety
    /// As [`map1`].
    pub unsafe fn map3[A: Copy, B: Copy, C: Copy, U: Copy, F: Fn(A, B, C) -> U](
        n: usize, a: *const A, sa: isize, b: *const B, sb: isize, c: *const C, sc: isize,
        dst: *mut U, ds: isize, f: F
    ) {
        unsafe {
            if ds == 1 && sa == 1 && sb == 1 && sc == 1 && in_place(a, dst) {
                // Note [In-place loops vectorise]
                let p = dst as *const A;
                for i in 0..n {
                    *dst.add(i) = f(*p.add(i), *b.add(i), *c.add(i));
                }
            } else if ds == 1 && sa == 1 && sb == 1 && sc == 1 {
                for i in 0..n {
                    *dst.add(i) = f(*a.add(i), *b.add(i), *c.add(i));
                }
            } else if ds == 1 && sa == 1 && sb == 1 && sc == 0 {
                // `where(cond, x, scalar)`: ReLU's backward, masked fills
                let cv = *c;
                for i in 0..n {
                    *dst.add(i) = f(*a.add(i), *b.add(i), cv);
                }
            } else if ds == 1 && sa == 1 && sb == 0 && sc == 1 {
                let bv = *b;
                for i in 0..n {
                    *dst.add(i) = f(*a.add(i), bv, *c.add(i));
                }
            } else {
                for i in 0..n as isize {
                    *dst.offset(i * ds) = f(*a.offset(i * sa), *b.offset(i * sb), *c.offset(i * sc));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_loops_match_the_out_of_place_ones() {
        // Note [In-place loops vectorise]: dst == src takes its own loop
        let n = 1003; // not a multiple of any vector width
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 100.0).collect();
        let y: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32).collect();
        let two = [2.0f32];
        let mut want = vec![0.0f32; n];
        let mut got = x.clone();
        unsafe {
            map1(n, x.as_ptr(), 1, want.as_mut_ptr(), 1, |v: f32| v.max(0.0));
            map1(n, got.as_ptr(), 1, got.as_mut_ptr(), 1, |v: f32| v.max(0.0));
        }
        assert_eq!(got, want);
        let mut got = x.clone();
        unsafe {
            map2(
                n,
                x.as_ptr(),
                1,
                two.as_ptr(),
                0,
                want.as_mut_ptr(),
                1,
                |a: f32, b: f32| a / b,
            );
            map2(
                n,
                got.as_ptr(),
                1,
                two.as_ptr(),
                0,
                got.as_mut_ptr(),
                1,
                |a: f32, b: f32| a / b,
            );
        }
        assert_eq!(got, want);
        let mut got = x.clone();
        unsafe {
            map2(
                n,
                x.as_ptr(),
                1,
                y.as_ptr(),
                1,
                want.as_mut_ptr(),
                1,
                |a: f32, b: f32| a - b,
            );
            map2(
                n,
                got.as_ptr(),
                1,
                y.as_ptr(),
                1,
                got.as_mut_ptr(),
                1,
                |a: f32, b: f32| a - b,
            );
        }
        assert_eq!(got, want);
        let mut got = x.clone();
        let fma = |a: f32, b: f32, c: f32| a + b * c;
        unsafe {
            map3(
                n,
                x.as_ptr(),
                1,
                y.as_ptr(),
                1,
                y.as_ptr(),
                1,
                want.as_mut_ptr(),
                1,
                fma,
            );
            map3(
                n,
                got.as_ptr(),
                1,
                y.as_ptr(),
                1,
                y.as_ptr(),
                1,
                got.as_mut_ptr(),
                1,
                fma,
            );
        }
        assert_eq!(got, want);
        assert_eq!(want[4], -99.0 + 25.0);
    }

    #[test]
    fn map3_broadcast_scalars_match_the_strided_loop() {
        // c (then b) a broadcast scalar: the fast paths against the same
        // operands walked with explicit strides
        let n = 37;
        let cond: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 4.0).collect();
        let s = [-7.0f32];
        let pick = |c: bool, a: f32, b: f32| if c { a } else { b };
        let mut fast = vec![0.0f32; n];
        let mut want = vec![0.0f32; n];
        unsafe {
            map3(
                n,
                cond.as_ptr(),
                1,
                x.as_ptr(),
                1,
                s.as_ptr(),
                0,
                fast.as_mut_ptr(),
                1,
                pick,
            );
        }
        for i in 0..n {
            want[i] = if cond[i] { x[i] } else { -7.0 };
        }
        assert_eq!(fast, want);
        unsafe {
            map3(
                n,
                cond.as_ptr(),
                1,
                s.as_ptr(),
                0,
                x.as_ptr(),
                1,
                fast.as_mut_ptr(),
                1,
                pick,
            );
        }
        for i in 0..n {
            want[i] = if cond[i] { -7.0 } else { x[i] };
        }
        assert_eq!(fast, want);
    }

    #[test]
    fn map1_tiered_recomputes_exactly_the_blocks_that_need_it() {
        // 40 inputs: blocks [0,16) and [16,32), tail [32,40).
        let mut x = vec![1.0f32; 40];
        x[20] = -1.0;
        let fast = |v: f32| v * 10.0;
        let slow = |v: f32| v * 100.0;
        let mut y = vec![0.0f32; 40];
        unsafe {
            map1_tiered(40, x.as_ptr(), 1, y.as_mut_ptr(), 1, fast, slow, |v| {
                v < 0.0
            })
        };
        let want: Vec<f32> = (0..40)
            .map(|i| {
                if (16..32).contains(&i) || i >= 32 {
                    x[i] * 100.0
                } else {
                    x[i] * 10.0
                }
            })
            .collect();
        assert_eq!(y, want);
        // in place, and strided (every element decided on its own)
        let mut z = x.clone();
        let p = z.as_mut_ptr();
        unsafe { map1_tiered(40, p, 1, p, 1, fast, slow, |v| v < 0.0) };
        assert_eq!(z, want);
        let mut s = vec![0.0f32; 20];
        unsafe {
            map1_tiered(20, x.as_ptr(), 2, s.as_mut_ptr(), 1, fast, slow, |v| {
                v < 0.0
            })
        };
        let want: Vec<f32> = (0..20)
            .map(|i| if i == 10 { -100.0 } else { 10.0 })
            .collect();
        assert_eq!(s, want);
    }
}
