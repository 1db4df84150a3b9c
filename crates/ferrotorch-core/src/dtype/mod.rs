//! Element types (`torch.dtype`), the default float dtype, and type promotion.

mod complex;
mod element;
mod promote;

pub use complex::{Complex, Complex128, Complex32, Complex64};
pub use element::{Element, FloatElem, IntElem};
pub use promote::{default_complex_dtype, promote_types, result_type, ResultTypeArg};

use crate::error::Result;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// A tensor element type, as `torch.dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DType {
    /// `torch.bool`
    Bool,
    /// `torch.uint8`
    U8,
    /// `torch.int8`
    I8,
    /// `torch.int16`
    I16,
    /// `torch.int32`
    I32,
    /// `torch.int64` (`torch.long`)
    I64,
    /// `torch.float16` (`torch.half`)
    F16,
    /// `torch.bfloat16`
    BF16,
    /// `torch.float32` (`torch.float`)
    F32,
    /// `torch.float64` (`torch.double`)
    F64,
    /// `torch.complex32` (`torch.chalf`): two f16s. As in torch, its
    /// support is partial: storage, casts, views and elementwise arithmetic
    /// (Note [complex32]).
    C32,
    /// `torch.complex64` (`torch.cfloat`): two f32s.
    C64,
    /// `torch.complex128` (`torch.cdouble`): two f64s.
    C128,
}

impl DType {
    /// Every dtype, in promotion-lattice order.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C32,
        DType::C64,
        DType::C128,
    ];

    /// Largest finite value of a floating dtype (`torch.finfo(dtype).max`);
    /// `None` for integer and bool dtypes.
    pub fn finite_max(self) -> Option<f64> {
        match self {
            DType::F16 => Some(65504.0),
            DType::BF16 => Some(3.389_531_389_251_535_5e38),
            DType::F32 => Some(f32::MAX as f64),
            DType::F64 => Some(f64::MAX),
            _ => None,
        }
    }

    /// Machine epsilon of a floating dtype (`torch.finfo(dtype).eps`);
    /// `None` for integer and bool dtypes.
    pub fn eps(self) -> Option<f64> {
        match self {
            DType::F16 => Some(0.000_976_562_5),
            DType::BF16 => Some(0.007_812_5),
            DType::F32 => Some(f32::EPSILON as f64),
            DType::F64 => Some(f64::EPSILON),
            _ => None,
        }
    }

    /// Bytes per element (`element_size()`).
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 | DType::C32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// `dtype.is_floating_point`.
    pub const fn is_floating_point(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Whether tensors of this dtype can require gradients (floating or
    /// complex).
    pub const fn is_differentiable(self) -> bool {
        self.is_floating_point() || self.is_complex()
    }

    /// c10's `ScalarType` number of this dtype (`torch.float32` is 6): how
    /// TorchScript code writes a dtype and the C ABI's `FtDType` codes.
    pub const fn scalar_type(self) -> i64 {
        match self {
            DType::U8 => 0,
            DType::I8 => 1,
            DType::I16 => 2,
            DType::I32 => 3,
            DType::I64 => 4,
            DType::F16 => 5,
            DType::F32 => 6,
            DType::F64 => 7,
            DType::C32 => 8,
            DType::C64 => 9,
            DType::C128 => 10,
            DType::Bool => 11,
            DType::BF16 => 15,
        }
    }

    /// The dtype of a c10 `ScalarType` number, if ferrotorch has it.
    pub fn from_scalar_type(n: i64) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.scalar_type() == n)
    }

    /// `dtype.is_complex`.
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::C32 | DType::C64 | DType::C128)
    }

    /// The real dtype of a complex dtype's parts (`complex64` → `float32`);
    /// other dtypes map to themselves (`torch.real`'s result dtype).
    pub const fn to_real(self) -> DType {
        match self {
            DType::C32 => DType::F16,
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex dtype with parts of this float dtype (`float64` →
    /// `complex128`, `float16` → `complex32`; `bfloat16` and `float32` →
    /// `complex64`, as c10's `toComplexType`); complex dtypes map to
    /// themselves, others to `None`.
    pub const fn to_complex(self) -> Option<DType> {
        match self {
            DType::F16 | DType::C32 => Some(DType::C32),
            DType::BF16 | DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            _ => None,
        }
    }

    /// True for integer dtypes, and for bool when `include_bool`
    /// (c10's `isIntegralType`).
    pub const fn is_integral(self, include_bool: bool) -> bool {
        match self {
            DType::Bool => include_bool,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => true,
            _ => false,
        }
    }

    /// `dtype.is_signed`.
    pub const fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8)
    }

    /// The name after `torch.`: `float32`, `int64`, `bool`, ...
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C32 => "complex32",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// Parse a torch dtype name (`float32`, `float`, `torch.long`, `half`, ...).
    pub fn from_name(s: &str) -> Option<DType> {
        let s = s.strip_prefix("torch.").unwrap_or(s);
        Some(match s {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            "complex32" | "chalf" => DType::C32,
            "complex64" | "cfloat" => DType::C64,
            "complex128" | "cdouble" => DType::C128,
            _ => return None,
        })
    }

    /// `Float`, `Long`, ... as PyTorch names dtypes in cast errors.
    pub fn name_title(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C32 => "ComplexHalf",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "torch.{}", self.name())
    }
}

static DEFAULT_DTYPE: AtomicU8 = AtomicU8::new(DType::F32 as u8);

/// The dtype that float data and float scalars get (`torch.get_default_dtype`).
pub fn get_default_dtype() -> DType {
    DType::ALL[DEFAULT_DTYPE.load(Ordering::Relaxed) as usize]
}

/// Set the default float dtype (`torch.set_default_dtype`). Only floating
/// dtypes are accepted, as in PyTorch.
pub fn set_default_dtype(d: DType) -> Result<()> {
    crate::ensure!(
        d.is_floating_point(),
        Type,
        "only floating-point types are supported as the default type (got {d})"
    );
    DEFAULT_DTYPE.store(d as u8, Ordering::Relaxed);
    Ok(())
}

/// Run `$body` with `$T` bound to the Rust type of a runtime [`DType`].
///
/// `dispatch_dtype!(d, T => body)` covers every dtype;
/// `dispatch_dtype!(float d, T => body)` only floating dtypes (others → `$err`).
#[macro_export]
macro_rules! dispatch_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::C32 => {
                type $T = $crate::dtype::Complex32;
                $body
            }
            $crate::DType::C64 => {
                type $T = $crate::dtype::Complex64;
                $body
            }
            $crate::DType::C128 => {
                type $T = $crate::dtype::Complex128;
                $body
            }
        }
    };
}
