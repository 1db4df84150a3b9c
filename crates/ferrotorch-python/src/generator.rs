//! `ferrotorch.Generator`. Its streams are torch's CPU streams (Note
//! [PyTorch-compatible random streams] in the core), so a sampler seeded the
//! same way draws the same indices as torch's. Ops take it as their
//! `generator=` argument (a `Generator?` in their schema).

use crate::errors::to_py;
use crate::tensor::PyTensor;
use ferrotorch_core::native::random::{default_generator, Generator};
use ferrotorch_core::{DType, Tensor};
use pyo3::prelude::*;

/// `torch.Generator(device='cpu')`: an independent Mersenne-Twister stream.
#[pyclass(name = "Generator", module = "ferrotorch", frozen)]
pub struct PyGenerator {
    /// The core generator (shared handle).
    pub g: Generator,
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        crate::create::check_cpu(device)?;
        Ok(PyGenerator {
            g: Generator::new(67_280_421_310_721),
        })
    }

    /// Reseed; returns the generator.
    fn manual_seed(slf: Bound<'_, Self>, seed: i64) -> Bound<'_, Self> {
        slf.get().g.manual_seed(seed as u64);
        slf
    }

    /// The seed last set.
    fn initial_seed(&self) -> u64 {
        self.g.initial_seed()
    }

    /// Reseed from the operating system's entropy; returns the seed.
    fn seed(&self) -> u64 {
        let s = std::collections::hash_map::RandomState::new();
        let seed = std::hash::BuildHasher::hash_one(&s, std::time::SystemTime::now()) >> 1;
        self.g.manual_seed(seed);
        seed
    }

    /// `"cpu"`.
    #[getter]
    fn device(&self) -> &'static str {
        "cpu"
    }

    /// The state as torch's uint8 tensor of 5,056 bytes (Note [Generator
    /// state bytes] in the core): restorable here and in torch.
    fn get_state(&self) -> PyTensor {
        PyTensor::new_wrapper(Tensor::from_slice(&self.g.get_state_bytes()))
    }

    /// Restore a state `get_state` (here or in torch) returned; returns
    /// the generator.
    fn set_state<'py>(
        slf: Bound<'py, Self>,
        new_state: PyRef<'_, PyTensor>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = &new_state.t;
        if t.dtype() != DType::U8 {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "expected a torch.ByteTensor, but got {}",
                t.dtype()
            )));
        }
        let bytes = t.to_vec::<u8>().map_err(to_py)?;
        slf.get().g.set_state_bytes(&bytes).map_err(to_py)?;
        Ok(slf)
    }

    /// A new generator with this one's state (`torch.Generator.clone_state`).
    fn clone_state(&self) -> PyGenerator {
        PyGenerator {
            g: self.g.get_state(),
        }
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (), Option<PyTensor>)> {
        let cls = slf.get_type().into_any();
        Ok((cls, (), Some(slf.get().get_state())))
    }

    fn __setstate__(&self, state: PyRef<'_, PyTensor>) -> PyResult<()> {
        let bytes = state.t.to_vec::<u8>().map_err(to_py)?;
        self.g.set_state_bytes(&bytes).map_err(to_py)
    }
}

/// `torch.default_generator`: the process's default generator, shared.
#[pyfunction]
pub fn _default_generator() -> PyGenerator {
    PyGenerator {
        g: default_generator().clone(),
    }
}

fn gen_of(g: &Option<PyRef<'_, PyGenerator>>) -> Option<Generator> {
    g.as_ref().map(|g| g.g.clone())
}

/// A seed drawn as `torch.empty((), dtype=torch.int64).random_(generator=g)`
/// draws it (from the default generator when `g` is None): what torch's
/// samplers and DataLoader iterators do.
#[pyfunction]
#[pyo3(signature = (generator=None))]
pub fn _random_seed(generator: Option<PyRef<'_, PyGenerator>>) -> u64 {
    let g = gen_of(&generator);
    g.as_ref().unwrap_or_else(|| default_generator()).next_u64() % (1u64 << 63)
}
