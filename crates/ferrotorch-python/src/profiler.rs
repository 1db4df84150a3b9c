//! `torch.profiler`'s native half: start and stop the dispatcher's
//! profiler (Note [Profiling at the dispatcher]) and read its results; the
//! Python package (`ferrotorch/profiler`) holds `profile`, `schedule` and
//! the result classes over these.

use crate::errors::IntoPy;
use ferrotorch_core::profiler::{self, EventKind, Profile, Profiled, RecordFunction};
use pyo3::prelude::*;

/// A running profile (the key is included on the thread that started it).
#[pyclass(name = "_ProfilerSession", module = "ferrotorch._C", unsendable)]
pub struct PyProfile {
    inner: Option<Profile>,
}

/// Start profiling this thread.
#[pyfunction]
pub fn _profiler_start(record_shapes: bool) -> PyResult<PyProfile> {
    let p = profiler::profile(profiler::ProfilerOptions { record_shapes }).py()?;
    Ok(PyProfile { inner: Some(p) })
}

#[pymethods]
impl PyProfile {
    /// Stop (once) and return the recorded events.
    fn stop(&mut self) -> PyResult<PyProfiled> {
        match self.inner.take() {
            Some(p) => Ok(PyProfiled { inner: p.stop() }),
            None => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the profiler was already stopped",
            )),
        }
    }
}

/// A stopped profile's events.
#[pyclass(name = "_ProfilerResult", module = "ferrotorch._C")]
pub struct PyProfiled {
    inner: Profiled,
}

type EventRow = (String, &'static str, u64, f64, f64, Vec<Vec<usize>>);
type AvgRow = (String, Vec<Vec<usize>>, usize, f64, f64);

#[pymethods]
impl PyProfiled {
    /// `(name, kind, thread, start_us, end_us, input_shapes)` per event.
    fn events(&self) -> Vec<EventRow> {
        self.inner
            .events()
            .iter()
            .map(|e| {
                let kind = match e.kind {
                    EventKind::Op => "op",
                    EventKind::UserAnnotation => "user_annotation",
                    EventKind::Backward => "backward",
                };
                let shapes = e.input_shapes.clone();
                (e.name.clone(), kind, e.thread, e.start_us, e.end_us, shapes)
            })
            .collect()
    }

    /// `(key, input_shapes, count, cpu_time_total, self_cpu_time_total)`.
    fn key_averages(&self, group_by_input_shape: bool) -> Vec<AvgRow> {
        self.inner
            .key_averages(group_by_input_shape)
            .iter()
            .map(|r| {
                let t = (r.cpu_time_total, r.self_cpu_time_total);
                (r.key.clone(), r.input_shapes.clone(), r.count, t.0, t.1)
            })
            .collect()
    }

    /// The table, as `key_averages().table(...)` prints it.
    #[pyo3(signature = (group_by_input_shape, sort_by=None, row_limit=100))]
    fn table(
        &self,
        group_by_input_shape: bool,
        sort_by: Option<String>,
        row_limit: usize,
    ) -> String {
        self.inner
            .key_averages(group_by_input_shape)
            .table(sort_by.as_deref(), row_limit)
    }

    /// Write a Chrome trace.
    fn export_chrome_trace(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.export_chrome_trace(path).py()
    }
}

/// An open `record_function` range.
#[pyclass(name = "_RecordFunction", module = "ferrotorch._C", unsendable)]
pub struct PyRecordFunction {
    inner: Option<RecordFunction>,
}

/// Open a named range (timed only while a profile runs).
#[pyfunction]
pub fn _record_function_enter(name: &str) -> PyRecordFunction {
    PyRecordFunction {
        inner: Some(profiler::record_function(name)),
    }
}

#[pymethods]
impl PyRecordFunction {
    /// Close the range.
    fn exit(&mut self) {
        self.inner.take();
    }
}

/// Register the profiler's functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_profiler_start, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function_enter, m)?)?;
    m.add_class::<PyProfile>()?;
    m.add_class::<PyProfiled>()?;
    m.add_class::<PyRecordFunction>()?;
    m.add_function(wrap_pyfunction!(_profiler_enabled, m)?)?;
    Ok(())
}

/// Whether a profile is running.
#[pyfunction]
fn _profiler_enabled() -> bool {
    profiler::is_enabled()
}
