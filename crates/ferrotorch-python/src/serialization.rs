//! `ferrotorch.save` / `ferrotorch.load` bytes: the nn crate's safetensors
//! writer and validating reader (byte-identical to `safetensors.torch`),
//! so the Python package does not carry a second implementation.

use crate::convert::wrap;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;
use ferrotorch_nn::safetensors;
use ferrotorch_nn::StateDict;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::BTreeMap;

/// `_C._safetensors_save(tensors, metadata)`: safetensors bytes of a
/// `{name: tensor}` dict with string metadata.
#[pyfunction]
pub fn _safetensors_save<'py>(
    py: Python<'py>,
    tensors: Vec<(String, PyRef<'py, PyTensor>)>,
    metadata: BTreeMap<String, String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut sd = StateDict::new();
    for (name, t) in tensors {
        sd.insert(name, t.t.detach());
    }
    let bytes = py.detach(|| safetensors::save(&sd, Some(&metadata))).py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// `_C._safetensors_load(data)`: `({name: tensor}, metadata)`, every
/// offset, dtype and shape validated (never runs code from the file).
#[pyfunction]
pub fn _safetensors_load<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(Bound<'py, PyDict>, BTreeMap<String, String>)> {
    let sd = safetensors::load(data).py()?;
    let meta = safetensors::metadata(data).py()?;
    let out = PyDict::new(py);
    for (name, t) in sd.iter() {
        out.set_item(name, wrap(py, t.clone())?)?;
    }
    Ok((out, meta))
}

/// `_C._load_pt(data, allowed)`: a `torch.save` zip read without running
/// code (Note [Reading torch.save files]), as `(objects, root)`: one tuple
/// per pickle object, `(kind, payload)`, children by index, for
/// `_serialization.py` to build Python objects from (sharing kept).
#[pyfunction]
pub fn _load_pt<'py>(
    py: Python<'py>,
    data: &[u8],
    allowed: Vec<String>,
) -> PyResult<(Vec<Bound<'py, PyAny>>, usize)> {
    let ck = py
        .detach(|| ferrotorch_serialize::pt::load_pt(data, &allowed))
        .py()?;
    checkpoint_objects(py, &ck)
}

/// `_C._pt_classes(data)`: the classes a `torch.save` file names beyond
/// what loading rebuilds by itself (no storage is read).
#[pyfunction]
pub fn _pt_classes(py: Python<'_>, data: &[u8]) -> PyResult<Vec<String>> {
    py.detach(|| ferrotorch_serialize::pt::pickle_classes(data))
        .py()
}

/// `_C._pt_classes_file(path)`: [`_pt_classes`] of the file at `path`,
/// through a mapping of it.
#[pyfunction]
pub fn _pt_classes_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Vec<String>> {
    py.detach(|| ferrotorch_serialize::pt::pickle_classes_file(&path))
        .py()
}

/// `_C._load_pt_file(path, allowed)`: [`_load_pt`] of the file at `path`,
/// its storages copied straight from the page cache.
#[pyfunction]
pub fn _load_pt_file<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    allowed: Vec<String>,
) -> PyResult<(Vec<Bound<'py, PyAny>>, usize)> {
    let ck = py
        .detach(|| ferrotorch_serialize::pt::load_pt_file(&path, &allowed))
        .py()?;
    checkpoint_objects(py, &ck)
}

/// `_C._load_pt_mmap(path, allowed)`: [`_load_pt`] of a file mapped into
/// memory (`torch.load(mmap=True)`): its storages are views of the mapping.
#[pyfunction]
pub fn _load_pt_mmap<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    allowed: Vec<String>,
) -> PyResult<(Vec<Bound<'py, PyAny>>, usize)> {
    let ck = py
        .detach(|| ferrotorch_serialize::pt::load_pt_mmap(&path, &allowed))
        .py()?;
    checkpoint_objects(py, &ck)
}

fn checkpoint_objects<'py>(
    py: Python<'py>,
    ck: &ferrotorch_serialize::pt::Checkpoint,
) -> PyResult<(Vec<Bound<'py, PyAny>>, usize)> {
    use ferrotorch_serialize::pickle::Obj;
    let mut out = Vec::with_capacity(ck.doc.objs.len());
    for (id, o) in ck.doc.objs.iter().enumerate() {
        let item: Bound<'py, PyAny> = match o {
            Obj::None => ("none", py.None()).into_pyobject(py)?.into_any(),
            Obj::Bool(b) => ("value", *b).into_pyobject(py)?.into_any(),
            Obj::Int(i) => ("value", *i).into_pyobject(py)?.into_any(),
            Obj::BigInt(b) => ("bigint", PyBytes::new(py, b))
                .into_pyobject(py)?
                .into_any(),
            Obj::Float(f) => ("value", *f).into_pyobject(py)?.into_any(),
            Obj::Complex(re, im) => ("complex", (*re, *im)).into_pyobject(py)?.into_any(),
            Obj::Str(s) => ("value", s.as_str()).into_pyobject(py)?.into_any(),
            Obj::Bytes(b) => ("value", PyBytes::new(py, b)).into_pyobject(py)?.into_any(),
            Obj::List(v) => ("list", v.clone()).into_pyobject(py)?.into_any(),
            Obj::Tuple(v) => ("tuple", v.clone()).into_pyobject(py)?.into_any(),
            Obj::Dict(v) => ("dict", v.clone()).into_pyobject(py)?.into_any(),
            Obj::OrderedDict(v, meta) => ("ordereddict", (v.clone(), *meta))
                .into_pyobject(py)?
                .into_any(),
            Obj::Set(v, frozen) => (if *frozen { "frozenset" } else { "set" }, v.clone())
                .into_pyobject(py)?
                .into_any(),
            Obj::Tensor { .. } => {
                let t = ck.tensor(id).ok_or_else(|| {
                    pyo3::exceptions::PyRuntimeError::new_err(
                        "torch.load: a tensor was not rebuilt",
                    )
                })?;
                ("tensor", wrap(py, t.clone())?)
                    .into_pyobject(py)?
                    .into_any()
            }
            Obj::Parameter { requires_grad, .. } => {
                let t = ck.tensor(id).ok_or_else(|| {
                    pyo3::exceptions::PyRuntimeError::new_err(
                        "torch.load: a parameter was not rebuilt",
                    )
                })?;
                ("parameter", (wrap(py, t.clone())?, *requires_grad))
                    .into_pyobject(py)?
                    .into_any()
            }
            Obj::Size(v) => ("size", v.clone()).into_pyobject(py)?.into_any(),
            Obj::DType(d) => ("dtype", *d).into_pyobject(py)?.into_any(),
            Obj::Device(d) => ("device", d.as_str()).into_pyobject(py)?.into_any(),
            Obj::Layout(l) => ("layout", l.as_str()).into_pyobject(py)?.into_any(),
            Obj::Object { class, args, state } => {
                ("object", (class.as_str(), args.clone(), *state))
                    .into_pyobject(py)?
                    .into_any()
            }
            // globals and persistent ids only appear inside what they build
            Obj::Global(_) | Obj::Persistent(_) => {
                ("internal", py.None()).into_pyobject(py)?.into_any()
            }
        };
        out.push(item);
    }
    Ok((out, ck.doc.root))
}

/// The tagged tree `_serialization._tree` makes, as the writer's value.
fn save_value(
    o: &Bound<'_, PyAny>,
    depth: usize,
) -> PyResult<ferrotorch_serialize::pickle_write::Value> {
    use ferrotorch_serialize::pickle_write::Value;
    use pyo3::exceptions::PyValueError;
    if depth > 1000 {
        return Err(PyValueError::new_err(
            "torch.save: the object nests deeper than 1000 levels",
        ));
    }
    let t: Bound<'_, pyo3::types::PyTuple> = o.clone().cast_into()?;
    let tag: String = t.get_item(0)?.extract()?;
    let at = |i: usize| t.get_item(i);
    let list = |i: usize| -> PyResult<Vec<Value>> {
        at(i)?
            .try_iter()?
            .map(|x| save_value(&x?, depth + 1))
            .collect()
    };
    let pairs = |i: usize| -> PyResult<Vec<(Value, Value)>> {
        at(i)?
            .try_iter()?
            .map(|kv| {
                let kv = kv?;
                Ok((
                    save_value(&kv.get_item(0)?, depth + 1)?,
                    save_value(&kv.get_item(1)?, depth + 1)?,
                ))
            })
            .collect()
    };
    let tensor = |i: usize| -> PyResult<ferrotorch_core::Tensor> {
        Ok(at(i)?.cast::<PyTensor>()?.borrow().t.clone())
    };
    Ok(match tag.as_str() {
        "none" => Value::None,
        "bool" => Value::Bool(at(1)?.extract()?),
        "int" => Value::Int(at(1)?.extract()?),
        "bigint" => Value::BigInt(at(1)?.extract()?),
        "float" => Value::Float(at(1)?.extract()?),
        "complex" => Value::Complex(at(1)?.extract()?, at(2)?.extract()?),
        "str" => Value::Str(at(1)?.extract()?),
        "bytes" => Value::Bytes(at(1)?.extract()?),
        "list" => Value::List(Some(at(1)?.extract()?), list(2)?),
        "tuple" => Value::Tuple(list(1)?),
        "dict" => Value::Dict(Some(at(1)?.extract()?), pairs(2)?),
        "odict" => {
            let attrs = at(3)?
                .try_iter()?
                .map(|kv| {
                    let kv = kv?;
                    Ok((
                        kv.get_item(0)?.extract()?,
                        save_value(&kv.get_item(1)?, depth + 1)?,
                    ))
                })
                .collect::<PyResult<Vec<_>>>()?;
            Value::OrderedDict(Some(at(1)?.extract()?), pairs(2)?, attrs)
        }
        "set" => Value::Set(list(1)?, at(2)?.extract()?),
        "tensor" => Value::Tensor(Some(at(1)?.extract()?), tensor(2)?, at(3)?.extract()?),
        "param" => Value::Parameter(Some(at(1)?.extract()?), tensor(2)?, at(3)?.extract()?),
        "size" => Value::Size(at(1)?.extract()?),
        "dtype" => {
            let name: String = at(1)?.extract()?;
            Value::DType(ferrotorch_core::DType::from_name(&name).ok_or_else(|| {
                PyValueError::new_err(format!("torch.save: unknown dtype {name}"))
            })?)
        }
        "device" => Value::Device(at(1)?.extract()?),
        "object" => Value::Object(
            Some(at(1)?.extract()?),
            at(2)?.extract()?,
            at(3)?.extract()?,
            Box::new(save_value(&at(4)?, depth + 1)?),
        ),
        "ref" => Value::Ref(at(1)?.extract()?),
        other => {
            return Err(PyValueError::new_err(format!(
                "torch.save: unknown tag {other}"
            )))
        }
    })
}

/// `_C._save_pt(tree, archive)`: the bytes of a `torch.save` zip of the
/// tagged tree (Note [Writing torch.save files]).
#[pyfunction]
pub fn _save_pt<'py>(
    py: Python<'py>,
    tree: &Bound<'py, PyAny>,
    archive: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let v = save_value(tree, 0)?;
    let bytes = py
        .detach(|| ferrotorch_serialize::pt::save_pt(&v, archive))
        .py()?;
    Ok(PyBytes::new(py, &bytes))
}
