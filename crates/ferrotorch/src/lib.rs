//! # ferrotorch
//!
//! PyTorch's architecture in Rust: tensors over shared, strided storage, one
//! dispatcher for every native op, PyTorch's dtypes, type promotion and
//! broadcasting, and vectorised, multithreaded CPU kernels.
//!
//! ```
//! use ferrotorch as torch;
//! use torch::DType;
//!
//! # fn main() -> torch::Result<()> {
//! let a = torch::tensor([[1.0, 2.0], [3.0, 4.0]])?;      // float32, like torch.tensor
//! let b = torch::arange(0, 2, 1, DType::F32)?;           // tensor([0., 1.])
//! let c = a.add(&b)?.mul(2.0)?;                          // broadcasting, wrapped scalars
//! assert_eq!(c.to_vec::<f32>()?, vec![2.0, 6.0, 6.0, 10.0]);
//! let t = a.t()?;                                        // a view: same storage
//! assert_eq!(t.data_ptr(), a.data_ptr());
//! assert_eq!(format!("{}", a.matmul(&t)?), "tensor([[ 5., 11.],\n        [11., 25.]])");
//! # Ok(())
//! # }
//! ```
//!
//! Every op returns [`Result`]: a mistake (shapes that don't broadcast, an
//! out-of-range dim, a dtype an op doesn't support) is an [`Error`] naming
//! the op, the shapes and the dtypes, never a panic.
//!
//! Tensors that require grad record the ops applied to them; [`autograd`]
//! runs them backwards (`backward`, `autograd::grad`, higher orders,
//! hooks, custom functions, `autograd::functional`).
//!
//! The same ops can be called by name through the [`dispatch`] module, as
//! the bindings and the JIT do.
//!
//! Features: `jit` (`torch.jit`, `torch.compile` and fx, with Cranelift),
//! `plugins` (`torch.ops.load_library`), `onnx` (`torch.onnx.export`),
//! `distributed` (`torch.distributed` on Gloo), `tensorboard`, `full` (all). Without them the
//! crate builds only what eager training needs.

/// The README's Rust examples, compiled and run as doctests (some use
/// `torch::jit`, `torch::ops` and `torch::distributed`: Note [Facade
/// features]).
#[doc = include_str!("../../../README.md")]
#[cfg(all(doctest, feature = "jit", feature = "plugins", feature = "distributed"))]
pub struct ReadmeDoctests;

pub use ferrotorch_core::autograd;
pub use ferrotorch_core::autograd::{
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled,
};
pub use ferrotorch_core::dispatch;
pub use ferrotorch_core::dtype;
pub use ferrotorch_core::library;
#[cfg(unix)]
pub use ferrotorch_core::multiprocessing;
pub use ferrotorch_core::native::random::{default_generator, manual_seed, Generator};
pub use ferrotorch_core::native::{cat, einsum, stack, where_, Operand};
/// `torch.profiler`: time ops, named ranges and backward nodes
/// (`profiler::profile`, `record_function`, `key_averages().table()`,
/// `export_chrome_trace`).
pub use ferrotorch_core::profiler;
pub use ferrotorch_core::storage::{self, Storage};
pub use ferrotorch_core::tensor::display::{get_printoptions, set_printoptions, PrintOptions};
pub use ferrotorch_core::tensor::layout;
pub use ferrotorch_core::{
    bf16, f16, get_default_dtype, promote_types, result_type, set_default_dtype, tensor, DType,
    Device, Error, ErrorKind, Result, Scalar, Tensor, TensorOptions,
};

/// `torch.ops`: ops registered at run time from plugins (Note [Plugin
/// ABI] in `ferrotorch-c`); ops defined in Rust are in [`library`].
/// Feature `plugins`.
#[cfg(feature = "plugins")]
pub mod ops {
    pub use ferrotorch_capi::plugin::{load_library, loaded_libraries, FT_PLUGIN_ABI_VERSION};
}

/// `torch.jit`: trace a function or module to a graph (`jit::trace`,
/// `jit::trace_module`), run it, compile it and save it. Feature `jit`
/// (it builds Cranelift): `ferrotorch = { version = "0.1", features = ["jit"] }`.
#[cfg(feature = "jit")]
pub mod jit {
    pub use ferrotorch_jit::*;
}

/// `torch.onnx`: a traced module written as an ONNX model
/// (`onnx::export(&traced, &opts)`, opset 18, IR version 10). Feature
/// `onnx` (with `jit`).
#[cfg(feature = "onnx")]
pub use ferrotorch_jit::onnx;

/// `torch.distributed`: `init_process_group("gloo" | "mpi")`, the
/// collectives on the default group (`all_reduce`, `broadcast`, ...),
/// stores for rendezvous (`TCPStore`) and process groups on Gloo and MPI
/// (`ProcessGroup`). `DistributedDataParallel` is in `nn::parallel`.
/// Feature `distributed`.
#[cfg(feature = "distributed")]
pub use ferrotorch_distributed as distributed;

/// `torch.nn`: modules (`#[derive(Module)]`), layers, `init` and
/// `functional`.
pub mod nn {
    pub use ferrotorch_nn::*;

    /// `torch.nn.parallel`: `DistributedDataParallel` (feature
    /// `distributed`).
    #[cfg(feature = "distributed")]
    pub mod parallel {
        pub use ferrotorch_distributed::parallel::*;
    }
}

/// Reference models with torchvision's names (`models::resnet18`).
pub use ferrotorch_nn::models;

/// Safetensors files (`safetensors.torch`): `save_file`, `load_file`.
pub use ferrotorch_nn::safetensors;

/// `torch.optim`: SGD, Adam, AdamW, RMSprop, Adagrad and `lr_scheduler`.
pub use ferrotorch_optim as optim;

/// PyTorch's files (`torch.load`): `.pt` checkpoints read without running
/// code (Note [A pickle reader without callables]).
pub mod serialization {
    pub use ferrotorch_serialize::pickle;
    pub use ferrotorch_serialize::pickle_write::Value;
    pub use ferrotorch_serialize::pt::{load_pt, save_pt, Checkpoint};

    /// A state dict as `torch.save(model.state_dict(), f)` writes it (an
    /// `OrderedDict` of tensors), for `torch.load` or [`load_state_dict_pt`].
    pub fn save_state_dict_pt(sd: &crate::nn::StateDict, archive: &str) -> crate::Result<Vec<u8>> {
        let items = sd
            .iter()
            .map(|(k, t)| {
                (
                    Value::Str(k.to_string()),
                    Value::Tensor(None, t.detach(), false),
                )
            })
            .collect();
        save_pt(&Value::OrderedDict(None, items, Vec::new()), archive)
    }

    /// A state dict `torch.save(model.state_dict(), f)` wrote, ready for
    /// `nn::Module::load_state_dict`.
    pub fn load_state_dict_pt(bytes: &[u8]) -> crate::Result<crate::nn::StateDict> {
        let mut sd = crate::nn::StateDict::new();
        for (k, t) in load_pt(bytes, &[])?.state_dict()? {
            sd.insert(k, t);
        }
        Ok(sd)
    }
}

pub mod utils;

/// Number of threads used by intra-op parallelism (`torch.get_num_threads`).
pub fn get_num_threads() -> usize {
    ferrotorch_kernels::parallel::get_num_threads()
}

/// Set the number of intra-op threads (`torch.set_num_threads`).
pub fn set_num_threads(n: usize) {
    ferrotorch_kernels::parallel::set_num_threads(n)
}

/// `torch.zeros`.
pub fn zeros(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
    Tensor::zeros(shape, opts)
}

/// `torch.ones`.
pub fn ones(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
    Tensor::ones(shape, opts)
}

/// `torch.empty`.
pub fn empty(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
    let o = opts.into();
    Tensor::empty(shape, o.dtype.unwrap_or_else(get_default_dtype))
}

/// `torch.full`.
pub fn full(
    shape: &[usize],
    value: impl Into<Scalar>,
    opts: impl Into<TensorOptions>,
) -> Result<Tensor> {
    Tensor::full(shape, value, opts)
}

/// `torch.arange(start, end, step)`.
pub fn arange(
    start: impl Into<Scalar>,
    end: impl Into<Scalar>,
    step: impl Into<Scalar>,
    opts: impl Into<TensorOptions>,
) -> Result<Tensor> {
    Tensor::arange(start, end, step, opts)
}

/// `torch.linspace`.
pub fn linspace(
    start: f64,
    end: f64,
    steps: usize,
    opts: impl Into<TensorOptions>,
) -> Result<Tensor> {
    Tensor::linspace(start, end, steps, opts)
}

/// `torch.logspace`.
pub fn logspace(
    start: f64,
    end: f64,
    steps: usize,
    base: f64,
    opts: impl Into<TensorOptions>,
) -> Result<Tensor> {
    Tensor::logspace(start, end, steps, base, opts)
}

/// `torch.eye`.
pub fn eye(n: usize, m: Option<usize>, opts: impl Into<TensorOptions>) -> Result<Tensor> {
    Tensor::eye(n, m, opts)
}

/// `torch.rand`.
pub fn rand(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
    Tensor::rand(shape, opts)
}

/// `torch.randn`.
pub fn randn(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
    Tensor::randn(shape, opts)
}

/// `torch.randint(low, high, size)`.
pub fn randint(
    low: i64,
    high: i64,
    shape: &[usize],
    opts: impl Into<TensorOptions>,
) -> Result<Tensor> {
    Tensor::randint(low, high, shape, opts)
}

/// `torch.randperm(n)`.
pub fn randperm(n: usize) -> Result<Tensor> {
    Tensor::randperm(n, None)
}

/// `torch.matmul(a, b)`.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.matmul(b)
}
