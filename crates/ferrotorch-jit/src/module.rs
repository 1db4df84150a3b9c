//! `ScriptModule`: a traced graph with the module's parameters and
//! buffers as attributes, run by the interpreter.

use crate::interpreter::run;
use crate::ir::{Graph, ValueType};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{Error, ErrorKind, Result, Tensor};
use ferrotorch_nn::{Buffer, Parameter};

/// Where an attribute's tensor lives.
#[derive(Clone)]
pub enum Attr {
    /// A parameter of the traced module (shared: training the script
    /// module trains the original).
    Parameter(Parameter),
    /// A buffer of the traced module.
    Buffer(Buffer),
    /// A tensor given by the caller (a binding's module attribute).
    Tensor(Tensor),
}

impl Attr {
    /// The tensor it holds now.
    pub fn tensor(&self) -> Tensor {
        match self {
            Attr::Parameter(p) => p.tensor(),
            Attr::Buffer(b) => b.tensor(),
            Attr::Tensor(t) => t.clone(),
        }
    }
}

/// A traced function or module (`torch.jit.ScriptModule`).
#[derive(Clone)]
pub struct ScriptModule {
    pub(crate) graph: Graph,
    pub(crate) attrs: Vec<(String, Attr)>,
    pub(crate) warnings: Vec<String>,
}

impl ScriptModule {
    /// The graph (`module.graph`).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The graph with every submodule call inlined (`inlined_graph`,
    /// Note [Module hierarchy]).
    pub fn inlined_graph(&self) -> Result<Graph> {
        crate::inline::inline_calls(&self.graph)
    }

    /// The graph as TorchScript-style source (`module.code`).
    pub fn code(&self) -> String {
        crate::code::code(&self.graph)
    }

    /// The graph, to rewrite in place (passes).
    pub fn graph_mut(&mut self) -> &mut Graph {
        &mut self.graph
    }

    /// What tracing warned about (`TracerWarning`): tensors that ops the
    /// tracer did not record made during the trace, now constants. Empty
    /// for a loaded program.
    pub fn trace_warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Its attributes (parameters and buffers), by qualified name.
    pub fn attributes(&self) -> &[(String, Attr)] {
        &self.attrs
    }

    /// Save to `path` (`module.save(path)`, Note [Saved programs]).
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        crate::serialize::save(self, path)
    }

    /// The saved file's bytes.
    pub fn save_to_bytes(&self) -> Result<Vec<u8>> {
        crate::serialize::save_bytes(self)
    }

    /// Run the graph on `inputs` (`module(x)`): its tensor outputs.
    pub fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let values: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
        self.forward_values(&values)?
            .into_iter()
            .map(IValue::into_tensor)
            .collect()
    }

    /// Run the graph on tensors and custom class objects (a graph traced
    /// with [`crate::trace_values`]): its outputs.
    pub fn forward_values(&self, inputs: &[IValue]) -> Result<Vec<IValue>> {
        let mut args: Vec<IValue> = Vec::with_capacity(inputs.len() + 1);
        if self.graph.inputs.len() == inputs.len() + 1 {
            // %self: a module value is its attribute path
            args.push(IValue::Str(String::new()));
        }
        let first = args.len();
        args.extend(inputs.iter().cloned());
        // an object input must be of the class the graph was traced with
        for (&v, x) in self.graph.inputs[first.min(self.graph.inputs.len())..]
            .iter()
            .zip(inputs)
        {
            if let ValueType::Object(q) = &self.graph.values[v].ty {
                match x {
                    IValue::Object(o) if o.class().qualified_name() == q => {}
                    other => ferrotorch_core::bail!(
                        Type,
                        "forward(): expected an object of {q}, got {}",
                        match other {
                            IValue::Object(o) => o.class().qualified_name().to_string(),
                            v => v.type_name().to_string(),
                        }
                    ),
                }
            } else if matches!(self.graph.values[v].ty, ValueType::Tensor { .. })
                && !matches!(x, IValue::Tensor(_))
            {
                ferrotorch_core::bail!(Type, "forward(): expected a Tensor, got {}", x.type_name());
            }
        }
        let attr = |name: &str| -> Result<Tensor> {
            self.attrs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, a)| a.tensor())
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Runtime,
                        format!("module has no attribute '{name}'"),
                    )
                })
        };
        run(&self.graph, args, &attr)
    }
}
