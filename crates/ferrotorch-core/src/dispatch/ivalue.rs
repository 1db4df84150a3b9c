//! Boxed values (`c10::IValue`): what the dispatcher passes to kernels when
//! an op is called by name.

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::scalar::Scalar;
use crate::tensor::Tensor;

/// A dynamically typed argument or result.
#[derive(Clone)]
pub enum IValue {
    /// `None`.
    None,
    /// A tensor.
    Tensor(Tensor),
    /// A bool.
    Bool(bool),
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A complex number `(re, im)`.
    Complex(f64, f64),
    /// A string.
    Str(String),
    /// A dtype (`ScalarType`).
    DType(DType),
    /// A list of ints.
    IntList(Vec<i64>),
    /// A list of floats.
    FloatList(Vec<f64>),
    /// A list of bools.
    BoolList(Vec<bool>),
    /// A list of tensors.
    TensorList(Vec<Tensor>),
    /// A list of optional tensors (advanced indexing).
    OptTensorList(Vec<Option<Tensor>>),
    /// A tuple of values (multiple returns).
    Tuple(Vec<IValue>),
    /// A random number generator (`Generator`), shared with the caller.
    Generator(crate::native::random::Generator),
    /// An `int` argument computed from a traced value (Note [Traced
    /// sizes]): the 0-dim integer tensor it came from.
    SymInt(Tensor),
    /// An `int[]` argument some of whose elements came from traced values:
    /// each element an [`IValue::Int`] or a 0-dim integer
    /// [`IValue::Tensor`] (Note [Traced sizes]).
    SymIntList(Vec<IValue>),
    /// A `Scalar` argument computed from a traced value: the 0-dim tensor
    /// it came from (recorded as `aten::ScalarImplicit`; Note [Traced
    /// sizes]).
    SymScalar(Tensor),
    /// An object of a custom class (Note [Custom classes]).
    Object(crate::library::ScriptObject),
}

impl std::fmt::Debug for IValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.type_name())
    }
}

impl IValue {
    /// The schema type name of this value, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            IValue::None => "None",
            IValue::Tensor(_) => "Tensor",
            IValue::Bool(_) => "bool",
            IValue::Int(_) => "int",
            IValue::Float(_) => "float",
            IValue::Complex(..) => "complex",
            IValue::Str(_) => "str",
            IValue::DType(_) => "ScalarType",
            IValue::IntList(_) => "int[]",
            IValue::FloatList(_) => "float[]",
            IValue::BoolList(_) => "bool[]",
            IValue::TensorList(_) => "Tensor[]",
            IValue::OptTensorList(_) => "Tensor?[]",
            IValue::Tuple(_) => "tuple",
            IValue::Generator(_) => "Generator",
            IValue::SymInt(_) => "SymInt",
            IValue::SymIntList(_) => "SymInt[]",
            IValue::SymScalar(_) => "Scalar",
            IValue::Object(_) => "ScriptObject",
        }
    }

    /// The tensor inside, or a TypeError.
    pub fn into_tensor(self) -> Result<Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            other => Err(Error::new(
                ErrorKind::Type,
                format!("expected a Tensor but got {}", other.type_name()),
            )),
        }
    }

    /// The tensors of a tensor list, or a TypeError.
    pub fn into_tensor_list(self) -> Result<Vec<Tensor>> {
        match self {
            IValue::TensorList(t) => Ok(t),
            other => Err(Error::new(
                ErrorKind::Type,
                format!("expected a list of Tensors but got {}", other.type_name()),
            )),
        }
    }

    /// The value with traced ints replaced by their values (what kernels
    /// see; Note [Traced sizes]).
    pub fn concrete(self) -> Result<IValue> {
        Ok(match self {
            IValue::SymInt(t) => IValue::Int(sym_value(&t)?),
            IValue::SymScalar(t) => IValue::from(t.item()?),
            IValue::SymIntList(items) => IValue::IntList(
                items
                    .iter()
                    .map(|v| match v {
                        IValue::Int(i) => Ok(*i),
                        IValue::Tensor(t) | IValue::SymInt(t) => sym_value(t),
                        other => Err(Error::new(
                            ErrorKind::Type,
                            format!("expected an int but got {}", other.type_name()),
                        )),
                    })
                    .collect::<Result<_>>()?,
            ),
            v => v,
        })
    }

    /// Whether this holds a traced int.
    pub fn is_sym(&self) -> bool {
        matches!(
            self,
            IValue::SymInt(_) | IValue::SymIntList(_) | IValue::SymScalar(_)
        )
    }

    /// As a Scalar (bool, int or float).
    pub fn to_scalar(&self) -> Option<Scalar> {
        match self {
            IValue::Bool(b) => Some(Scalar::Bool(*b)),
            IValue::Int(i) => Some(Scalar::Int(*i)),
            IValue::Float(x) => Some(Scalar::Float(*x)),
            IValue::Complex(re, im) => Some(Scalar::Complex(*re, *im)),
            _ => None,
        }
    }
}

/// Whether `t` can stand for an int (a 0-dim integer tensor, as
/// `x.size(0)` gives while tracing).
pub fn is_int_tensor(t: &Tensor) -> bool {
    t.dim() == 0 && !t.is_floating_point() && t.dtype() != DType::Bool
}

/// The int a 0-dim integer tensor holds.
pub(crate) fn sym_value(t: &Tensor) -> Result<i64> {
    crate::ensure!(
        is_int_tensor(t),
        Type,
        "expected an int or a 0-dim integer tensor but got a {} tensor of shape {:?}",
        t.dtype().name_title(),
        t.shape()
    );
    match t.item()? {
        Scalar::Int(i) => Ok(i),
        other => Ok(other.to_f64() as i64),
    }
}

impl From<Tensor> for IValue {
    fn from(t: Tensor) -> IValue {
        IValue::Tensor(t)
    }
}
impl From<&[i64]> for IValue {
    fn from(v: &[i64]) -> IValue {
        IValue::IntList(v.to_vec())
    }
}
impl From<&[usize]> for IValue {
    fn from(v: &[usize]) -> IValue {
        IValue::IntList(v.iter().map(|&x| x as i64).collect())
    }
}
impl<T: Into<IValue>> From<Option<T>> for IValue {
    fn from(v: Option<T>) -> IValue {
        v.map_or(IValue::None, Into::into)
    }
}
impl From<&Tensor> for IValue {
    fn from(t: &Tensor) -> IValue {
        IValue::Tensor(t.clone())
    }
}
impl From<Scalar> for IValue {
    fn from(s: Scalar) -> IValue {
        match s {
            Scalar::Bool(b) => IValue::Bool(b),
            Scalar::Int(i) => IValue::Int(i),
            Scalar::Float(x) => IValue::Float(x),
            Scalar::Complex(re, im) => IValue::Complex(re, im),
        }
    }
}
impl From<i64> for IValue {
    fn from(v: i64) -> IValue {
        IValue::Int(v)
    }
}
impl From<crate::native::binary::Operand> for IValue {
    fn from(o: crate::native::binary::Operand) -> IValue {
        o.boxed()
    }
}
impl From<&[Tensor]> for IValue {
    fn from(v: &[Tensor]) -> IValue {
        IValue::TensorList(v.to_vec())
    }
}
impl From<f64> for IValue {
    fn from(v: f64) -> IValue {
        IValue::Float(v)
    }
}
impl From<bool> for IValue {
    fn from(v: bool) -> IValue {
        IValue::Bool(v)
    }
}
impl From<Vec<i64>> for IValue {
    fn from(v: Vec<i64>) -> IValue {
        IValue::IntList(v)
    }
}
impl From<Vec<Tensor>> for IValue {
    fn from(v: Vec<Tensor>) -> IValue {
        IValue::TensorList(v)
    }
}
impl From<crate::library::ScriptObject> for IValue {
    fn from(o: crate::library::ScriptObject) -> IValue {
        IValue::Object(o)
    }
}
impl From<crate::native::random::Generator> for IValue {
    fn from(g: crate::native::random::Generator) -> IValue {
        IValue::Generator(g)
    }
}
impl From<DType> for IValue {
    fn from(v: DType) -> IValue {
        IValue::DType(v)
    }
}
impl From<&str> for IValue {
    fn from(v: &str) -> IValue {
        IValue::Str(v.to_string())
    }
}
impl<A: Into<IValue>, B: Into<IValue>> From<(A, B)> for IValue {
    fn from((a, b): (A, B)) -> IValue {
        IValue::Tuple(vec![a.into(), b.into()])
    }
}
