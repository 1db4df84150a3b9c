//! Python operators on tensors: arithmetic with reflected and in-place
//! forms, comparisons, `@`, `**`, `~`, `&`, `|`, `^`, unary minus and abs.
//!
//! These call the typed core methods directly instead of going through the
//! dispatcher by name: `a + b` on tiny tensors is the hot path of
//! Python-driven training (issue 5's speed table).

use crate::convert::{to_scalar, wrap};
use crate::errors::guarded_detached_if;
use crate::numpy;
use crate::ops::RELEASE_GIL_NUMEL;
use crate::tensor::PyTensor;
use ferrotorch_core::dtype::ResultTypeArg;
use ferrotorch_core::native::Operand;
use ferrotorch_core::{result_type, Result, Tensor};
use pyo3::basic::CompareOp;
use pyo3::prelude::*;

/// The right operand, or `None` when it is not one we take (so Python
/// tries the other side's reflected method).
fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Some(Operand::Tensor(t.borrow().t.clone())));
    }
    if let Some(s) = to_scalar(obj)? {
        return Ok(Some(Operand::Scalar(s)));
    }
    if numpy::is_ndarray(obj) {
        return Ok(Some(Operand::Tensor(numpy::from_numpy(
            obj,
            numpy::Misaligned::Copy,
        )?)));
    }
    Ok(None)
}

/// Run a kernel, releasing the GIL when the inputs are large.
fn run<'py>(
    py: Python<'py>,
    what: &str,
    big: bool,
    f: impl FnOnce() -> Result<Tensor> + Send,
) -> PyResult<Bound<'py, PyAny>> {
    wrap(py, guarded_detached_if(py, what, big, f)?)
}

fn is_big(a: &Tensor, b: &Operand) -> bool {
    a.numel() >= RELEASE_GIL_NUMEL
        || matches!(b, Operand::Tensor(t) if t.numel() >= RELEASE_GIL_NUMEL)
}

/// `lhs` as a 0-dim tensor of the dtype `lhs op t` promotes to, so that a
/// reflected op (`2 - t`) keeps wrapped-number promotion.
fn reflected_lhs(lhs: &Operand, t: &Tensor) -> Result<Tensor> {
    match lhs {
        Operand::Tensor(x) => Ok(x.clone()),
        Operand::Scalar(s) => {
            let dt = result_type(&[
                ResultTypeArg::Scalar(*s),
                ResultTypeArg::Tensor(t.dtype(), t.dim()),
            ]);
            Tensor::full(&[], *s, dt)
        }
    }
}

macro_rules! forward_ops {
    ($( $py:ident => $method:ident ),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $py<'py>(&self, py: Python<'py>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                    let Some(o) = operand(other)? else {
                        return Ok(py.NotImplemented().into_bound(py));
                    };
                    let a = self.t.clone();
                    run(py, stringify!($method), is_big(&a, &o), move || a.$method(o))
                }
            )*
        }
    };
}

forward_ops! {
    __add__ => add,
    __radd__ => add,
    __sub__ => sub,
    __mul__ => mul,
    __rmul__ => mul,
    __truediv__ => div,
    __floordiv__ => floor_divide,
    __mod__ => remainder,
    __and__ => bitwise_and,
    __rand__ => bitwise_and,
    __or__ => bitwise_or,
    __ror__ => bitwise_or,
    __xor__ => bitwise_xor,
    __rxor__ => bitwise_xor,
}

macro_rules! reflected_ops {
    ($( $py:ident => $method:ident ),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $py<'py>(&self, py: Python<'py>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                    let Some(o) = operand(other)? else {
                        return Ok(py.NotImplemented().into_bound(py));
                    };
                    let t = self.t.clone();
                    run(py, stringify!($method), is_big(&t, &o), move || reflected_lhs(&o, &t)?.$method(&t))
                }
            )*
        }
    };
}

reflected_ops! {
    __rsub__ => sub,
    __rtruediv__ => div,
    __rfloordiv__ => floor_divide,
    __rmod__ => remainder,
}

macro_rules! inplace_ops {
    ($( $py:ident => $method:ident ),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $py(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
                    let Some(o) = operand(other)? else {
                        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "unsupported operand type for {}: 'Tensor' and '{}'",
                            stringify!($method),
                            other.get_type().name()?
                        )));
                    };
                    let a = self.t.clone();
                    let big = is_big(&a, &o);
                    let f = move || a.$method(o);
                    guarded_detached_if(py, stringify!($method), big, f)?;
                    Ok(())
                }
            )*
        }
    };
}

inplace_ops! {
    __iadd__ => add_,
    __isub__ => sub_,
    __imul__ => mul_,
    __itruediv__ => div_,
    __imod__ => remainder_,
    __iand__ => bitwise_and_,
    __ior__ => bitwise_or_,
    __ixor__ => bitwise_xor_,
}

#[pymethods]
impl PyTensor {
    fn __pow__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = modulo;
        let Some(o) = operand(other)? else {
            return Ok(py.NotImplemented().into_bound(py));
        };
        let a = self.t.clone();
        run(py, "pow", is_big(&a, &o), move || a.pow(o))
    }

    fn __rpow__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = modulo;
        let Some(o) = operand(other)? else {
            return Ok(py.NotImplemented().into_bound(py));
        };
        let t = self.t.clone();
        run(py, "pow", is_big(&t, &o), move || {
            reflected_lhs(&o, &t)?.pow(&t)
        })
    }

    fn __ipow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = modulo;
        let Some(o) = operand(other)? else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "unsupported operand type for **=",
            ));
        };
        let a = self.t.clone();
        let big = is_big(&a, &o);
        let f = move || a.pow_(o);
        guarded_detached_if(py, "pow_", big, f)?;
        Ok(())
    }

    fn __matmul__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(Operand::Tensor(b)) = operand(other)? else {
            return Ok(py.NotImplemented().into_bound(py));
        };
        let a = self.t.clone();
        let big = a.numel().max(b.numel()) >= 4096;
        run(py, "matmul", big, move || a.matmul(&b))
    }

    fn __rmatmul__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(Operand::Tensor(a)) = operand(other)? else {
            return Ok(py.NotImplemented().into_bound(py));
        };
        let b = self.t.clone();
        run(py, "matmul", true, move || a.matmul(&b))
    }

    fn __neg__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = self.t.clone();
        run(py, "neg", false, move || a.neg())
    }

    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __abs__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = self.t.clone();
        run(py, "abs", false, move || a.abs())
    }

    fn __invert__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.t.dtype().is_floating_point() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
            ));
        }
        let a = self.t.clone();
        run(py, "bitwise_not", false, move || a.bitwise_not())
    }

    fn __richcmp__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        op: CompareOp,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(o) = operand(other)? else {
            // torch: `t == "x"` is False, `t != None` is True
            return match op {
                CompareOp::Eq => Ok(false.into_pyobject(py)?.to_owned().into_any()),
                CompareOp::Ne => Ok(true.into_pyobject(py)?.to_owned().into_any()),
                _ => Ok(py.NotImplemented().into_bound(py)),
            };
        };
        let a = self.t.clone();
        let big = is_big(&a, &o);
        run(py, "compare", big, move || match op {
            CompareOp::Lt => a.lt(o),
            CompareOp::Le => a.le(o),
            CompareOp::Eq => a.eq(o),
            CompareOp::Ne => a.ne(o),
            CompareOp::Gt => a.gt(o),
            CompareOp::Ge => a.ge(o),
        })
    }
}
