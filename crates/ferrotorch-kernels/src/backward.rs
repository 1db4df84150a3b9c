//! Elementwise backward formulas of activations as their own loops.
//!
//! # Note [Kernels, not closures, for long formulas]
//! A generic loop (`simd::map2`) takes the formula as a closure or fn item
//! and relies on LLVM inlining it into the loop's AVX-512/AVX2 copy. A long
//! formula (erf, exp and a dozen FMAs) is not inlined: it stays out of line
//! in its `Fn::call` shim, compiled for baseline x86-64, where every
//! `mul_add` is a call into libm's `fmaf` (the exact GELU backward ran at
//! 60 ns per element instead of ~1). Such formulas get a loop of their own
//! here, whose body names the `#[inline(always)]` formula directly, so
//! every multiversioned copy compiles it for its CPU level.

use crate::parallel::parallel_for;

macro_rules! formula_loop {
    ($(#[$m:meta])* $name:ident = $f:path) => {
        crate::multiversion! {
            $(#[$m])*
            ///
            /// # Safety
            /// `g`, `x` and `out` must each hold `n` contiguous `f32`.
            pub unsafe fn $name[](n: usize, g: *const f32, x: *const f32, out: *mut f32) {
                unsafe {
                    for i in 0..n {
                        *out.add(i) = $f(*g.add(i), *x.add(i));
                    }
                }
            }
        }
    };
}

formula_loop!(
    /// `out = g · gelu'(x)` (exact form), [`crate::math::gelu_backward`].
    gelu_backward_raw = crate::math::gelu_backward
);
formula_loop!(
    /// `out = g · gelu_tanh'(x)`, [`crate::math::gelu_tanh_backward`].
    gelu_tanh_backward_raw = crate::math::gelu_tanh_backward
);

/// `out[i] = g[i] · gelu'(x[i])` (the tanh approximation's with `tanh`),
/// split over the intra-op threads for large inputs.
///
/// # Panics
/// If the slices differ in length.
pub fn gelu_backward(g: &[f32], x: &[f32], out: &mut [f32], tanh: bool) {
    assert!(
        g.len() == x.len() && x.len() == out.len(),
        "gelu_backward: lengths differ"
    );
    const GRAIN: usize = 1 << 14;
    let (gp, xp, op) = (
        g.as_ptr() as usize,
        x.as_ptr() as usize,
        out.as_mut_ptr() as usize,
    );
    parallel_for(out.len(), GRAIN, |r| {
        // SAFETY: `r` lies within the three slices, whose lengths are
        // equal; parallel_for hands out disjoint ranges, so no two tasks
        // write the same output element.
        unsafe {
            let (g, x, o) = (
                (gp as *const f32).add(r.start),
                (xp as *const f32).add(r.start),
                (op as *mut f32).add(r.start),
            );
            if tanh {
                gelu_tanh_backward_raw(r.len(), g, x, o)
            } else {
                gelu_backward_raw(r.len(), g, x, o)
            }
        }
    });
}
