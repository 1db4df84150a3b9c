//! `ferrotorch.Tensor`: the native extension type (seeds/000's
//! `THPVariable`), holding a core [`Tensor`] handle.
//!
//! # Note [Methods declared once]
//! Only what is not an op lives here: metadata (`shape`, `stride()`,
//! `data_ptr()`), autograd state, conversions and the Python protocols.
//! Every op in the dispatcher's registry becomes a function and a method in
//! `ferrotorch/_ops.py`, generated from its schema at import time, so
//! adding an op to the core adds it to Python with no code here.

use crate::convert::{to_ivalue, wrap};
use crate::dtype::{dtype_object, PyDType};
use crate::errors::{guarded, IntoPy};
use ferrotorch_core::autograd::Node;
use ferrotorch_core::{get_default_dtype, DType, MemoryFormat, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyList, PyTuple, PyType, PyWeakrefMethods, PyWeakrefReference};
use pyo3::BoundObject;
use std::sync::Arc;

/// The Python `Tensor` type.
#[pyclass(name = "Tensor", module = "ferrotorch", subclass, weakref, dict)]
pub struct PyTensor {
    /// The core tensor (a cheap, shared handle).
    pub t: Tensor,
    /// The Python object last returned by `.grad`, so that `t.grad is
    /// t.grad` holds as in torch while the gradient tensor is unchanged.
    /// (A mutex, not `&mut self`: a getter must not need an exclusive
    /// borrow while other threads run kernels on this tensor.)
    pub grad_obj: std::sync::Mutex<Option<Py<PyAny>>>,
}

impl PyTensor {
    /// A wrapper with no cached gradient object.
    pub fn new_wrapper(t: Tensor) -> PyTensor {
        PyTensor {
            t,
            grad_obj: std::sync::Mutex::new(None),
        }
    }
}

static SIZE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DEVICE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `ferrotorch.Size(dims)`.
pub fn size_object<'py>(py: Python<'py>, dims: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let cls = SIZE.import(py, "ferrotorch._size", "Size")?;
    cls.call1((PyTuple::new(py, dims)?,))
}

fn nested<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    fn build<'py, T: Clone + IntoPyObject<'py>>(
        py: Python<'py>,
        vals: &[T],
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        match shape.split_first() {
            None => Ok(vals[0]
                .clone()
                .into_pyobject(py)
                .map_err(Into::into)?
                .into_any()
                .into_bound()),
            Some((&n, rest)) => {
                let step: usize = rest.iter().product();
                let items = (0..n)
                    .map(|i| build(py, &vals[i * step..(i + 1) * step], rest))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyList::new(py, items)?.into_any())
            }
        }
    }
    let shape = t.shape().to_vec();
    if t.dtype() == DType::Bool {
        let v: Vec<bool> = t.to_vec::<bool>().py()?;
        build(py, &v, &shape)
    } else if t.dtype().is_complex() {
        // the values of a conjugated view (Note [The conjugate bit])
        let flat = t
            .detach()
            .resolve_conj()
            .py()?
            .view_as_real()
            .py()?
            .to_vec_f64()
            .py()?;
        let v: Vec<Bound<'_, PyAny>> = flat
            .chunks(2)
            .map(|p| pyo3::types::PyComplex::from_doubles(py, p[0], p[1]).into_any())
            .collect();
        build(py, &v, &shape)
    } else if t.dtype().is_floating_point() {
        build(py, &t.to_vec_f64().py()?, &shape)
    } else {
        build(py, &t.to_vec_i64().py()?, &shape)
    }
}

/// `t.real = value` / `t.imag = value`: copy a tensor or fill a number
/// into the part's view.
fn write_part(part: &Tensor, value: &Bound<'_, PyAny>) -> PyResult<()> {
    match crate::convert::to_ivalue(value)? {
        ferrotorch_core::dispatch::IValue::Tensor(v) => part.copy_(&v).py(),
        v => match v.to_scalar() {
            Some(s) => part.fill_(s).py(),
            None => Err(PyTypeError::new_err(format!(
                "can't assign a {} to a part of a Tensor",
                value.get_type().name()?
            ))),
        },
    }
}

/// A Scalar as the Python number torch's `item()` returns.
pub fn scalar_object(py: Python<'_>, s: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any(),
        Scalar::Complex(re, im) => pyo3::types::PyComplex::from_doubles(py, re, im).into_any(),
    })
}

/// `t.grad_fn`: a node of the backward graph.
#[pyclass(name = "Node", module = "ferrotorch.autograd.graph", frozen, weakref)]
pub struct PyNode {
    pub(crate) node: Arc<Node>,
}

/// # Note [One Python object per graph node]
/// torch hands out the same Python object for a graph node every time
/// (`y.grad_fn is y.grad_fn`, and a node reached through `next_functions`
/// is the one its tensor's `grad_fn` gives). Live node objects are found
/// again through weak references keyed by the node's address: a live
/// object holds its node, so the address cannot be reused while the entry
/// can still be upgraded. Dead entries are swept when the table doubles.
struct LiveNodes {
    map: std::collections::HashMap<usize, Py<PyWeakrefReference>>,
    sweep_at: usize,
}

static LIVE_NODES: std::sync::Mutex<Option<LiveNodes>> = std::sync::Mutex::new(None);

/// The Python object for `node` (Note [One Python object per graph node]).
pub(crate) fn node_object(py: Python<'_>, node: Arc<Node>) -> PyResult<Bound<'_, PyAny>> {
    let key = Arc::as_ptr(&node) as usize;
    let found = {
        let g = LIVE_NODES.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref()
            .and_then(|l| l.map.get(&key).map(|w| w.clone_ref(py)))
    };
    if let Some(obj) = found.and_then(|w| w.bind(py).upgrade()) {
        return Ok(obj);
    }
    let obj = Bound::new(py, PyNode { node })?.into_any();
    let weak = PyWeakrefReference::new(&obj)?.unbind();
    let mut g = LIVE_NODES.lock().unwrap_or_else(|e| e.into_inner());
    let live = g.get_or_insert_with(|| LiveNodes {
        map: std::collections::HashMap::new(),
        sweep_at: 64,
    });
    live.map.insert(key, weak);
    if live.map.len() >= live.sweep_at {
        live.map.retain(|_, w| w.bind(py).upgrade().is_some());
        live.sweep_at = (2 * live.map.len()).max(64);
    }
    Ok(obj)
}

#[pymethods]
impl PyNode {
    /// The node's name (`MulBackward0`; a leaf's accumulator is
    /// `torch::autograd::AccumulateGrad`, as torch names its C++ nodes).
    fn name(&self) -> String {
        match self.node.name() {
            "AccumulateGrad" => "torch::autograd::AccumulateGrad".to_string(),
            n => n.to_string(),
        }
    }

    /// `((next_node, input_nr), ...)`, `(None, 0)` where an input needs no grad.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .node
            .next_functions()
            .into_iter()
            .map(|e| -> PyResult<Bound<'py, PyAny>> {
                match e {
                    Some((n, i)) => Ok((node_object(py, n)?, i).into_pyobject(py)?.into_any()),
                    None => Ok((py.None(), 0).into_pyobject(py)?.into_any()),
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// `grad_fn.register_prehook(hook)`: `hook(grad_outputs)` runs before
    /// the node's formula and may return replacements (Note [Graph hooks]).
    fn register_prehook(&self, hook: Py<PyAny>) -> crate::autograd::PyRemovableHandle {
        crate::graph_hooks::register_prehook(&self.node, hook)
    }

    /// `grad_fn.register_hook(hook)`: `hook(grad_inputs, grad_outputs)` runs
    /// after the node's formula and may return replacement input gradients.
    fn register_hook(&self, hook: Py<PyAny>) -> crate::autograd::PyRemovableHandle {
        crate::graph_hooks::register_hook(&self.node, hook)
    }

    fn __repr__(&self) -> String {
        format!(
            "<{} object at {:#x}>",
            self.node.name(),
            Arc::as_ptr(&self.node) as usize
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .is_ok_and(|o| Arc::ptr_eq(&o.get().node, &self.node))
    }

    fn __hash__(&self) -> usize {
        Arc::as_ptr(&self.node) as usize
    }
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data)` shares a tensor (how `nn.Parameter` is built),
    /// `Tensor(*sizes)` makes an uninitialised float tensor, `Tensor(seq)`
    /// copies data as the default float dtype, `Tensor()` is empty.
    #[new]
    #[pyo3(signature = (*args))]
    fn new(args: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let dt = get_default_dtype();
        if args.is_empty() {
            return Ok(PyTensor::new_wrapper(Tensor::zeros(&[0], dt).py()?));
        }
        let first = args.get_item(0)?;
        if args.len() == 1 {
            if let Ok(t) = first.cast::<PyTensor>() {
                return Ok(PyTensor::new_wrapper(t.borrow().t.clone()));
            }
            if !first.is_instance_of::<pyo3::types::PyInt>() {
                let t = crate::create::tensor_from_data(&first, Some(dt))?;
                return Ok(PyTensor::new_wrapper(t));
            }
        }
        let dims: Vec<usize> = args.extract().map_err(|_| {
            PyTypeError::new_err("Tensor(): expected a tensor, a sequence or sizes as ints")
        })?;
        Ok(PyTensor::new_wrapper(Tensor::zeros(&dims, dt).py()?))
    }

    /// `t.shape`, a `ferrotorch.Size`.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.size(py, None)
    }

    /// `t.size()` or `t.size(dim)`; while tracing, each size is a 0-dim
    /// tensor recorded in the graph (Note [Traced sizes]), unless
    /// `ferrotorch.compile` traces with sizes static (it guards on them).
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        if ferrotorch_jit::is_tracing() && !crate::jit::static_sizes() {
            let traced = |d: i64| wrap(py, ferrotorch_jit::size(&self.t, d).py()?);
            return match dim {
                Some(d) => traced(d),
                None => {
                    let items = (0..self.t.dim() as i64)
                        .map(traced)
                        .collect::<PyResult<Vec<_>>>()?;
                    let cls = SIZE.import(py, "ferrotorch._size", "Size")?;
                    cls.call1((PyTuple::new(py, items)?,))
                }
            };
        }
        match dim {
            None => size_object(py, self.t.shape()),
            Some(d) => Ok(self.t.size_at(d).py()?.into_pyobject(py)?.into_any()),
        }
    }

    /// `t.stride()` or `t.stride(dim)`, in elements.
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.t.stride())?.into_any()),
            Some(d) => Ok(self.t.stride_at(d).py()?.into_pyobject(py)?.into_any()),
        }
    }

    fn dim(&self) -> usize {
        self.t.dim()
    }

    fn ndimension(&self) -> usize {
        self.t.dim()
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.t.dim()
    }

    fn numel(&self) -> usize {
        self.t.numel()
    }

    fn nelement(&self) -> usize {
        self.t.numel()
    }

    fn storage_offset(&self) -> usize {
        self.t.storage_offset()
    }

    fn data_ptr(&self) -> usize {
        self.t.data_ptr() as usize
    }

    fn element_size(&self) -> usize {
        self.t.element_size()
    }

    /// Make this Python tensor the handle of `other` (same storage and
    /// geometry): the in-place view ops (`unsqueeze_`, `t_`, `resize_`,
    /// `detach_`, `set_`) are written in Python on top of it
    /// (`_tensor_surface.py`).
    fn _set_from(&mut self, other: PyRef<'_, PyTensor>) {
        self.t = other.t.clone();
    }

    /// `t.is_contiguous(memory_format=torch.contiguous_format)`.
    #[pyo3(signature = (memory_format=None))]
    fn is_contiguous(&self, memory_format: Option<&str>) -> PyResult<bool> {
        match memory_format {
            None => Ok(self.t.is_contiguous()),
            Some(f) => self
                .t
                .is_contiguous_as(MemoryFormat::from_name(f).py()?)
                .py(),
        }
    }

    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_floating_point()
    }

    /// `t.untyped_storage()`: the storage's address and size.
    fn untyped_storage(&self) -> crate::storage::PyUntypedStorage {
        crate::storage::PyUntypedStorage {
            storage: self.t.storage().clone(),
        }
    }

    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> Bound<'py, PyDType> {
        dtype_object(py, self.t.dtype())
    }

    /// `t.real`: the real parts, a view (the tensor itself when real).
    #[getter]
    fn real<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::wrap(py, self.t.real().py()?)
    }

    /// `t.real = value`: write the real parts.
    #[setter]
    fn set_real(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        write_part(&self.t.real().py()?, value)
    }

    /// `t.imag`: the imaginary parts of a complex tensor, a view.
    #[getter]
    fn imag<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::wrap(py, self.t.imag().py()?)
    }

    /// `t.imag = value`: write the imaginary parts.
    #[setter]
    fn set_imag(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        write_part(&self.t.imag().py()?, value)
    }

    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cls = DEVICE.import(py, "ferrotorch._device", "device")?;
        cls.call1((self.t.device().to_string(),))
    }

    #[getter]
    fn is_cuda(&self) -> bool {
        !matches!(self.t.device(), ferrotorch_core::Device::Cpu)
    }

    #[getter]
    fn is_cpu(&self) -> bool {
        matches!(self.t.device(), ferrotorch_core::Device::Cpu)
    }

    // ---- autograd state ----

    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.t.requires_grad()
    }

    #[setter]
    fn set_requires_grad(&self, requires_grad: bool) -> PyResult<()> {
        self.t.requires_grad_(requires_grad).py().map(drop)
    }

    /// `t.requires_grad_(requires_grad=True)`, returning `t` itself.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: Bound<'_, Self>, requires_grad: bool) -> PyResult<Bound<'_, Self>> {
        slf.borrow().t.requires_grad_(requires_grad).py()?;
        Ok(slf)
    }

    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
    }

    /// `t._base`: the tensor this one is a view of (None for a base).
    #[getter]
    fn _base(&self) -> Option<PyTensor> {
        self.t.view_base().map(PyTensor::new_wrapper)
    }

    /// `t._is_view()`: whether this tensor is a view of another.
    fn _is_view(&self) -> bool {
        self.t.is_view()
    }

    /// `t._version`: the storage's version counter (Note [Version counter]).
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }

    #[getter]
    fn get_grad<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // the lock is never held while Python code can run (allocation may
        // run finalizers that read this attribute)
        let cached = self
            .grad_obj
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|o| o.clone_ref(py));
        let Some(g) = self.t.grad() else {
            *self.grad_obj.lock().unwrap_or_else(|e| e.into_inner()) = None;
            return Ok(None);
        };
        if let Some(obj) = cached {
            let b = obj.into_bound(py);
            if b.cast::<PyTensor>().is_ok_and(|c| c.borrow().t.is_same(&g)) {
                return Ok(Some(b));
            }
        }
        let obj = wrap(py, g)?;
        *self.grad_obj.lock().unwrap_or_else(|e| e.into_inner()) = Some(obj.clone().unbind());
        Ok(Some(obj))
    }

    #[setter]
    fn set_grad(&self, grad: Option<PyRef<'_, PyTensor>>) -> PyResult<()> {
        self.t.set_grad(grad.map(|g| g.t.clone())).py()
    }

    #[getter]
    fn grad_fn<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.t
            .grad_fn()
            .map(|node| node_object(py, node))
            .transpose()
    }

    /// `t.data`: the same data, detached from autograd.
    #[getter]
    fn get_data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        wrap(py, self.t.detach())
    }

    /// `t.data = other`: this tensor now uses `other`'s data (and shape).
    #[setter]
    fn set_data(&mut self, other: PyRef<'_, PyTensor>) -> PyResult<()> {
        let requires_grad = self.t.requires_grad();
        let t = other.t.detach();
        if requires_grad {
            t.requires_grad_(true).py()?;
        }
        self.t = t;
        Ok(())
    }

    fn detach<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        wrap(py, self.t.detach())
    }

    fn detach_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.borrow().t.detach_().py()?;
        Ok(slf)
    }

    fn retain_grad(&self) -> PyResult<()> {
        self.t.retain_grad().py()
    }

    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }

    /// `t.backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)`.
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<PyRef<'_, PyTensor>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if let Some(inputs) = inputs.filter(|i| !i.is_none()) {
            // accumulate into the given inputs only: autograd.backward does it
            let me = crate::convert::wrap(py, self.t.clone())?;
            let g = match &gradient {
                Some(g) => crate::convert::wrap(py, g.t.clone())?,
                None => py.None().into_bound(py),
            };
            py.import("ferrotorch.autograd")?
                .call_method1("backward", (me, g, retain_graph, create_graph, inputs))?;
            return Ok(());
        }
        let g = gradient.map(|g| g.t.clone());
        let t = self.t.clone();
        py.detach(|| {
            guarded("backward", || {
                t.backward_with(g.as_ref(), retain_graph, create_graph)
            })
        })
    }

    // ---- conversions ----

    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::jit::warn_if_tracing(py, "Converting a tensor to a Python number")?;
        scalar_object(py, self.t.item().py()?)
    }

    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::jit::warn_if_tracing(py, "Converting a tensor to a Python list")?;
        nested(py, &self.t)
    }

    fn __len__(&self) -> PyResult<usize> {
        match self.t.shape().first() {
            Some(&n) => Ok(n),
            None => Err(PyTypeError::new_err("len() of a 0-d tensor")),
        }
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        crate::jit::warn_if_tracing(py, "Converting a tensor to a Python boolean")?;
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                if self.t.numel() == 0 {
                    "no"
                } else {
                    "more than one"
                }
            )));
        }
        Ok(self.t.item().py()?.to_bool())
    }

    fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (re, im) = self.t.item().py()?.to_complex();
        Ok(pyo3::types::PyComplex::from_doubles(py, re, im).into_any())
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        crate::jit::warn_if_tracing(py, "Converting a tensor to a Python float")?;
        if self.t.is_complex() {
            return Err(PyTypeError::new_err("can't convert complex to float"));
        }
        self.t.item_f64().py()
    }

    /// `int(t)`: a float tensor converts through Python's `int(float)`, so
    /// NaN raises ValueError, ±inf OverflowError and large values stay exact
    /// (as torch); integer and bool tensors give their value.
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::jit::warn_if_tracing(py, "Converting a tensor to a Python integer")?;
        if self.t.is_complex() {
            return Err(PyTypeError::new_err("can't convert complex to int"));
        }
        match self.t.item().py()? {
            ferrotorch_core::Scalar::Float(f) => py.get_type::<pyo3::types::PyInt>().call1((f,)),
            s => Ok(s.to_i64().into_pyobject(py)?.into_any()),
        }
    }

    fn __index__(&self) -> PyResult<i64> {
        if !self.t.dtype().is_integral(true) || self.t.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(self.t.item().py()?.to_i64())
    }

    fn __repr__(&self) -> String {
        self.t.to_string()
    }

    fn __hash__(slf: &Bound<'_, Self>) -> usize {
        slf.as_ptr() as usize
    }

    /// `t.to(dtype)`, `t.to(device)`, `t.to(other)`, `t.to(device, dtype)`;
    /// `copy=True` forces a copy; `memory_format` lays the result out.
    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false, memory_format=None))]
    fn to<'py>(
        slf: Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        dtype: Option<PyRef<'py, PyDType>>,
        device: Option<&Bound<'py, PyAny>>,
        non_blocking: bool,
        copy: bool,
        memory_format: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = non_blocking;
        let py = slf.py();
        let mut target = dtype.map(|d| d.dtype);
        let mut copy = copy;
        // positional bools after the target are (non_blocking, copy)
        let mut bools = 0;
        let mut devices: Vec<String> = Vec::new();
        if let Some(d) = device {
            devices.push(d.str()?.to_string());
        }
        for a in args.iter() {
            if let Ok(d) = a.cast::<PyDType>() {
                target = Some(d.get().dtype);
            } else if let Ok(o) = a.cast::<PyTensor>() {
                target = Some(o.borrow().t.dtype());
            } else if a.is_instance_of::<PyBool>() {
                bools += 1;
                if bools == 2 {
                    copy = a.extract()?;
                }
            } else {
                devices.push(a.str()?.to_string());
            }
        }
        for d in &devices {
            crate::create::check_device_name(d)?;
        }
        let t = slf.borrow().t.clone();
        if let Some(f) = memory_format {
            let f = MemoryFormat::from_name(f).py()?;
            let out = t.to_as(target.unwrap_or(t.dtype()), f, copy).py()?;
            if out.is_same(&t) {
                return Ok(slf.into_any());
            }
            return wrap(py, out);
        }
        match target {
            Some(d) if d != t.dtype() => wrap(py, t.to_dtype(d).py()?),
            _ if copy => wrap(py, t.deep_clone().py()?),
            _ => Ok(slf.into_any()),
        }
    }

    /// `t.type(dtype)` converts; `t.type()` names the legacy type.
    #[pyo3(signature = (dtype=None))]
    fn r#type<'py>(
        slf: Bound<'py, Self>,
        dtype: Option<PyRef<'py, PyDType>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let t = slf.borrow().t.clone();
        match dtype {
            Some(d) if d.dtype != t.dtype() => wrap(py, t.to_dtype(d.dtype).py()?),
            Some(_) => Ok(slf.into_any()),
            None => Ok(format!("torch.{}Tensor", t.dtype().name_title())
                .into_pyobject(py)?
                .into_any()),
        }
    }

    fn cpu(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// `t.cuda()`: this build has no CUDA kernels.
    #[pyo3(signature = (*_args, **_kwargs))]
    fn cuda(
        &self,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        crate::create::check_device_name("cuda")
    }

    /// `t.copy_(src)`: copy with broadcasting and dtype conversion.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: Bound<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let src = match to_ivalue(src)? {
            ferrotorch_core::dispatch::IValue::Tensor(t) => t,
            _ => {
                return Err(PyTypeError::new_err(
                    "copy_(): argument 'src' must be Tensor",
                ))
            }
        };
        let t = slf.borrow().t.clone();
        slf.py().detach(|| guarded("copy_", || t.copy_(&src)))?;
        Ok(slf)
    }

    /// `t.new_tensor(data)`, `t.new_zeros(size)` and friends use this
    /// tensor's dtype.
    #[pyo3(signature = (data, dtype=None, requires_grad=false))]
    fn new_tensor<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        dtype: Option<PyRef<'py, PyDType>>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dt = dtype.map_or(self.t.dtype(), |d| d.dtype);
        let t = crate::create::tensor_from_data(data, Some(dt))?;
        if requires_grad {
            t.requires_grad_(true).py()?;
        }
        wrap(py, t)
    }

    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, _protocol: i64) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let rebuild = py
            .import("ferrotorch._pickle")?
            .getattr("_rebuild_tensor")?;
        let t = slf.borrow().t.clone();
        let bytes = PyBytes::new(py, &t.to_bytes().py()?);
        let shape = PyTuple::new(py, t.shape())?;
        Ok(
            (rebuild, (bytes, t.dtype().name(), shape, t.requires_grad()))
                .into_pyobject(py)?
                .into_any(),
        )
    }
}

/// `ferrotorch._C._from_bytes(data, dtype, shape)`: the inverse of pickling.
#[pyfunction]
pub fn _from_bytes<'py>(
    py: Python<'py>,
    data: &[u8],
    dtype: &str,
    shape: Vec<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let dt = DType::from_name(dtype)
        .ok_or_else(|| PyValueError::new_err(format!("unknown dtype '{dtype}'")))?;
    wrap(py, Tensor::from_bytes(data, &shape, dt).py()?)
}

/// `ferrotorch._C._to_bytes(t)`: the elements' bytes in row-major order.
#[pyfunction]
pub fn _to_bytes<'py>(py: Python<'py>, t: PyRef<'py, PyTensor>) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &t.t.to_bytes().py()?))
}
