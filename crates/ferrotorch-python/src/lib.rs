//! `ferrotorch._C`: the native half of the `ferrotorch` Python package.
//!
//! The layout follows torch's: a native `Tensor` type with the protocols
//! and metadata ([`tensor`], [`operators`], [`index`], [`numpy`]), every
//! op callable by name through the dispatcher ([`ops`]), autograd entry
//! points ([`autograd`]), tracing ([`jit`]); the Python half (`python/ferrotorch/`) generates
//! the op functions and methods from the schemas and holds `nn`, `optim`
//! and `utils.data`, as torch's Python layer does.

// The module is named `_C`, as torch's is.
#![allow(non_snake_case)]

mod amp;
mod autograd;
mod codegen;
mod convert;
mod create;
mod distributed;
mod dlpack;
mod dtype;
mod errors;
mod generator;
mod graph_hooks;
mod index;
mod jit;
mod jit_graph;
mod library;
mod numpy;
mod onnx;
mod operators;
mod ops;
mod optim;
mod printing;
mod profiler;
mod script_object;
mod serialization;
mod shared;
mod storage;
mod tensor;

use pyo3::prelude::*;

/// `ferrotorch.manual_seed(seed)` for the default generator.
#[pyfunction]
fn manual_seed(seed: i64) {
    ferrotorch_core::native::random::manual_seed(seed as u64);
}

/// `ferrotorch.set_num_threads(n)`: intra-op threads.
#[pyfunction]
fn set_num_threads(n: usize) -> PyResult<()> {
    if n == 0 {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "set_num_threads expects a positive integer",
        ));
    }
    ferrotorch_kernels::parallel::set_num_threads(n);
    Ok(())
}

/// `ferrotorch.get_num_threads()`.
#[pyfunction]
fn get_num_threads() -> usize {
    ferrotorch_kernels::parallel::get_num_threads()
}

/// `ferrotorch.get_default_dtype()`.
#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> Bound<'_, dtype::PyDType> {
    dtype::dtype_object(py, ferrotorch_core::get_default_dtype())
}

/// `ferrotorch.set_default_dtype(d)`.
#[pyfunction]
fn set_default_dtype(d: PyRef<'_, dtype::PyDType>) -> PyResult<()> {
    errors::IntoPy::py(ferrotorch_core::set_default_dtype(d.dtype))
}

#[pymodule]
fn _C(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // nn's functional ops join the core's in the dispatcher before the
    // Python side generates its functions from the schemas.
    ferrotorch_nn::functional::register_ops();
    ferrotorch_core::dispatch::binding::register_test_ops_if_asked();
    dtype::register(m)?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<tensor::PyNode>()?;
    m.add_class::<storage::PyUntypedStorage>()?;
    m.add("_LinAlgError", m.py().get_type::<errors::_LinAlgError>())?;
    m.add_class::<autograd::PyRemovableHandle>()?;
    m.add_function(wrap_pyfunction!(ops::_call_op, m)?)?;
    m.add_class::<library::PyLibrary>()?;
    m.add_class::<script_object::PyScriptObject>()?;
    m.add_function(wrap_pyfunction!(script_object::_construct_class, m)?)?;
    m.add_function(wrap_pyfunction!(
        script_object::_script_object_from_state,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(script_object::_class_exists, m)?)?;
    m.add_function(wrap_pyfunction!(script_object::_class_names, m)?)?;
    m.add_function(wrap_pyfunction!(script_object::_class_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(script_object::_register_tensor_queue, m)?)?;
    m.add_function(wrap_pyfunction!(script_object::_register_test_gil_op, m)?)?;
    m.add_function(wrap_pyfunction!(library::_op_exists, m)?)?;
    m.add_function(wrap_pyfunction!(library::_call_fake, m)?)?;
    m.add_function(wrap_pyfunction!(library::_op_schema, m)?)?;
    m.add_function(wrap_pyfunction!(library::_op_arguments, m)?)?;
    m.add_function(wrap_pyfunction!(library::_op_overloads, m)?)?;
    m.add_function(wrap_pyfunction!(library::_load_library, m)?)?;
    m.add_function(wrap_pyfunction!(library::_loaded_libraries, m)?)?;
    m.add_function(wrap_pyfunction!(shared::_share_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(shared::_tensor_from_shared, m)?)?;
    m.add_function(wrap_pyfunction!(shared::_shared_files, m)?)?;
    m.add_function(wrap_pyfunction!(shared::_empty_shared, m)?)?;
    m.add_function(wrap_pyfunction!(shared::_stack_shared, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_trace, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_is_tracing, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_set_static_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_load, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_load_bytes, m)?)?;
    m.add_class::<jit::PyScriptModule>()?;
    m.add_class::<codegen::PyNativeFunction>()?;
    m.add_function(wrap_pyfunction!(codegen::_jit_compile_scalar, m)?)?;
    m.add_function(wrap_pyfunction!(codegen::_jit_scalar_wasm, m)?)?;
    m.add_function(wrap_pyfunction!(codegen::_jit_set_texpr_fuser_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(codegen::_jit_texpr_fuser_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(codegen::_fusion_set_logging, m)?)?;
    m.add_function(wrap_pyfunction!(codegen::_fusion_stats, m)?)?;
    m.add_function(wrap_pyfunction!(codegen::_jit_scalar_unary_names, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_enter_module, m)?)?;
    m.add_function(wrap_pyfunction!(jit::_jit_exit_module, m)?)?;
    jit_graph::register(m)?;
    onnx::register(m)?;
    distributed::register(m)?;
    profiler::register(m)?;
    m.add_function(wrap_pyfunction!(ops::_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(create::tensor, m)?)?;
    m.add_function(wrap_pyfunction!(create::as_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(create::from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(create::_check_device, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::_to_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_safetensors_save, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_safetensors_load, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_load_pt, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_pt_classes, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_pt_classes_file, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_save_pt, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_load_pt_mmap, m)?)?;
    m.add_function(wrap_pyfunction!(serialization::_load_pt_file, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_set_detect_anomaly, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(printing::_set_printoptions, m)?)?;
    m.add_function(wrap_pyfunction!(printing::_get_printoptions, m)?)?;
    m.add_function(wrap_pyfunction!(amp::_autocast_enter, m)?)?;
    m.add_function(wrap_pyfunction!(amp::_autocast_exit, m)?)?;
    m.add_function(wrap_pyfunction!(amp::_autocast_is_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(amp::_autocast_get_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(amp::_autocast_set_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_modes, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_set_modes, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_backward, m)?)?;
    graph_hooks::register(m)?;
    m.add_function(wrap_pyfunction!(autograd::_grad, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_function_apply, m)?)?;
    m.add_function(wrap_pyfunction!(optim::_adam_step, m)?)?;
    m.add_function(wrap_pyfunction!(optim::_sgd_step, m)?)?;
    m.add_class::<generator::PyGenerator>()?;
    m.add_function(wrap_pyfunction!(generator::_random_seed, m)?)?;
    m.add_function(wrap_pyfunction!(generator::_default_generator, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    Ok(())
}
