//! Integer number theory and floating-point representation: `gcd`, `lcm`,
//! `nextafter`, `frexp`.

use super::binary::{prepare, Operand, Promote};
use super::iter::{empty_like_layout, map_binary};
use crate::autograd::{needs_grad, record1};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

fn gcd_i64(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

fn lcm_i64(a: i64, b: i64) -> i64 {
    let g = gcd_i64(a, b);
    if g == 0 {
        0
    } else {
        (a / g).wrapping_mul(b).wrapping_abs()
    }
}

/// An integer-only binary op in the promoted dtype, broadcast.
fn int_binary(op: &str, a: &Tensor, b: &Tensor, f: fn(i64, i64) -> i64) -> Result<Tensor> {
    let (dt, a, b, shape) = prepare(op, a, &Operand::Tensor(b.clone()), Promote::Same)?;
    crate::ensure!(
        dt.is_integral(false),
        NotImplemented,
        "\"{op}_cpu\" not implemented for '{}'",
        dt.name_title()
    );
    let out = empty_like_layout(&shape, dt, None)?;
    macro_rules! run {
        ($t:ty) => {
            map_binary::<$t, $t, $t>(&a, &b, &out, |x, y| f(x as i64, y as i64) as $t)
        };
    }
    match dt {
        DType::I64 => run!(i64),
        DType::I32 => run!(i32),
        DType::I16 => run!(i16),
        DType::I8 => run!(i8),
        _ => run!(u8),
    }
    Ok(out)
}

/// The next `f64` after `x` towards `y` (C's `nextafter`).
fn next_f64(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == y {
        return y;
    }
    if x == 0.0 {
        return f64::from_bits(1).copysign(y);
    }
    let b = x.to_bits();
    f64::from_bits(if (y > x) == (x > 0.0) { b + 1 } else { b - 1 })
}

/// The next `f32` after `x` towards `y`.
fn next_f32(x: f32, y: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        return f32::NAN;
    }
    if x == y {
        return y;
    }
    if x == 0.0 {
        return f32::from_bits(1).copysign(y);
    }
    let b = x.to_bits();
    f32::from_bits(if (y > x) == (x > 0.0) { b + 1 } else { b - 1 })
}

/// `x = m · 2^e` with `|m|` in `[0.5, 1)` (C's `frexp`); zero, ±inf and
/// NaN give themselves and exponent 0.
fn frexp_f64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (x, shift) = if x.abs() < f64::MIN_POSITIVE {
        (x * 2f64.powi(64), 64)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, e - shift)
}

crate::ops! {
    register = register;
    /// `torch.gcd`: the greatest common divisor, elementwise (integers).
    #[op = "gcd(Tensor self, Tensor other) -> Tensor"]
    pub fn gcd(&self, other: &Tensor) -> Result<Tensor> {
        int_binary("gcd", self, other, gcd_i64)
    }

    /// `torch.lcm`: the least common multiple, elementwise (integers).
    #[op = "lcm(Tensor self, Tensor other) -> Tensor"]
    pub fn lcm(&self, other: &Tensor) -> Result<Tensor> {
        int_binary("lcm", self, other, lcm_i64)
    }

    /// `torch.nextafter`: the next representable value after `self`
    /// towards `other`.
    #[op = "nextafter(Tensor self, Tensor other) -> Tensor"]
    pub fn nextafter(&self, other: &Tensor) -> Result<Tensor> {
        let (dt, a, b, shape) = prepare(
            "nextafter",
            self,
            &Operand::Tensor(other.clone()),
            Promote::Same,
        )?;
        let out = empty_like_layout(&shape, dt, None)?;
        match dt {
            DType::F64 => map_binary::<f64, f64, f64>(&a, &b, &out, next_f64),
            DType::F32 => map_binary::<f32, f32, f32>(&a, &b, &out, next_f32),
            d => crate::bail!(
                NotImplemented,
                "\"nextafter_cpu\" not implemented for '{}'",
                d.name_title()
            ),
        }
        // torch 2.15's derivative: the step is locally constant, so `self`
        // gets the gradient except where it equals `other` (the result is
        // then `other`), and `other` zeros
        record1(
            "NextafterBackward0",
            &[self, other],
            out,
            smallvec::smallvec![
                crate::autograd::node::Save::Tensor(self),
                crate::autograd::node::Save::Tensor(other)
            ],
            |c| {
                let g = c.grad();
                let at = c.saved(0).eq(c.saved(1))?;
                Ok(smallvec::smallvec![
                    Some(g.masked_fill(&at, 0.0)?),
                    Some(g.zeros_like()?)
                ])
            },
        )
    }

    /// `torch.frexp`: mantissas in `[0.5, 1)` (the input's dtype) and
    /// int32 exponents with `self = mantissa · 2^exponent`.
    #[op = "frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)"]
    pub fn frexp(&self) -> Result<(Tensor, Tensor)> {
        crate::ensure!(
            self.is_floating_point(),
            Runtime,
            "torch.frexp() only supports floating-point dtypes"
        );
        let x = self.detach();
        // one pass gives both halves
        let wide = x.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?;
        let (m, e): (Vec<f64>, Vec<i32>) = wide.into_iter().map(frexp_f64).unzip();
        let m = Tensor::from_vec(m, x.shape())?.to_dtype(x.dtype())?;
        let e = Tensor::from_vec(e, x.shape())?;
        let m = if needs_grad(&[self]) {
            let scale = e.to_dtype(x.dtype())?.neg()?.exp2()?;
            record1(
                "FrexpBackward0",
                &[self],
                m,
                smallvec::smallvec![],
                move |c| Ok(smallvec::smallvec![Some(c.grad().mul(&scale)?)]),
            )?
        } else {
            m
        };
        Ok((m, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_kernels_match_c() {
        assert_eq!(gcd_i64(-18, 12), 6);
        assert_eq!(gcd_i64(0, 0), 0);
        assert_eq!(lcm_i64(-6, 4), 12);
        assert_eq!(lcm_i64(0, 5), 0);
        assert_eq!(next_f64(1.0, 2.0), 1.0 + f64::EPSILON);
        assert_eq!(next_f32(0.0, -1.0), -f32::from_bits(1));
        assert_eq!(frexp_f64(-3.5), (-0.875, 2));
        assert_eq!(frexp_f64(1e-310).1, -1029);
        let (m, e) = frexp_f64(1e-310);
        assert_eq!(m * 2f64.powi(e + 1000) * 2f64.powi(-1000), 1e-310);
        assert_eq!(frexp_f64(f64::INFINITY), (f64::INFINITY, 0));
    }
}
