//! Dispatcher entries of the creation ops (`zeros`, `ones`, `full`,
//! `empty`, `arange`, `linspace`, `logspace`, `eye`, the `_like` forms),
//! with torch's schemas, so bindings create tensors the way they call any
//! other op.

use super::{Tensor, TensorOptions};
use crate::device::Device;
use crate::dispatch::typed::FromArg;
use crate::dispatch::{Args, IValue, Registry, Type};
use crate::dtype::DType;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::memory_format::MemoryFormat;

/// A `Device?` argument: `"cpu"`, `"cpu:0"`, `"cuda:1"` or None.
pub(crate) struct DeviceArg(pub(crate) Option<Device>);

impl FromArg for DeviceArg {
    fn accepts(ty: &Type) -> bool {
        matches!(ty, Type::Optional(t) if matches!(&**t, Type::Opaque(n) if n == "Device"))
    }

    fn from_arg(a: &Args, i: usize) -> Result<Self> {
        Ok(DeviceArg(match a.get(i) {
            IValue::None => None,
            IValue::Str(s) => {
                let (kind, index) = s.split_once(':').unwrap_or((s.as_str(), "0"));
                let index: usize = index.parse().map_err(|_| {
                    crate::error::Error::new(
                        crate::ErrorKind::Runtime,
                        format!("Invalid device string: '{s}'"),
                    )
                })?;
                match kind {
                    "cpu" => Some(Device::Cpu),
                    "cuda" => Some(Device::Cuda(index)),
                    _ => crate::bail!(
                        Runtime,
                        "Expected one of cpu, cuda device type at start of device string: {s}"
                    ),
                }
            }
            v => crate::bail!(Type, "device must be a string, not {}", v.type_name()),
        }))
    }
}

/// A `Layout?` or `MemoryFormat?` argument: strided tensors in their
/// default format are the only kind there is, so the value is not read.
pub(crate) struct Strided;

impl FromArg for Strided {
    fn accepts(ty: &Type) -> bool {
        matches!(ty, Type::Optional(t) if matches!(&**t, Type::Opaque(n) if n == "Layout" || n == "MemoryFormat"))
    }

    fn from_arg(_: &Args, _: usize) -> Result<Self> {
        Ok(Strided)
    }
}

/// A `*_like` result in the asked `memory_format` (it already has the
/// source's layout: `preserve_format`, the default).
pub(crate) fn in_format(t: Tensor, f: Option<MemoryFormat>) -> Result<Tensor> {
    match f {
        None | Some(MemoryFormat::Preserve) => Ok(t),
        Some(f) => t.contiguous_as(f),
    }
}

/// The `{OPTS}` arguments, as one set of options.
pub(crate) fn opts(dtype: Option<DType>, device: DeviceArg) -> TensorOptions {
    TensorOptions {
        dtype,
        device: device.0,
    }
}

pub(crate) const OPTS: &str =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

/// `steps` of linspace/logspace, which must not be negative.
fn steps(op: &str, steps: i64) -> Result<usize> {
    usize::try_from(steps).map_err(|_| {
        crate::error::Error::new(
            crate::ErrorKind::Runtime,
            format!("{op}: number of steps must be non-negative"),
        )
    })
}

pub(crate) fn register_creation(r: &mut Registry) {
    type Dt = Option<DType>;
    type Pin = Option<bool>;
    r.def_typed(
        &format!("zeros(SymInt[] size, *, {OPTS}) -> Tensor"),
        |size: Vec<usize>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::zeros(&size, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!("ones(SymInt[] size, *, {OPTS}) -> Tensor"),
        |size: Vec<usize>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::ones(&size, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!("empty.memory_format(SymInt[] size, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
        // fresh memory is zeroed: "uninitialised" never exposes stale data
        |size: Vec<usize>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin, _: Strided| {
            Tensor::zeros(&size, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!("full(SymInt[] size, Scalar fill_value, *, {OPTS}) -> Tensor"),
        |size: Vec<usize>, v: Scalar, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::full(&size, v, opts(dt, dev))
        },
    );
    for (name, fill) in [("zeros_like", 0i64), ("ones_like", 1), ("empty_like", 0)] {
        r.def_typed(
            &format!("{name}(Tensor self, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
            move |x: Tensor,
                  dt: Dt,
                  _: Strided,
                  dev: DeviceArg,
                  _: Pin,
                  f: Option<MemoryFormat>| {
                let dtype = opts(dt, dev).resolve(name, x.dtype())?;
                in_format(x.full_like_dtype(fill, dtype)?, f)
            },
        );
    }
    r.def_typed(
        &format!("full_like(Tensor self, Scalar fill_value, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
        |x: Tensor, v: Scalar, dt: Dt, _: Strided, dev: DeviceArg, _: Pin, f: Option<MemoryFormat>| {
            let dtype = opts(dt, dev).resolve("full_like", x.dtype())?;
            in_format(x.full_like_dtype(v, dtype)?, f)
        },
    );
    r.def_typed(
        &format!("arange(Scalar end, *, {OPTS}) -> Tensor"),
        |end: Scalar, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::arange(0, end, 1, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!("arange.start(Scalar start, Scalar end, Scalar step=1, *, {OPTS}) -> Tensor"),
        |start: Scalar, end: Scalar, step: Scalar, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::arange(start, end, step, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!("linspace(Scalar start, Scalar end, int steps, *, {OPTS}) -> Tensor"),
        |a: Scalar, b: Scalar, n: i64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::linspace(a.to_f64(), b.to_f64(), steps("linspace", n)?, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!(
            "logspace(Scalar start, Scalar end, int steps, float base=10.0, *, {OPTS}) -> Tensor"
        ),
        |a: Scalar, b: Scalar, n: i64, base: f64, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            let n = steps("logspace", n)?;
            Tensor::logspace(a.to_f64(), b.to_f64(), n, base, opts(dt, dev))
        },
    );
    r.def_typed(
        &format!("eye(SymInt n, SymInt? m=None, *, {OPTS}) -> Tensor"),
        |n: usize, m: Option<i64>, dt: Dt, _: Strided, dev: DeviceArg, _: Pin| {
            let m = m
                .map(|m| {
                    usize::try_from(m).map_err(|_| {
                        crate::error::Error::new(
                            crate::ErrorKind::Runtime,
                            format!("eye: m must be greater or equal to 0, got {m}"),
                        )
                    })
                })
                .transpose()?;
            Tensor::eye(n, m, opts(dt, dev))
        },
    );
}
