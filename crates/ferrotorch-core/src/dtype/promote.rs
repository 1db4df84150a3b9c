//! Type promotion, exactly as `torch.promote_types` and `torch.result_type`.
//!
//! # Note [Type promotion]
//! Operands fall in three priority groups: tensors with at least one
//! dimension, zero-dimensional tensors, and wrapped numbers (Rust scalars,
//! Python numbers). Each group is promoted on its own; a lower group only
//! matters when it is of a higher *category* (bool < integer < float) than
//! every group above it. Wrapped float numbers count as the default dtype.
//! So `int32_tensor + 2.5` is float32, `uint8_tensor + 1000` stays uint8,
//! and `float16_tensor + float64_zero_dim` stays float16.

use super::{get_default_dtype, DType};
use crate::scalar::Scalar;

/// `torch.promote_types(a, b)`.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    if a == Bool {
        return b;
    }
    if b == Bool {
        return a;
    }
    if a.is_complex() || b.is_complex() {
        // complex wins; its parts are the promotion of both sides' real
        // types (float64 + complex64 → complex128, complex32 + bfloat16 →
        // complex64, complex32 + int64 → complex32, as torch).
        let parts = promote_types(a.to_real(), b.to_real());
        return parts.to_complex().unwrap_or(C64);
    }
    match (a.is_floating_point(), b.is_floating_point()) {
        (true, false) => a,
        (false, true) => b,
        (true, true) => {
            if matches!((a, b), (F16, BF16) | (BF16, F16)) {
                F32
            } else if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
        (false, false) => {
            // integers: uint8 with a signed type needs a wider signed type
            let (u, s) = match (a, b) {
                (U8, s) | (s, U8) => (true, s),
                _ => (false, a),
            };
            if u {
                match s {
                    I8 | I16 => I16,
                    other => other,
                }
            } else if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
    }
}

/// One operand of [`result_type`].
#[derive(Clone, Copy, Debug)]
pub enum ResultTypeArg {
    /// A tensor: its dtype and its number of dimensions.
    Tensor(DType, usize),
    /// A wrapped number (Rust or Python scalar).
    Scalar(Scalar),
}

#[derive(Clone, Copy)]
enum Cat {
    Bool,
    Int,
    Float,
    Complex,
}

fn category(d: DType) -> Cat {
    if d == DType::Bool {
        Cat::Bool
    } else if d.is_complex() {
        Cat::Complex
    } else if d.is_floating_point() {
        Cat::Float
    } else {
        Cat::Int
    }
}

fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let Some(h) = higher else { return lower };
    let Some(l) = lower else { return Some(h) };
    match (category(h), category(l)) {
        (Cat::Complex, _) => Some(h),
        // c10's combine_categories: a float side keeps its width
        // (float32 tensor + complex128 0-d tensor → complex64).
        (Cat::Float, Cat::Complex) => h.to_complex(),
        (_, Cat::Complex) => Some(l),
        (Cat::Float, _) => Some(h),
        (Cat::Bool, _) | (_, Cat::Float) => Some(promote_types(h, l)),
        _ => Some(h),
    }
}

/// The dtype a Python `complex` gets: complex64, or complex128 when the
/// default dtype is float64 (as torch).
pub fn default_complex_dtype() -> DType {
    get_default_dtype().to_complex().unwrap_or(DType::C64)
}

/// `torch.result_type` over any mix of tensors and scalars. See
/// Note [Type promotion].
pub fn result_type(args: &[ResultTypeArg]) -> DType {
    let mut dim: Option<DType> = None;
    let mut zero: Option<DType> = None;
    let mut wrapped: Option<DType> = None;
    let up = |slot: &mut Option<DType>, d: DType| {
        *slot = Some(slot.map_or(d, |s| promote_types(s, d)));
    };
    for a in args {
        match *a {
            ResultTypeArg::Tensor(d, n) if n > 0 => up(&mut dim, d),
            ResultTypeArg::Tensor(d, _) => up(&mut zero, d),
            ResultTypeArg::Scalar(s) => {
                let d = match s {
                    Scalar::Bool(_) => DType::Bool,
                    Scalar::Int(_) => DType::I64,
                    Scalar::Float(_) => get_default_dtype(),
                    Scalar::Complex(..) => default_complex_dtype(),
                };
                up(&mut wrapped, d)
            }
        }
    }
    combine(dim, combine(zero, wrapped)).unwrap_or_else(get_default_dtype)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promote_table_matches_torch() {
        // Printed by tests/fixtures/gen_promote.py from torch.promote_types (row, column
        // order: bool u8 i8 i16 i32 i64 f16 bf16 f32 f64).
        let table = [
            "bool u8 i8 i16 i32 i64 f16 bf16 f32 f64",
            "u8 u8 i16 i16 i32 i64 f16 bf16 f32 f64",
            "i8 i16 i8 i16 i32 i64 f16 bf16 f32 f64",
            "i16 i16 i16 i16 i32 i64 f16 bf16 f32 f64",
            "i32 i32 i32 i32 i32 i64 f16 bf16 f32 f64",
            "i64 i64 i64 i64 i64 i64 f16 bf16 f32 f64",
            "f16 f16 f16 f16 f16 f16 f16 f32 f32 f64",
            "bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 f32 f64",
            "f32 f32 f32 f32 f32 f32 f32 f32 f32 f64",
            "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64",
        ];
        let short = |s: &str| match s {
            "bool" => Bool,
            "u8" => U8,
            "i8" => I8,
            "i16" => I16,
            "i32" => I32,
            "i64" => I64,
            "f16" => F16,
            "bf16" => BF16,
            "f32" => F32,
            "f64" => F64,
            _ => panic!("{s}"),
        };
        for (i, row) in table.iter().enumerate() {
            for (j, cell) in row.split_whitespace().enumerate() {
                assert_eq!(
                    promote_types(DType::ALL[i], DType::ALL[j]),
                    short(cell),
                    "{i} {j}"
                );
            }
        }
    }

    #[test]
    fn complex_promotion_matches_torch() {
        // torch.promote_types, torch 2.15
        assert_eq!(promote_types(C32, F32), C64);
        assert_eq!(promote_types(C32, F16), C32);
        assert_eq!(promote_types(C32, BF16), C64);
        assert_eq!(promote_types(C32, F64), C128);
        assert_eq!(promote_types(C32, I64), C32);
        assert_eq!(promote_types(C32, Bool), C32);
        assert_eq!(promote_types(F16, C64), C64);
        assert_eq!(promote_types(C32, C128), C128);
        assert_eq!(promote_types(F64, C64), C128);
        assert_eq!(promote_types(I64, C64), C64);
    }

    #[test]
    fn result_type_follows_categories() {
        use ResultTypeArg::{Scalar as S, Tensor as T};
        assert_eq!(result_type(&[T(I32, 1), S(Scalar::Float(2.5))]), F32);
        assert_eq!(result_type(&[T(U8, 1), S(Scalar::Int(1000))]), U8);
        assert_eq!(result_type(&[T(F16, 1), T(F64, 0)]), F16);
        assert_eq!(result_type(&[T(I32, 1), T(F64, 0)]), F64);
        assert_eq!(result_type(&[T(I64, 0), T(I32, 0)]), I64);
        assert_eq!(result_type(&[T(Bool, 1), S(Scalar::Int(1))]), I64);
        assert_eq!(result_type(&[T(Bool, 1), S(Scalar::Bool(true))]), Bool);
        assert_eq!(result_type(&[T(I32, 0), S(Scalar::Float(1.0))]), F32);
        assert_eq!(result_type(&[T(F64, 0), S(Scalar::Float(1.0))]), F64);
        assert_eq!(result_type(&[T(I8, 1), T(U8, 0)]), I8);
        // complex32 (torch 2.x)
        assert_eq!(result_type(&[T(F16, 1), S(Scalar::Complex(0.0, 1.0))]), C32);
        assert_eq!(result_type(&[T(F16, 1), T(C128, 0)]), C32);
        assert_eq!(result_type(&[T(C32, 0), T(F32, 1)]), C64);
        assert_eq!(result_type(&[T(C32, 0), T(I32, 1)]), C32);
        assert_eq!(result_type(&[T(C32, 1), T(F64, 1)]), C128);
    }
}
