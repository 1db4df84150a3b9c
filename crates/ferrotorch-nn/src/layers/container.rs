//! `nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`.

use crate::{Entry, Forward, Module, ModuleState};
use ferrotorch_core::{Result, Tensor};
use std::any::Any;

/// Layers applied in order (`nn.Sequential`); children are named `0`, `1`, ...
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Forward>>,
    state: ModuleState,
}

impl Sequential {
    /// An empty sequence (returns its input).
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// Append a layer and return the sequence (`append`), builder style:
    /// `Sequential::new().append(a).append(b)`.
    pub fn append(mut self, layer: impl Forward) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }

    /// Append a boxed layer in place.
    pub fn push(&mut self, layer: Box<dyn Forward>) {
        self.layers.push(layer);
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there are no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Layer `i` (`seq[i]`); negative counts from the end.
    pub fn get(&self, i: i64) -> Option<&dyn Forward> {
        let n = self.layers.len() as i64;
        let i = if i < 0 { i + n } else { i };
        (0..n).contains(&i).then(|| &*self.layers[i as usize])
    }
}

impl FromIterator<Box<dyn Forward>> for Sequential {
    fn from_iter<I: IntoIterator<Item = Box<dyn Forward>>>(iter: I) -> Self {
        Sequential {
            layers: iter.into_iter().collect(),
            state: ModuleState::new(),
        }
    }
}

impl Module for Sequential {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor("", Entry::State(&self.state));
        for (i, m) in self.layers.iter().enumerate() {
            visitor(&i.to_string(), Entry::Module(m.as_module()));
        }
    }
    fn type_name(&self) -> &str {
        "Sequential"
    }
    fn as_module(&self) -> &dyn Module {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Forward for Sequential {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for layer in &self.layers {
            x = layer.call(&x)?;
        }
        Ok(x)
    }
}

/// A list of modules of any kind (`nn.ModuleList`), indexed `0`, `1`, ...
/// (A `Vec<T>` field of one module type registers the same way.)
#[derive(Default)]
pub struct ModuleList {
    modules: Vec<Box<dyn Module>>,
    state: ModuleState,
}

impl ModuleList {
    /// An empty list.
    pub fn new() -> ModuleList {
        ModuleList::default()
    }

    /// Append (`append`).
    pub fn push(&mut self, module: impl Module) {
        self.modules.push(Box::new(module));
    }

    /// Module `i`.
    pub fn get(&self, i: usize) -> Option<&dyn Module> {
        self.modules.get(i).map(|m| &**m)
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The modules in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module> {
        self.modules.iter().map(|m| &**m)
    }
}

impl Module for ModuleList {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor("", Entry::State(&self.state));
        for (i, m) in self.modules.iter().enumerate() {
            visitor(&i.to_string(), Entry::Module(m.as_module()));
        }
    }
    fn type_name(&self) -> &str {
        "ModuleList"
    }
    fn as_module(&self) -> &dyn Module {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Modules by name, in insertion order (`nn.ModuleDict`).
#[derive(Default)]
pub struct ModuleDict {
    modules: Vec<(String, Box<dyn Module>)>,
    state: ModuleState,
}

impl ModuleDict {
    /// An empty dict.
    pub fn new() -> ModuleDict {
        ModuleDict::default()
    }

    /// Insert or replace `key` (`md[key] = module`). Keys may not contain
    /// `.` (they become state_dict path segments), as in PyTorch.
    pub fn insert(&mut self, key: &str, module: impl Module) -> Result<()> {
        ferrotorch_core::ensure!(
            !key.contains('.') && !key.is_empty(),
            Key,
            "module name can't contain \".\", got: {key}"
        );
        match self.modules.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = Box::new(module),
            None => self.modules.push((key.to_string(), Box::new(module))),
        }
        Ok(())
    }

    /// The module under `key`.
    pub fn get(&self, key: &str) -> Option<&dyn Module> {
        self.modules
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, m)| &**m)
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.modules.iter().map(|(k, _)| k.as_str())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// Whether the dict is empty.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }
}

impl Module for ModuleDict {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor("", Entry::State(&self.state));
        for (k, m) in &self.modules {
            visitor(k, Entry::Module(m.as_module()));
        }
    }
    fn type_name(&self) -> &str {
        "ModuleDict"
    }
    fn as_module(&self) -> &dyn Module {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The containers are fields of derived modules like any other submodule.
macro_rules! container_field {
    ($($t:ty),*) => {$(
        impl crate::ModuleField for $t {
            fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
                visitor(name, Entry::Module(self));
            }
        }
    )*};
}

container_field!(Sequential, ModuleList, ModuleDict);
