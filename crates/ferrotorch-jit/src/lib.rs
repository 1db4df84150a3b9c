//! `torch.jit` and `torch.compile` for ferrotorch: tracing through the
//! dispatcher to a graph IR ([`ir`]), printed as TorchScript prints it, an
//! interpreter that runs the graph with autograd, and fusion groups run as
//! native kernels ([`fuser`], Note [Fusion runtime]).
//!
//! ```
//! use ferrotorch_core::Tensor;
//! let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3]).unwrap();
//! let m = ferrotorch_jit::trace(|t| Ok(vec![t[0].exp()?.add(&t[0])?]), &[x.clone()]).unwrap();
//! assert!(m.graph().to_string().contains("aten::exp"));
//! let y = m.forward(&[x.clone()]).unwrap();
//! assert_eq!(y[0].to_vec::<f32>().unwrap(), x.exp().unwrap().add(&x).unwrap().to_vec::<f32>().unwrap());
//! ```
//!
//! [`ScriptModule::save`] / [`load`] write and read a traced module as one
//! checked file (Note [Saved programs]). [`passes`] simplify graphs (Note
//! [Pass order]); [`passes::optimize_for_inference`] freezes and runs them.
//! [`compile`] / [`compile_module`] are `torch.compile`: traced, fused and
//! compiled per input signature, with guards (Note [Compiled functions]).

mod code;
mod compile;
pub mod fuser;
pub mod inline;
pub mod interpreter;
pub mod ir;
mod module;
#[cfg(feature = "onnx")]
pub mod onnx;
pub mod passes;
mod prepack;
mod print;
pub mod serialize;
pub mod torchscript;
mod tracer;
pub use ferrotorch_serialize::zip;

pub use compile::{compile, compile_module, Compiled, CACHE_LIMIT};
pub use module::{Attr, ScriptModule};
pub use serialize::{load, load_bytes};
pub use tracer::{enter_module, exit_module, is_tracing, size};

use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn::Module;

/// Trace a function of tensors (`torch.jit.trace(fn, example_inputs)`):
/// every op it runs on `inputs` becomes a node; tensors it uses that are
/// not inputs become constants.
pub fn trace(
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
) -> Result<ScriptModule> {
    let (graph, warnings) = tracer::trace_graph(Default::default(), inputs, f)?;
    Ok(ScriptModule {
        graph,
        attrs: Vec::new(),
        warnings,
    })
}

/// Trace a function of tensors and custom class objects (Note [Objects
/// in graphs]): calls that use an object become `prim::with_effects`
/// nodes, in order; run the result with [`ScriptModule::forward_values`].
pub fn trace_values(
    f: impl FnOnce(&[IValue]) -> Result<Vec<IValue>>,
    inputs: &[IValue],
) -> Result<ScriptModule> {
    let (graph, warnings) = tracer::trace_values(Default::default(), inputs, f)?;
    Ok(ScriptModule {
        graph,
        attrs: Vec::new(),
        warnings,
    })
}

/// [`trace_with_attributes`] of a function of tensors and custom class
/// objects (a binding's module whose `forward` takes objects).
pub fn trace_values_with_attributes(
    module_name: &str,
    attrs: Vec<(String, Tensor)>,
    inputs: &[IValue],
    f: impl FnOnce(&[IValue]) -> Result<Vec<IValue>>,
) -> Result<ScriptModule> {
    let info = tracer::ModuleInfo {
        name: Some(module_name),
        attrs: &attrs,
        modules: Default::default(),
    };
    let (graph, warnings) = tracer::trace_values(info, inputs, f)?;
    Ok(ScriptModule {
        graph,
        warnings,
        attrs: attrs
            .into_iter()
            .map(|(n, t)| (n, Attr::Tensor(t)))
            .collect(),
    })
}

/// Trace `forward` of `module` on `inputs` (`torch.jit.trace(module, x)`):
/// its parameters and buffers are read as attributes (`prim::GetAttr`),
/// shared with the module, so the traced module computes with (and trains)
/// the module's own tensors.
pub fn trace_module<M: Module + ?Sized>(
    module: &M,
    inputs: &[Tensor],
    forward: impl FnOnce(&M, &[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<ScriptModule> {
    let mut attrs: Vec<(String, Attr)> = module
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, Attr::Parameter(p)))
        .collect();
    attrs.extend(
        module
            .named_buffers()
            .into_iter()
            .map(|(n, b)| (n, Attr::Buffer(b))),
    );
    let named: Vec<(String, Tensor)> = attrs.iter().map(|(n, a)| (n.clone(), a.tensor())).collect();
    // submodules by address and type (a struct and its first field can
    // share an address, never a type)
    let modules = module
        .named_modules()
        .into_iter()
        .map(|(n, m)| {
            let key = (
                m as *const dyn Module as *const u8 as usize,
                m.type_name().to_string(),
            );
            (key, n)
        })
        .collect();
    let info = tracer::ModuleInfo {
        name: Some(module.type_name()),
        attrs: &named,
        modules,
    };
    let (graph, warnings) = tracer::trace_graph(info, inputs, |x| forward(module, x))?;
    Ok(ScriptModule {
        graph,
        attrs,
        warnings,
    })
}

/// Trace `f` with the given named tensors read as attributes of a module
/// called `module_name` (how a binding traces its own modules): the
/// attributes are shared, not copied.
pub fn trace_with_attributes(
    module_name: &str,
    attrs: Vec<(String, Tensor)>,
    inputs: &[Tensor],
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<ScriptModule> {
    let values: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
    trace_values_with_attributes(module_name, attrs, &values, |_| {
        Ok(f(inputs)?.into_iter().map(IValue::Tensor).collect())
    })
}
