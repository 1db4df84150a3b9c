//! [`ModuleField`]: how `#[derive(Module)]` registers each field.

use super::{Buffer, Entry, Module, ModuleState, Parameter};
use ferrotorch_core::{DType, Tensor};
use std::sync::Arc;

/// A type that can be a field of a `#[derive(Module)]` struct. Parameters,
/// buffers and submodules register themselves; `Option` and `Vec` register
/// what they hold; configuration values register nothing.
pub trait ModuleField {
    /// Report this field, registered under `name`.
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>));
}

impl ModuleField for Parameter {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::Parameter(self));
    }
}

impl ModuleField for Buffer {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::Buffer(self));
    }
}

impl ModuleField for ModuleState {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::State(self));
    }
}

/// An optional parameter, buffer or submodule (`bias=False`, no
/// downsample): registered only when present, as PyTorch's `None`.
impl<T: ModuleField> ModuleField for Option<T> {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        if let Some(v) = self {
            v.visit_field(name, visitor);
        }
    }
}

/// A list of submodules is one child (PyTorch's `ModuleList`) whose own
/// children are named `0`, `1`, ...
impl<T: Module> ModuleField for Vec<T> {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::Module(self));
    }
}

impl<T: Module> Module for Vec<T> {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        for (i, m) in self.iter().enumerate() {
            visitor(&i.to_string(), Entry::Module(m));
        }
    }
    fn type_name(&self) -> &str {
        "ModuleList"
    }
    fn as_module(&self) -> &dyn Module {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl<T: Module + ?Sized> ModuleField for Box<T> {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::Module((**self).as_module()));
    }
}

impl<T: Module + ?Sized> ModuleField for Arc<T> {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::Module((**self).as_module()));
    }
}

/// Configuration values and plain tensor attributes are not registered
/// (a tensor that should be saved is a [`Buffer`]).
macro_rules! unregistered {
    ($($t:ty),*) => {$(
        impl ModuleField for $t {
            fn visit_field<'a>(&'a self, _: &str, _: &mut dyn FnMut(&str, Entry<'a>)) {}
        }
    )*};
}

unregistered!(
    bool,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize,
    String,
    &'static str,
    Tensor,
    DType,
    Vec<usize>,
    Vec<i64>,
    Vec<f64>,
    Vec<String>
);
