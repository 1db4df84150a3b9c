//! `torch.nn` for ferrotorch: the functional layer ([`functional`],
//! PyTorch's `torch.nn.functional`), the [`Module`] trait with
//! `#[derive(Module)]`, the layers, and [`init`].

pub mod functional;
pub mod init;
mod layers;
pub mod models;
mod module;
pub mod safetensors;
pub mod utils;

pub use layers::*;
pub use module::{set_module_call_hook, ModuleCallHook};
pub use module::{
    Buffer, Entry, Forward, ForwardHook, ForwardPreHook, HookHandle, IncompatibleKeys, Module,
    ModuleField, ModuleState, Parameter, StateDict,
};
