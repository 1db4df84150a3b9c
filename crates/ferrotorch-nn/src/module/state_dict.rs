//! `state_dict` / `load_state_dict` with PyTorch's keys, order and
//! error messages.

use super::{walk, Entry, Module};
use ferrotorch_core::{Error, ErrorKind, Result, Tensor};
use std::collections::HashMap;

/// An ordered map from PyTorch keys (`layer1.0.conv1.weight`) to tensors,
/// as `state_dict()` returns (an `OrderedDict` in PyTorch).
#[derive(Clone, Default)]
pub struct StateDict {
    entries: Vec<(String, Tensor)>,
    index: HashMap<String, usize>,
}

impl StateDict {
    /// An empty state dict.
    pub fn new() -> StateDict {
        StateDict::default()
    }

    /// Insert or replace `key`, keeping the first insertion's position.
    pub fn insert(&mut self, key: impl Into<String>, value: Tensor) {
        let key = key.into();
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    /// The tensor under `key`.
    pub fn get(&self, key: &str) -> Option<&Tensor> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// Remove `key`, returning its tensor.
    pub fn remove(&mut self, key: &str) -> Option<Tensor> {
        let i = self.index.remove(key)?;
        let (_, t) = self.entries.remove(i);
        for v in self.index.values_mut() {
            if *v > i {
                *v -= 1;
            }
        }
        Some(t)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// `(key, tensor)` pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Tensor)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl std::fmt::Debug for StateDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.iter()
                    .map(|(k, t)| (k, (t.dtype(), t.shape().to_vec()))),
            )
            .finish()
    }
}

impl FromIterator<(String, Tensor)> for StateDict {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> Self {
        let mut sd = StateDict::new();
        for (k, v) in iter {
            sd.insert(k, v);
        }
        sd
    }
}

/// What `load_state_dict(strict=False)` reports (`_IncompatibleKeys`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// Keys of the module that the state dict lacks.
    pub missing_keys: Vec<String>,
    /// Keys of the state dict that the module lacks.
    pub unexpected_keys: Vec<String>,
}

/// The module's tensors by key: parameters and persistent buffers, each
/// module's in declaration order, parents before children.
pub(crate) fn collect(m: &dyn Module) -> StateDict {
    let mut sd = StateDict::new();
    walk(m, "", &mut |name, e| match e {
        Entry::Parameter(p) => sd.insert(name, p.tensor().detach()),
        Entry::Buffer(b) if b.persistent() => sd.insert(name, b.tensor()),
        _ => {}
    });
    sd
}

pub(crate) fn load(m: &dyn Module, sd: &StateDict, strict: bool) -> Result<IncompatibleKeys> {
    let own = collect(m);
    let mut keys = IncompatibleKeys::default();
    let mut errors = Vec::new();
    for (key, param) in own.iter() {
        let Some(input) = sd.get(key) else {
            keys.missing_keys.push(key.clone());
            continue;
        };
        if input.shape() != param.shape() {
            errors.push(format!(
                "size mismatch for {key}: copying a param with shape torch.Size({:?}) from checkpoint, the shape in current model is torch.Size({:?}).",
                input.shape(),
                param.shape()
            ));
            continue;
        }
        let _g = ferrotorch_core::autograd::no_grad();
        if let Err(e) = param.copy_(input) {
            errors.push(format!(
                "While copying the parameter named \"{key}\", whose dimensions in the model are {:?} and whose dimensions in the checkpoint are {:?}, an exception occurred : {}.",
                param.shape(),
                input.shape(),
                e.message()
            ));
        }
    }
    keys.unexpected_keys = sd
        .keys()
        .filter(|k| !own.contains_key(k))
        .cloned()
        .collect();
    if strict {
        let quoted = |ks: &[String]| {
            ks.iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !keys.unexpected_keys.is_empty() {
            errors.insert(
                0,
                format!(
                    "Unexpected key(s) in state_dict: {}. ",
                    quoted(&keys.unexpected_keys)
                ),
            );
        }
        if !keys.missing_keys.is_empty() {
            errors.insert(
                0,
                format!(
                    "Missing key(s) in state_dict: {}. ",
                    quoted(&keys.missing_keys)
                ),
            );
        }
    }
    if errors.is_empty() {
        Ok(keys)
    } else {
        Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "Error(s) in loading state_dict for {}:\n\t{}",
                m.type_name(),
                errors.join("\n\t")
            ),
        ))
    }
}
