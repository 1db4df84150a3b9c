//! `torch.distributed`'s native half: stores and the process groups (Gloo,
//! MPI) of `ferrotorch-distributed`, for `ferrotorch/distributed` (Python).

use crate::errors::guarded;
use crate::tensor::PyTensor;
use ferrotorch_distributed::{
    HashStore, PrefixStore, ProcessGroup, ProcessGroupGloo, ProcessGroupMPI, ReduceOp, Store,
    TCPStore,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;
use std::time::Duration;

/// A store (`torch.distributed.Store`'s native part).
#[pyclass(name = "_Store", module = "ferrotorch._C", frozen)]
pub struct PyStore {
    s: Arc<dyn Store>,
}

fn secs(t: f64) -> Duration {
    Duration::from_secs_f64(t.max(0.0))
}

#[pymethods]
impl PyStore {
    fn set(&self, py: Python<'_>, key: &str, value: Vec<u8>) -> PyResult<()> {
        let s = self.s.clone();
        py.detach(|| guarded("Store.set", || s.set(key, &value)))
    }

    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.s.clone();
        let v = py.detach(|| guarded("Store.get", || s.get(key)))?;
        Ok(PyBytes::new(py, &v))
    }

    fn add(&self, py: Python<'_>, key: &str, amount: i64) -> PyResult<i64> {
        let s = self.s.clone();
        py.detach(|| guarded("Store.add", || s.add(key, amount)))
    }

    fn compare_set<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        expected: Vec<u8>,
        desired: Vec<u8>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.s.clone();
        let v = py.detach(|| {
            guarded("Store.compare_set", || {
                s.compare_set(key, &expected, &desired)
            })
        })?;
        Ok(PyBytes::new(py, &v))
    }

    #[pyo3(signature = (keys, timeout=None))]
    fn wait(&self, py: Python<'_>, keys: Vec<String>, timeout: Option<f64>) -> PyResult<()> {
        let s = self.s.clone();
        py.detach(|| guarded("Store.wait", || s.wait(&keys, timeout.map(secs))))
    }

    fn check(&self, py: Python<'_>, keys: Vec<String>) -> PyResult<bool> {
        let s = self.s.clone();
        py.detach(|| guarded("Store.check", || s.check(&keys)))
    }

    fn delete_key(&self, py: Python<'_>, key: &str) -> PyResult<bool> {
        let s = self.s.clone();
        py.detach(|| guarded("Store.delete_key", || s.delete_key(key)))
    }

    fn num_keys(&self, py: Python<'_>) -> PyResult<i64> {
        let s = self.s.clone();
        py.detach(|| guarded("Store.num_keys", || s.num_keys()))
    }

    fn timeout(&self) -> f64 {
        self.s.timeout().as_secs_f64()
    }

    fn set_timeout(&self, t: f64) {
        self.s.set_timeout(secs(t));
    }
}

/// `_C._tcp_store(host, port, is_master, timeout)`: a store and its port.
#[pyfunction]
pub fn _tcp_store(
    py: Python<'_>,
    host: &str,
    port: u16,
    is_master: bool,
    timeout: f64,
) -> PyResult<(PyStore, u16)> {
    let s = py.detach(|| {
        guarded("TCPStore", || {
            TCPStore::new(host, port, is_master, secs(timeout))
        })
    })?;
    let port = s.port();
    Ok((PyStore { s: Arc::new(s) }, port))
}

/// `_C._file_store(path, world_size)`.
#[pyfunction]
#[pyo3(signature = (path, world_size=None))]
pub fn _file_store(path: &str, world_size: Option<usize>) -> PyResult<PyStore> {
    let s = guarded("FileStore", || {
        ferrotorch_distributed::FileStore::new(path, world_size)
    })?;
    Ok(PyStore { s: Arc::new(s) })
}

/// `_C._hash_store()`.
#[pyfunction]
pub fn _hash_store() -> PyStore {
    PyStore {
        s: Arc::new(HashStore::new()),
    }
}

/// `_C._prefix_store(prefix, store)`.
#[pyfunction]
pub fn _prefix_store(prefix: &str, store: &PyStore) -> PyStore {
    PyStore {
        s: Arc::new(PrefixStore::new(prefix, store.s.clone())),
    }
}

/// `_C._is_gloo_available()`, and why not.
#[pyfunction]
pub fn _gloo_availability() -> (bool, &'static str) {
    (
        ferrotorch_distributed::is_gloo_available(),
        ferrotorch_distributed::gloo::UNAVAILABLE,
    )
}

/// `_C._mpi_availability()`, and why not.
#[pyfunction]
pub fn _mpi_availability() -> (bool, &'static str) {
    (
        ferrotorch_distributed::is_mpi_available(),
        ferrotorch_distributed::mpi::UNAVAILABLE,
    )
}

/// `_C._mpi_world()`: (rank, world size) as MPI sees them (MPI starts on
/// first use).
#[pyfunction]
pub fn _mpi_world(py: Python<'_>) -> PyResult<(usize, usize)> {
    py.detach(|| guarded("init_process_group", ferrotorch_distributed::mpi::world))
}

/// `_C._gloo_group(store, rank, size, hostname, timeout)`: a connected
/// Gloo group.
#[pyfunction]
pub fn _gloo_group(
    py: Python<'_>,
    store: &PyStore,
    rank: usize,
    size: usize,
    hostname: &str,
    timeout: f64,
) -> PyResult<PyProcessGroup> {
    let s = store.s.clone();
    let g = py.detach(|| {
        guarded("init_process_group", || {
            ProcessGroupGloo::connect(s, rank, size, hostname, secs(timeout))
        })
    })?;
    Ok(PyProcessGroup { g: Arc::new(g) })
}

/// `_C._mpi_group(ranks, timeout)`: an MPI group of those world ranks
/// (`None`: the world); only its members call it. A call that waits
/// longer than `timeout` seconds for the others ends the job.
#[pyfunction]
#[pyo3(signature = (ranks, timeout))]
pub fn _mpi_group(
    py: Python<'_>,
    ranks: Option<Vec<usize>>,
    timeout: f64,
) -> PyResult<PyProcessGroup> {
    let g = py.detach(|| {
        guarded("new_group", || {
            ProcessGroupMPI::create(ranks.as_deref(), secs(timeout))
        })
    })?;
    Ok(PyProcessGroup { g: Arc::new(g) })
}

/// A process group's native part (Gloo or MPI).
#[pyclass(name = "_ProcessGroup", module = "ferrotorch._C", frozen)]
pub struct PyProcessGroup {
    g: Arc<ProcessGroup>,
}

fn op(name: &str) -> PyResult<ReduceOp> {
    Ok(match name {
        "SUM" => ReduceOp::Sum,
        "AVG" => ReduceOp::Avg,
        "PRODUCT" => ReduceOp::Product,
        "MIN" => ReduceOp::Min,
        "MAX" => ReduceOp::Max,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "all_reduce: ReduceOp.{other} is not supported by the gloo and mpi backends"
            )))
        }
    })
}

#[pymethods]
impl PyProcessGroup {
    fn rank(&self) -> usize {
        self.g.rank()
    }

    fn size(&self) -> usize {
        self.g.size()
    }

    fn all_reduce(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, op_name: &str) -> PyResult<()> {
        let (g, t, o) = (self.g.clone(), t.t.clone(), op(op_name)?);
        py.detach(|| guarded("all_reduce", || g.all_reduce(&t, o)))
    }

    fn broadcast(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, src: usize) -> PyResult<()> {
        let (g, t) = (self.g.clone(), t.t.clone());
        py.detach(|| guarded("broadcast", || g.broadcast(&t, src)))
    }

    fn all_gather<'py>(
        &self,
        py: Python<'py>,
        t: PyRef<'py, PyTensor>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let (g, t) = (self.g.clone(), t.t.clone());
        let out = py.detach(|| guarded("all_gather", || g.all_gather(&t)))?;
        out.into_iter()
            .map(|t| crate::convert::wrap(py, t))
            .collect()
    }

    fn all_gather_into(
        &self,
        py: Python<'_>,
        out: PyRef<'_, PyTensor>,
        t: PyRef<'_, PyTensor>,
    ) -> PyResult<()> {
        let (g, out, t) = (self.g.clone(), out.t.clone(), t.t.clone());
        py.detach(|| guarded("all_gather_into_tensor", || g.all_gather_into(&out, &t)))
    }

    fn backend(&self) -> &'static str {
        self.g.backend()
    }

    fn reduce(
        &self,
        py: Python<'_>,
        t: PyRef<'_, PyTensor>,
        dst: usize,
        op_name: &str,
    ) -> PyResult<()> {
        let (g, t, o) = (self.g.clone(), t.t.clone(), op(op_name)?);
        py.detach(|| guarded("reduce", || g.reduce(&t, dst, o)))
    }

    fn gather<'py>(
        &self,
        py: Python<'py>,
        t: PyRef<'py, PyTensor>,
        dst: usize,
    ) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
        let (g, t) = (self.g.clone(), t.t.clone());
        let out = py.detach(|| guarded("gather", || g.gather(&t, dst)))?;
        out.map(|v| v.into_iter().map(|t| crate::convert::wrap(py, t)).collect())
            .transpose()
    }

    #[pyo3(signature = (out, src, pieces=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        out: PyRef<'_, PyTensor>,
        src: usize,
        pieces: Option<Vec<PyRef<'_, PyTensor>>>,
    ) -> PyResult<()> {
        let (g, out) = (self.g.clone(), out.t.clone());
        let ps: Option<Vec<ferrotorch_core::Tensor>> =
            pieces.map(|v| v.iter().map(|p| p.t.clone()).collect());
        py.detach(|| guarded("scatter", || g.scatter(&out, src, ps.as_deref())))
    }

    fn all_to_all_single(
        &self,
        py: Python<'_>,
        out: PyRef<'_, PyTensor>,
        input: PyRef<'_, PyTensor>,
    ) -> PyResult<()> {
        let (g, out, input) = (self.g.clone(), out.t.clone(), input.t.clone());
        py.detach(|| guarded("all_to_all_single", || g.all_to_all_single(&out, &input)))
    }

    fn all_to_all_single_uneven(
        &self,
        py: Python<'_>,
        out: PyRef<'_, PyTensor>,
        input: PyRef<'_, PyTensor>,
        output_splits: Vec<usize>,
        input_splits: Vec<usize>,
    ) -> PyResult<()> {
        let (g, out, input) = (self.g.clone(), out.t.clone(), input.t.clone());
        py.detach(|| {
            guarded("all_to_all_single", || {
                g.all_to_all_single_uneven(&out, &input, &output_splits, &input_splits)
            })
        })
    }

    fn send(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, dst: usize, tag: u64) -> PyResult<()> {
        let (g, t) = (self.g.clone(), t.t.clone());
        py.detach(|| guarded("send", || g.send(&t, dst, tag)))
    }

    fn recv(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, src: usize, tag: u64) -> PyResult<()> {
        let (g, t) = (self.g.clone(), t.t.clone());
        py.detach(|| guarded("recv", || g.recv(&t, src, tag)))
    }

    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.g.clone();
        py.detach(|| guarded("barrier", || g.barrier()))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStore>()?;
    m.add_class::<PyProcessGroup>()?;
    m.add_function(wrap_pyfunction!(_gloo_group, m)?)?;
    m.add_function(wrap_pyfunction!(_mpi_group, m)?)?;
    m.add_function(wrap_pyfunction!(_mpi_world, m)?)?;
    m.add_function(wrap_pyfunction!(_mpi_availability, m)?)?;
    m.add_function(wrap_pyfunction!(_tcp_store, m)?)?;
    m.add_function(wrap_pyfunction!(_hash_store, m)?)?;
    m.add_function(wrap_pyfunction!(_file_store, m)?)?;
    m.add_function(wrap_pyfunction!(_prefix_store, m)?)?;
    m.add_function(wrap_pyfunction!(_gloo_availability, m)?)
}
