//! Native code from Python: scalar fx graphs compiled to machine code
//! (`ferrotorch.jit.compile_fx`) or WebAssembly, and the fuser's
//! switches (`torch._C._jit_set_texpr_fuser_enabled`, logging, counters).
//!
//! An expression arrives as a list of op tuples, each reading earlier
//! ones by index: `("input", k)`, `("const", v)`, `("unary", name, a)`,
//! `("binary", name, a, b)`, `("select", cmp, a, b, then, else)`; the
//! Python side builds it from an fx graph.

use ferrotorch_codegen::expr::{Binary, Cmp, Op, Unary};
use ferrotorch_codegen::{Expr, ScalarFn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

fn binary(name: &str) -> Option<Binary> {
    Some(match name {
        "add" => Binary::Add,
        "sub" => Binary::Sub,
        "mul" => Binary::Mul,
        "div" => Binary::Div,
        "max" => Binary::Max,
        "min" => Binary::Min,
        "pow" => Binary::Pow,
        _ => return None,
    })
}

fn cmp(name: &str) -> Option<Cmp> {
    Some(match name {
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        _ => return None,
    })
}

/// The expression the op tuples describe, validated.
fn expr_of(n_inputs: usize, ops: &Bound<'_, PyAny>, outputs: Vec<usize>) -> PyResult<Expr> {
    let mut e = Expr::new(n_inputs);
    for item in ops.try_iter()? {
        let item = item?;
        let t = item.cast::<PyTuple>()?;
        let kind: String = t.get_item(0)?.extract()?;
        let name = |i: usize| -> PyResult<String> { t.get_item(i)?.extract() };
        let ix = |i: usize| -> PyResult<usize> { t.get_item(i)?.extract() };
        let bad = |what: &str, n: String| PyValueError::new_err(format!("unknown {what} {n:?}"));
        let op = match kind.as_str() {
            "input" => Op::Input(ix(1)?),
            "const" => Op::Const(t.get_item(1)?.extract::<f64>()?.to_bits()),
            "unary" => Op::Unary(
                Unary::from_name(&name(1)?)
                    .ok_or_else(|| bad("function", name(1).unwrap_or_default()))?,
                ix(2)?,
            ),
            "binary" => Op::Binary(
                binary(&name(1)?).ok_or_else(|| bad("operator", name(1).unwrap_or_default()))?,
                ix(2)?,
                ix(3)?,
            ),
            "select" => Op::Select {
                cmp: cmp(&name(1)?)
                    .ok_or_else(|| bad("comparison", name(1).unwrap_or_default()))?,
                a: ix(2)?,
                b: ix(3)?,
                then: ix(4)?,
                other: ix(5)?,
            },
            other => return Err(PyValueError::new_err(format!("unknown op kind {other:?}"))),
        };
        e.push(op);
    }
    e.outputs = outputs;
    e.validate().map_err(PyValueError::new_err)?;
    Ok(e)
}

/// A scalar function compiled to machine code: call it with floats.
#[pyclass(name = "NativeFunction", module = "ferrotorch._C", frozen)]
pub struct PyNativeFunction {
    f: ScalarFn,
}

#[pymethods]
impl PyNativeFunction {
    /// `f(*floats)`: one float, or a tuple for several outputs.
    #[pyo3(signature = (*args))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let xs: Vec<f64> = args
            .iter()
            .map(|a| {
                a.extract::<f64>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "compiled function: expected float arguments, got {}",
                        a.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))
                })
            })
            .collect::<PyResult<_>>()?;
        let ys = self.f.call(&xs).map_err(PyTypeError::new_err)?;
        if ys.len() == 1 {
            return Ok(ys[0].into_pyobject(py)?.into_any());
        }
        Ok(PyTuple::new(py, ys)?.into_any())
    }

    /// Seconds spent compiling.
    #[getter]
    fn compile_time(&self) -> f64 {
        self.f.compile_time().as_secs_f64()
    }
}

/// Compile a scalar expression to machine code for this CPU.
#[pyfunction]
pub fn _jit_compile_scalar(
    n_inputs: usize,
    ops: &Bound<'_, PyAny>,
    outputs: Vec<usize>,
) -> PyResult<PyNativeFunction> {
    let e = expr_of(n_inputs, ops, outputs)?;
    let f = ScalarFn::compile(&e).map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
    Ok(PyNativeFunction { f })
}

/// A scalar expression as a WebAssembly module exporting `forward`.
#[pyfunction]
pub fn _jit_scalar_wasm<'py>(
    py: Python<'py>,
    n_inputs: usize,
    ops: &Bound<'py, PyAny>,
    outputs: Vec<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let e = expr_of(n_inputs, ops, outputs)?;
    let bytes = ferrotorch_codegen::wasm::to_wasm(&e).map_err(PyValueError::new_err)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The names of the one-argument functions a scalar expression's
/// `("unary", name, a)` takes (the code generator's primitives).
#[pyfunction]
pub fn _jit_scalar_unary_names() -> Vec<&'static str> {
    Unary::names().collect()
}

/// `torch._C._jit_set_texpr_fuser_enabled`: native fusion kernels on/off.
#[pyfunction]
pub fn _jit_set_texpr_fuser_enabled(on: bool) {
    ferrotorch_jit::fuser::set_enabled(on);
}

/// `torch._C._jit_texpr_fuser_enabled`.
#[pyfunction]
pub fn _jit_texpr_fuser_enabled() -> bool {
    ferrotorch_jit::fuser::enabled()
}

/// Fusion logging on/off (`ferrotorch._logging.set_logs(fusion=...)`).
#[pyfunction]
pub fn _fusion_set_logging(on: bool) {
    ferrotorch_jit::fuser::set_logging(on);
}

/// `(kernel_runs, compiles, fallbacks)` since the process started.
#[pyfunction]
pub fn _fusion_stats() -> (u64, u64, u64) {
    let s = ferrotorch_jit::fuser::stats();
    (s.kernel_runs, s.compiles, s.fallbacks)
}
