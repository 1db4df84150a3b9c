//! The complex element types behind `torch.complex32`, `torch.complex64`
//! and `torch.complex128`.
//!
//! # Note [Complex numbers]
//! A complex tensor stores `(re, im)` pairs, interleaved, as C, NumPy and
//! PyTorch do; sizes and strides count complex elements. `view_as_real`
//! reinterprets the same storage as a real tensor with a trailing size-2
//! dimension, and most complex arithmetic is written on that real view
//! (`native/complex/`), so complex ops get autograd from the real ops they
//! are made of: the gradient of a real loss `L` with respect to `z = x + iy`
//! comes out as `∂L/∂x + i ∂L/∂y`, which is PyTorch's convention (the
//! conjugate Wirtinger derivative, times two). Movement ops (copies, views,
//! indexing, `cat`) are generic over the element type and take complex
//! elements as they are. Ops that have no complex meaning (ordering,
//! `max`, integer ops) refuse complex inputs; see Note [Complex support is
//! opt-in].

use super::{DType, Element};
use std::fmt;

/// A complex number with parts of type `T`, laid out as `[re, im]`
/// (`repr(C)`, as `std::complex` and NumPy).
#[derive(Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub struct Complex<T> {
    /// Real part.
    pub re: T,
    /// Imaginary part.
    pub im: T,
}

/// `torch.complex32`: two `f16`s.
#[allow(non_camel_case_types)]
pub type Complex32 = Complex<half::f16>;
/// `torch.complex64`: two `f32`s.
#[allow(non_camel_case_types)]
pub type Complex64 = Complex<f32>;
/// `torch.complex128`: two `f64`s.
#[allow(non_camel_case_types)]
pub type Complex128 = Complex<f64>;

impl<T> Complex<T> {
    /// `re + i·im`.
    pub const fn new(re: T, im: T) -> Self {
        Complex { re, im }
    }
}

impl<T: fmt::Debug> fmt::Debug for Complex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:?}+{:?}j)", self.re, self.im)
    }
}

/// Lexicographic order (real part, then imaginary part), as NumPy sorts
/// complex numbers. Ops that PyTorch does not define on complex numbers
/// (`max`, `sort`, comparisons) refuse complex tensors before they get here.
impl<T: PartialOrd> PartialOrd for Complex<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        match self.re.partial_cmp(&o.re)? {
            std::cmp::Ordering::Equal => self.im.partial_cmp(&o.im),
            ord => Some(ord),
        }
    }
}

macro_rules! complex_element {
    ($d:ident, $p:ty, $from:expr, $to:expr) => {
        impl Element for Complex<$p> {
            const DTYPE: DType = DType::$d;
            const IS_FLOAT: bool = true;
            const IS_COMPLEX: bool = true;
            #[inline(always)]
            fn zero() -> Self {
                Complex::new($from(0.0), $from(0.0))
            }
            #[inline(always)]
            fn one() -> Self {
                Complex::new($from(1.0), $from(0.0))
            }
            /// The real part (a complex → real cast drops the imaginary
            /// part, as PyTorch's does).
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self.re)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                Complex::new($from(v), $from(0.0))
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                $to(self.re) as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                Complex::new($from(v as f64), $from(0.0))
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                $to(self.re) != 0.0 || $to(self.im) != 0.0
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                Complex::new($from(b as u8 as f64), $from(0.0))
            }
            #[inline(always)]
            fn to_complex(self) -> (f64, f64) {
                ($to(self.re), $to(self.im))
            }
            #[inline(always)]
            fn from_complex(re: f64, im: f64) -> Self {
                Complex::new($from(re), $from(im))
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $to(self.re).is_nan() || $to(self.im).is_nan()
            }
        }
    };
}
complex_element!(C32, half::f16, half::f16::from_f64, half::f16::to_f64);
complex_element!(C64, f32, |v: f64| v as f32, |x: f32| x as f64);
complex_element!(C128, f64, |v: f64| v, |x: f64| x);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_keep_or_drop_the_imaginary_part_as_torch() {
        let z = Complex128::new(1.5, -2.0);
        let w: Complex64 = z.cast();
        assert_eq!(w, Complex64::new(1.5, -2.0));
        let r: f32 = z.cast();
        assert_eq!(r, 1.5);
        let b: bool = Complex64::new(0.0, 1.0).cast();
        assert!(b);
        let c: Complex128 = 3i64.cast();
        assert_eq!(c, Complex128::new(3.0, 0.0));
        assert_eq!(std::mem::size_of::<Complex64>(), 8);
        assert_eq!(std::mem::size_of::<Complex128>(), 16);
        assert_eq!(std::mem::size_of::<Complex32>(), 4);
        let h: Complex32 = Complex64::new(0.1, 65504.0).cast();
        assert_eq!(h.re, half::f16::from_f32(0.1));
        assert_eq!(h.im.to_f32(), 65504.0);
        assert!(!h.is_nan());
    }
}
