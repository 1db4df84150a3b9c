//! `torch.nn.Module`: the [`Module`] trait, derived with
//! `#[derive(Module)]`, and what every module gets from it —
//! parameters, buffers and submodules by name, train/eval, `zero_grad`,
//! freezing, `apply`, `to(dtype)`, forward hooks, PyTorch's printed tree
//! and `state_dict` / `load_state_dict` with PyTorch's key names.
//!
//! ```
//! use ferrotorch_nn::{self as nn, Forward, Module};
//! use ferrotorch_core::{Result, Tensor};
//!
//! #[derive(Module)]
//! #[module(crate = "ferrotorch_nn")]
//! struct Mlp {
//!     l1: nn::Linear,
//!     l2: nn::Linear,
//! }
//!
//! impl Forward for Mlp {
//!     fn forward(&self, x: &Tensor) -> Result<Tensor> {
//!         self.l2.call(&nn::functional::relu(&self.l1.call(x)?)?)
//!     }
//! }
//!
//! # fn main() -> Result<()> {
//! let m = Mlp { l1: nn::Linear::new(4, 8, true)?, l2: nn::Linear::new(8, 1, true)? };
//! let keys: Vec<String> = m.state_dict().keys().cloned().collect();
//! assert_eq!(keys, ["l1.weight", "l1.bias", "l2.weight", "l2.bias"]);
//! assert_eq!(m.call(&Tensor::ones(&[2, 4], ())?)?.shape(), &[2, 1]);
//! # Ok(())
//! # }
//! ```

mod call_hook;
mod field;
mod parameter;
mod repr;
mod state;
mod state_dict;

pub use call_hook::{set_module_call_hook, ModuleCallHook};
pub use ferrotorch_derive::Module;
pub use field::ModuleField;
pub use parameter::{Buffer, Parameter};
pub use state::{ForwardHook, ForwardPreHook, HookHandle, ModuleState};
pub use state_dict::{IncompatibleKeys, StateDict};

use ferrotorch_core::{DType, Result, Tensor};
use std::any::Any;
use std::collections::HashSet;

/// One thing a module registers, as its `visit` reports it.
pub enum Entry<'a> {
    /// A learnable tensor.
    Parameter(&'a Parameter),
    /// A buffer (running statistics, counters).
    Buffer(&'a Buffer),
    /// A submodule.
    Module(&'a dyn Module),
    /// The module's own training flag and hooks.
    State(&'a ModuleState),
}

/// A PyTorch module: a tree of named parameters, buffers and submodules.
///
/// Implement it with `#[derive(Module)]`; the provided methods are
/// PyTorch's. The computation is the separate [`Forward`] trait, so that
/// modules whose forward takes several inputs (attention, recurrent
/// layers) are still modules.
pub trait Module: Send + Sync + 'static {
    /// Report this module's own parameters, buffers, state and direct
    /// submodules, in declaration order.
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>));

    /// The class name printed in the module tree (`Linear`).
    fn type_name(&self) -> &str;

    /// This module as a trait object.
    fn as_module(&self) -> &dyn Module;

    /// This module as `Any`, for downcasting in [`Module::apply`].
    fn as_any(&self) -> &dyn Any;

    /// What is printed between the parentheses (`in_features=1, ...`).
    fn extra_repr(&self) -> String {
        String::new()
    }

    /// Direct submodules with their names (`named_children()`).
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        let mut out = Vec::new();
        self.visit(&mut |name, e| {
            if let Entry::Module(m) = e {
                out.push((name.to_string(), m));
            }
        });
        out
    }

    /// Direct submodules (`children()`).
    fn children(&self) -> Vec<&dyn Module> {
        self.named_children().into_iter().map(|(_, m)| m).collect()
    }

    /// This module and every descendant, depth first, named by their
    /// dotted path (`""` for this one) (`named_modules()`).
    fn named_modules(&self) -> Vec<(String, &dyn Module)> {
        let mut out = vec![(String::new(), self.as_module())];
        for (name, child) in self.named_children() {
            for (sub, m) in child.named_modules() {
                out.push((join(&name, &sub), m));
            }
        }
        out
    }

    /// Every module of the tree (`modules()`).
    fn modules(&self) -> Vec<&dyn Module> {
        self.named_modules().into_iter().map(|(_, m)| m).collect()
    }

    /// Every parameter of the tree with its dotted name, each once
    /// (`named_parameters()`).
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        walk(self.as_module(), "", &mut |name, e| {
            if let Entry::Parameter(p) = e {
                if seen.insert(p.id()) {
                    out.push((name.to_string(), p.clone()));
                }
            }
        });
        out
    }

    /// Every parameter of the tree (`parameters()`), in registration order.
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// Every buffer of the tree with its dotted name (`named_buffers()`).
    fn named_buffers(&self) -> Vec<(String, Buffer)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        walk(self.as_module(), "", &mut |name, e| {
            if let Entry::Buffer(b) = e {
                if seen.insert(b.id()) {
                    out.push((name.to_string(), b.clone()));
                }
            }
        });
        out
    }

    /// Every buffer of the tree (`buffers()`).
    fn buffers(&self) -> Vec<Buffer> {
        self.named_buffers().into_iter().map(|(_, b)| b).collect()
    }

    /// Set training mode here and in every descendant (`train(mode)`).
    fn train(&self, mode: bool) {
        walk(self.as_module(), "", &mut |_, e| {
            if let Entry::State(s) = e {
                s.set_training(mode);
            }
        });
    }

    /// Evaluation mode (`eval()`): `train(false)`.
    fn eval(&self) {
        self.train(false)
    }

    /// Whether this module is in training mode (`training`): its own flag,
    /// or, for a module without a [`ModuleState`], its first child's.
    fn is_training(&self) -> bool {
        match self.module_state() {
            Some(s) => s.is_training(),
            None => self.children().first().is_none_or(|c| c.is_training()),
        }
    }

    /// This module's own [`ModuleState`] field, if it has one.
    fn module_state(&self) -> Option<&ModuleState> {
        let mut state = None;
        self.visit(&mut |_, e| {
            if let Entry::State(s) = e {
                state.get_or_insert(s);
            }
        });
        state
    }

    /// Clear every parameter's gradient (`zero_grad()`, `set_to_none=True`).
    fn zero_grad(&self) {
        for p in self.parameters() {
            let _ = p.set_grad(None);
        }
    }

    /// `zero_grad(set_to_none)`: with `false`, gradients are zeroed in
    /// place instead of cleared.
    fn zero_grad_with(&self, set_to_none: bool) -> Result<()> {
        for p in self.parameters() {
            match p.grad() {
                Some(g) if !set_to_none => {
                    let _g = ferrotorch_core::autograd::no_grad();
                    g.detach().fill_(0.0)?;
                }
                _ => p.set_grad(None)?,
            }
        }
        Ok(())
    }

    /// Freeze (`false`) or unfreeze every parameter (`requires_grad_()`).
    fn requires_grad_(&self, requires_grad: bool) -> Result<()> {
        self.parameters()
            .iter()
            .try_for_each(|p| p.requires_grad_(requires_grad))
    }

    /// Call `f` on every submodule, children before parents, then on this
    /// one (`apply(fn)`), e.g. for custom initialisation; downcast with
    /// `m.as_any().downcast_ref::<Linear>()`.
    fn apply(&self, f: &mut dyn FnMut(&dyn Module) -> Result<()>) -> Result<()> {
        for child in self.children() {
            child.apply(f)?;
        }
        f(self.as_module())
    }

    /// Cast every floating parameter and buffer to `dtype`
    /// (`module.to(dtype)`); integer buffers keep their dtype, as in PyTorch.
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        ferrotorch_core::ensure!(
            dtype.is_floating_point(),
            Type,
            "nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}"
        );
        for p in self.parameters() {
            let t = p.tensor();
            if t.is_floating_point() && t.dtype() != dtype {
                p.set_data(&t.to_dtype(dtype)?);
            }
        }
        for b in self.buffers() {
            let t = b.tensor();
            if t.is_floating_point() && t.dtype() != dtype {
                b.set_data(&t.to_dtype(dtype)?);
            }
        }
        Ok(())
    }

    /// Register `hook(module, input, output)`, run after every
    /// [`Forward::call`] (`register_forward_hook`). Its `Some` result
    /// replaces the output. The module needs a [`ModuleState`] field.
    fn register_forward_hook(&self, hook: ForwardHook) -> Result<HookHandle> {
        own_state(self.as_module(), "register_forward_hook").map(|s| s.add_forward_hook(hook))
    }

    /// Register `hook(module, input)`, run before every [`Forward::call`]
    /// (`register_forward_pre_hook`). Its `Some` result replaces the input.
    fn register_forward_pre_hook(&self, hook: ForwardPreHook) -> Result<HookHandle> {
        own_state(self.as_module(), "register_forward_pre_hook")
            .map(|s| s.add_forward_pre_hook(hook))
    }

    /// Parameters and persistent buffers by PyTorch key (`state_dict()`).
    fn state_dict(&self) -> StateDict {
        state_dict::collect(self.as_module())
    }

    /// Copy `state_dict`'s tensors into this module's
    /// (`load_state_dict(state_dict, strict)`). Shapes must match; with
    /// `strict`, missing or unexpected keys are an error, otherwise they
    /// are reported.
    fn load_state_dict(&self, state_dict: &StateDict, strict: bool) -> Result<IncompatibleKeys> {
        state_dict::load(self.as_module(), state_dict, strict)
    }

    /// The module tree as PyTorch prints it (`repr(module)`).
    fn repr(&self) -> String {
        repr::repr(self.as_module())
    }
}

/// Modules computing one tensor from one tensor: what [`Sequential`]
/// chains. Call them through [`Forward::call`] (PyTorch's `module(x)`),
/// which runs the forward hooks.
///
/// [`Sequential`]: crate::Sequential
pub trait Forward: Module {
    /// The computation (`forward`).
    fn forward(&self, input: &Tensor) -> Result<Tensor>;

    /// `module(input)`: pre-hooks, `forward`, hooks.
    fn call(&self, input: &Tensor) -> Result<Tensor> {
        match call_hook::active_hook() {
            Some(hook) => hook(self.as_module(), input, &|x| call_with_hooks(self, x)),
            None => call_with_hooks(self, input),
        }
    }
}

/// Pre-hooks, `forward`, hooks.
fn call_with_hooks<F: Forward + ?Sized>(m: &F, input: &Tensor) -> Result<Tensor> {
    match m.module_state() {
        Some(s) if s.has_hooks() => s.run(m.as_module(), input, |x| m.forward(x)),
        _ => m.forward(input),
    }
}

/// Visit every entry of `m`'s tree with dotted names in PyTorch's order:
/// a module's own parameters, then its own buffers, then each child's
/// subtree (what `state_dict` and `named_parameters` list), whatever the
/// order of the struct's fields.
pub(crate) fn walk<'a>(m: &'a dyn Module, prefix: &str, f: &mut dyn FnMut(&str, Entry<'a>)) {
    let mut params = Vec::new();
    let mut buffers = Vec::new();
    let mut children = Vec::new();
    m.visit(&mut |name, e| {
        let full = join(prefix, name);
        match e {
            Entry::Parameter(p) => params.push((full, p)),
            Entry::Buffer(b) => buffers.push((full, b)),
            Entry::Module(c) => children.push((full, c)),
            Entry::State(s) => f(&full, Entry::State(s)),
        }
    });
    for (name, p) in params {
        f(&name, Entry::Parameter(p));
    }
    for (name, b) in buffers {
        f(&name, Entry::Buffer(b));
    }
    for (name, c) in children {
        walk(c, &name, f);
    }
}

fn own_state<'a>(m: &'a dyn Module, what: &str) -> Result<&'a ModuleState> {
    m.module_state().ok_or_else(|| {
        ferrotorch_core::Error::new(
            ferrotorch_core::ErrorKind::Runtime,
            format!(
                "{what}: {} has no ModuleState field to hold hooks; add `state: nn::ModuleState`",
                m.type_name()
            ),
        )
    })
}

fn join(prefix: &str, name: &str) -> String {
    match (prefix.is_empty(), name.is_empty()) {
        (true, _) => name.to_string(),
        (_, true) => prefix.to_string(),
        _ => format!("{prefix}.{name}"),
    }
}
