//! `group_options!`: one declaration per optimizer's options struct gives
//! its fields, PyTorch's defaults, and the conversion to and from
//! `param_groups` entries.

use crate::optimizer::Hyper;
use ferrotorch_core::{bail, Result};
use std::collections::BTreeMap;

/// An option value as a `param_groups` entry.
pub(crate) trait HyperValue: Sized {
    fn to_hyper(&self) -> Hyper;
    fn from_hyper(h: &Hyper) -> Option<Self>;
}

impl HyperValue for f64 {
    fn to_hyper(&self) -> Hyper {
        Hyper::Float(*self)
    }
    fn from_hyper(h: &Hyper) -> Option<f64> {
        match h {
            Hyper::Float(v) => Some(*v),
            _ => None,
        }
    }
}

impl HyperValue for bool {
    fn to_hyper(&self) -> Hyper {
        Hyper::Bool(*self)
    }
    fn from_hyper(h: &Hyper) -> Option<bool> {
        match h {
            Hyper::Bool(v) => Some(*v),
            _ => None,
        }
    }
}

impl HyperValue for (f64, f64) {
    fn to_hyper(&self) -> Hyper {
        Hyper::Pair(self.0, self.1)
    }
    fn from_hyper(h: &Hyper) -> Option<(f64, f64)> {
        match h {
            Hyper::Pair(a, b) => Some((*a, *b)),
            _ => None,
        }
    }
}

/// Read option `key` of a saved group.
pub(crate) fn read<T: HyperValue>(map: &BTreeMap<String, Hyper>, key: &str) -> Result<T> {
    match map.get(key).and_then(T::from_hyper) {
        Some(v) => Ok(v),
        None => bail!(
            Key,
            "param_groups: option '{key}' is missing or has the wrong type ({:?})",
            map.get(key)
        ),
    }
}

/// Declare an options struct: `Name { field: type = default, ... }` and
/// which field (or beta) OneCycleLR cycles as momentum.
macro_rules! group_options {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$fdoc:meta])* $field:ident : $ty:ty = $default:expr ),* $(,)?
        }
        momentum: |$s:ident| $get:expr, |$t:ident, $m:ident| $set:expr
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $( $(#[$fdoc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $crate::optimizer::GroupOptions for $name {
            fn to_map(&self) -> std::collections::BTreeMap<String, $crate::optimizer::Hyper> {
                use $crate::options::HyperValue;
                [$( (stringify!($field).to_string(), self.$field.to_hyper()), )*]
                    .into_iter()
                    .collect()
            }
            fn from_map(
                m: &std::collections::BTreeMap<String, $crate::optimizer::Hyper>,
            ) -> ferrotorch_core::Result<Self> {
                Ok($name { $( $field: $crate::options::read(m, stringify!($field))?, )* })
            }
            fn lr(&self) -> f64 {
                self.lr
            }
            fn set_lr(&mut self, lr: f64) {
                self.lr = lr
            }
            fn momentum(&self) -> Option<f64> {
                let $s = self;
                $get
            }
            fn set_momentum(&mut self, $m: f64) {
                let $t = self;
                $set
            }
        }
    };
}

pub(crate) use group_options;
