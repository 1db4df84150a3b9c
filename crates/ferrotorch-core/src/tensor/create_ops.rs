//! Dispatcher entries of the creation ops (`zeros`, `ones`, `full`,
//! `empty`, `arange`, `linspace`, `logspace`, `eye`, the `_like` forms),
//! with torch's schemas, so bindings create tensors the way they call any
//! other op.

use super::{Tensor, TensorOptions};
use crate::device::Device;
use crate::dispatch::{Args, IValue, Registry};
use crate::error::Result;

/// A `Device?` argument: `"cpu"`, `"cpu:0"`, `"cuda:1"` or None.
fn device(a: &Args, i: usize) -> Result<Option<Device>> {
    match a.get(i) {
        IValue::None => Ok(None),
        IValue::Str(s) => {
            let (kind, index) = s.split_once(':').unwrap_or((s.as_str(), "0"));
            let index: usize = index.parse().map_err(|_| {
                crate::error::Error::new(
                    crate::ErrorKind::Runtime,
                    format!("Invalid device string: '{s}'"),
                )
            })?;
            match kind {
                "cpu" => Ok(Some(Device::Cpu)),
                "cuda" => Ok(Some(Device::Cuda(index))),
                _ => crate::bail!(
                    Runtime,
                    "Expected one of cpu, cuda device type at start of device string: {s}"
                ),
            }
        }
        v => crate::bail!(Type, "device must be a string, not {}", v.type_name()),
    }
}

/// `dtype` at `i`, `device` at `i + 2` (after the layout), as options.
fn options(a: &Args, i: usize) -> Result<TensorOptions> {
    Ok(TensorOptions {
        dtype: a.opt_dtype(i)?,
        device: device(a, i + 2)?,
    })
}

const OPTS: &str =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

pub(crate) fn register_creation(r: &mut Registry) {
    r.def(&format!("zeros(SymInt[] size, *, {OPTS}) -> Tensor"), |a| {
        Ok(Tensor::zeros(&a.usize_list(0)?, options(a, 1)?)?.into())
    });
    r.def(&format!("ones(SymInt[] size, *, {OPTS}) -> Tensor"), |a| {
        Ok(Tensor::ones(&a.usize_list(0)?, options(a, 1)?)?.into())
    });
    r.def(&format!("empty.memory_format(SymInt[] size, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"), |a| {
        // fresh memory is zeroed: "uninitialised" never exposes stale data
        Ok(Tensor::zeros(&a.usize_list(0)?, options(a, 1)?)?.into())
    });
    r.def(
        &format!("full(SymInt[] size, Scalar fill_value, *, {OPTS}) -> Tensor"),
        |a| Ok(Tensor::full(&a.usize_list(0)?, a.scalar(1)?, options(a, 2)?)?.into()),
    );
    for (name, fill) in [
        ("zeros_like", Some(0i64)),
        ("ones_like", Some(1)),
        ("empty_like", None),
    ] {
        r.def(
            &format!("{name}(Tensor self, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
            move |a| {
                let s = a.tensor(0)?;
                let dtype = options(a, 1)?.resolve(name, s.dtype())?;
                Ok(s.full_like_dtype(fill.unwrap_or(0), dtype)?.into())
            },
        );
    }
    r.def(
        &format!("full_like(Tensor self, Scalar fill_value, *, {OPTS}, MemoryFormat? memory_format=None) -> Tensor"),
        |a| {
            let s = a.tensor(0)?;
            let dtype = options(a, 2)?.resolve("full_like", s.dtype())?;
            Ok(s.full_like_dtype(a.scalar(1)?, dtype)?.into())
        },
    );
    r.def(&format!("arange(Scalar end, *, {OPTS}) -> Tensor"), |a| {
        Ok(Tensor::arange(0, a.scalar(0)?, 1, options(a, 1)?)?.into())
    });
    r.def(
        &format!("arange.start(Scalar start, Scalar end, Scalar step=1, *, {OPTS}) -> Tensor"),
        |a| Ok(Tensor::arange(a.scalar(0)?, a.scalar(1)?, a.scalar(2)?, options(a, 3)?)?.into()),
    );
    r.def(
        &format!("linspace(Scalar start, Scalar end, int steps, *, {OPTS}) -> Tensor"),
        |a| {
            let steps = a.int(2)?;
            crate::ensure!(
                steps >= 0,
                Runtime,
                "linspace: number of steps must be non-negative"
            );
            Ok(Tensor::linspace(
                a.scalar(0)?.to_f64(),
                a.scalar(1)?.to_f64(),
                steps as usize,
                options(a, 3)?,
            )?
            .into())
        },
    );
    r.def(
        &format!(
            "logspace(Scalar start, Scalar end, int steps, float base=10.0, *, {OPTS}) -> Tensor"
        ),
        |a| {
            let steps = a.int(2)?;
            crate::ensure!(
                steps >= 0,
                Runtime,
                "logspace: number of steps must be non-negative"
            );
            Ok(Tensor::logspace(
                a.scalar(0)?.to_f64(),
                a.scalar(1)?.to_f64(),
                steps as usize,
                a.float(3)?,
                options(a, 4)?,
            )?
            .into())
        },
    );
    r.def(
        &format!("eye(SymInt n, SymInt? m=None, *, {OPTS}) -> Tensor"),
        |a| {
            let n = a.usize(0)?;
            let m = a.opt_int(1)?;
            crate::ensure!(
                m.is_none_or(|m| m >= 0),
                Runtime,
                "eye: m must be greater or equal to 0, got {}",
                m.unwrap_or(0)
            );
            Ok(Tensor::eye(n, m.map(|m| m as usize), options(a, 2)?)?.into())
        },
    );
}
