//! Every activation of `torch.nn.functional` as a module (`nn.ReLU`,
//! `nn.GELU(approximate)`, `nn.Softmax(dim)`, ...), printed as PyTorch
//! prints them.

use super::linear::empty_param;
use crate::functional as F;
use crate::{init, Forward, Module, ModuleState, Parameter};
use ferrotorch_core::{Result, Tensor};

macro_rules! plain_activation {
    ($($(#[$doc:meta])* $name:ident => $f:path;)*) => {$(
        $(#[$doc])*
        #[derive(Module, Default)]
        #[module(crate = "crate")]
        pub struct $name {
            state: ModuleState,
        }

        impl $name {
            /// The module (no options).
            pub fn new() -> $name {
                $name::default()
            }
        }

        impl Forward for $name {
            fn forward(&self, input: &Tensor) -> Result<Tensor> {
                $f(input)
            }
        }
    )*};
}

plain_activation! {
    /// `nn.ReLU6`.
    ReLU6 => F::relu6;
    /// `nn.SELU`.
    SELU => F::selu;
    /// `nn.SiLU`.
    SiLU => F::silu;
    /// `nn.Mish`.
    Mish => F::mish;
    /// `nn.Softsign`.
    Softsign => F::softsign;
    /// `nn.Hardswish`.
    Hardswish => F::hardswish;
    /// `nn.Hardsigmoid`.
    Hardsigmoid => F::hardsigmoid;
    /// `nn.Sigmoid`.
    Sigmoid => F::sigmoid;
    /// `nn.Tanh`.
    Tanh => F::tanh;
    /// `nn.LogSigmoid`.
    LogSigmoid => F::logsigmoid;
}

/// `nn.ReLU(inplace=False)`.
#[derive(Module, Default)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct ReLU {
    inplace: bool,
    state: ModuleState,
}

impl ReLU {
    /// `nn.ReLU()`.
    pub fn new() -> ReLU {
        ReLU::default()
    }

    /// `nn.ReLU(inplace=True)`: overwrites its input (`relu_`),
    /// which autograd checks like any in-place op.
    pub fn inplace() -> ReLU {
        ReLU {
            inplace: true,
            state: ModuleState::new(),
        }
    }

    fn describe(&self) -> String {
        if self.inplace {
            "inplace=True".to_string()
        } else {
            String::new()
        }
    }
}

impl Forward for ReLU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if self.inplace {
            input.relu_()?;
            Ok(input.clone())
        } else {
            F::relu(input)
        }
    }
}

/// Activations with options: `Name { fields } => repr format, forward`.
macro_rules! option_activation {
    ($($(#[$doc:meta])* $name:ident($($field:ident: $ty:ty),*) repr $fmt:literal, |$s:ident, $x:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Module)]
        #[module(crate = "crate", extra_repr = "describe")]
        pub struct $name {
            $(
                #[doc = concat!("`", stringify!($field), "`.")]
                pub $field: $ty,
            )*
            state: ModuleState,
        }

        impl $name {
            /// The module with these options (PyTorch's argument order).
            pub fn new($($field: $ty),*) -> $name {
                $name { $($field,)* state: ModuleState::new() }
            }

            fn describe(&self) -> String {
                let $s = self;
                format!($fmt, $($s.$field),*)
            }
        }

        impl Forward for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $s = self;
                $body
            }
        }
    )*};
}

option_activation! {
    /// `nn.LeakyReLU(negative_slope=0.01)`.
    LeakyReLU(negative_slope: f64) repr "negative_slope={:?}", |s, x| F::leaky_relu(x, s.negative_slope);
    /// `nn.ELU(alpha=1.0)`.
    ELU(alpha: f64) repr "alpha={:?}", |s, x| F::elu(x, s.alpha);
    /// `nn.CELU(alpha=1.0)`.
    CELU(alpha: f64) repr "alpha={:?}", |s, x| F::celu(x, s.alpha);
    /// `nn.GELU(approximate='none')`.
    GELU(approximate: &'static str) repr "approximate='{}'", |s, x| F::gelu(x, s.approximate);
    /// `nn.Softplus(beta=1.0, threshold=20.0)`.
    Softplus(beta: f64, threshold: f64) repr "beta={:?}, threshold={:?}", |s, x| F::softplus(x, s.beta, s.threshold);
    /// `nn.Hardtanh(min_val=-1.0, max_val=1.0)`.
    Hardtanh(min_val: f64, max_val: f64) repr "min_val={:?}, max_val={:?}", |s, x| F::hardtanh(x, s.min_val, s.max_val);
    /// `nn.Threshold(threshold, value)`.
    Threshold(threshold: f64, value: f64) repr "threshold={:?}, value={:?}", |s, x| F::threshold(x, s.threshold, s.value);
    /// `nn.GLU(dim=-1)`.
    GLU(dim: i64) repr "dim={}", |s, x| F::glu(x, s.dim);
    /// `nn.Softmax(dim)`.
    Softmax(dim: i64) repr "dim={}", |s, x| F::softmax(x, s.dim);
    /// `nn.LogSoftmax(dim)`.
    LogSoftmax(dim: i64) repr "dim={}", |s, x| F::log_softmax(x, s.dim);
    /// `nn.Softmin(dim)`.
    Softmin(dim: i64) repr "dim={}", |s, x| F::softmin(x, s.dim);
}

macro_rules! defaults {
    ($($name:ident($($v:expr),*);)*) => {$(
        impl Default for $name {
            fn default() -> $name {
                $name::new($($v),*)
            }
        }
    )*};
}

defaults! {
    LeakyReLU(0.01);
    ELU(1.0);
    CELU(1.0);
    GELU("none");
    Softplus(1.0, 20.0);
    Hardtanh(-1.0, 1.0);
    GLU(-1);
}

/// `nn.PReLU(num_parameters=1, init=0.25)`: a learnable slope per channel.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct PReLU {
    /// `[num_parameters]` slopes.
    pub weight: Parameter,
    num_parameters: usize,
    state: ModuleState,
}

impl PReLU {
    /// `nn.PReLU(num_parameters, init)`.
    pub fn new(num_parameters: usize, init: f64) -> Result<PReLU> {
        let weight = empty_param(&[num_parameters])?;
        init::constant_(&weight.tensor(), init)?;
        Ok(PReLU {
            weight,
            num_parameters,
            state: ModuleState::new(),
        })
    }

    fn describe(&self) -> String {
        format!("num_parameters={}", self.num_parameters)
    }
}

impl Forward for PReLU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        F::prelu(input, &self.weight.tensor())
    }
}
