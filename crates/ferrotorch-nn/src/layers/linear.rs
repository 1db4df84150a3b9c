//! `nn.Linear`, `nn.Bilinear`, `nn.Identity`, `nn.Flatten`, `nn.Unflatten`.

use super::fmt::py_bool;
use crate::functional as F;
use crate::init;
use crate::{Forward, Module, ModuleState, Parameter};
use ferrotorch_core::{get_default_dtype, Result, Tensor};

/// An empty `[shape]` parameter of the default dtype, to be initialised.
pub(crate) fn empty_param(shape: &[usize]) -> Result<Parameter> {
    Ok(Parameter::new(&Tensor::zeros(shape, get_default_dtype())?))
}

/// PyTorch's default weight/bias initialisation of linear and conv layers
/// (`reset_parameters`): kaiming_uniform_(a=√5) for the weight, and
/// U(-1/√fan_in, 1/√fan_in) for the bias.
pub(crate) fn reset_linear_like(weight: &Parameter, bias: Option<&Parameter>) -> Result<()> {
    let w = weight.tensor();
    init::kaiming_uniform_(&w, 5f64.sqrt(), "fan_in", "leaky_relu", None)?;
    if let Some(b) = bias {
        let (fan_in, _) = init::calculate_fan_in_and_fan_out(&w)?;
        let bound = if fan_in > 0 {
            1.0 / (fan_in as f64).sqrt()
        } else {
            0.0
        };
        init::uniform_(&b.tensor(), -bound, bound, None)?;
    }
    Ok(())
}

/// `y = x Wᵀ + b` (`nn.Linear(in_features, out_features, bias=True)`).
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct Linear {
    /// `[out_features, in_features]`.
    pub weight: Parameter,
    /// `[out_features]`, when made with `bias=true`.
    pub bias: Option<Parameter>,
    /// Input size.
    pub in_features: usize,
    /// Output size.
    pub out_features: usize,
    state: ModuleState,
}

impl Linear {
    /// A linear layer with PyTorch's default initialisation.
    pub fn new(in_features: usize, out_features: usize, bias: bool) -> Result<Linear> {
        let weight = empty_param(&[out_features, in_features])?;
        let bias = bias.then(|| empty_param(&[out_features])).transpose()?;
        reset_linear_like(&weight, bias.as_ref())?;
        Ok(Linear {
            weight,
            bias,
            in_features,
            out_features,
            state: ModuleState::new(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "in_features={}, out_features={}, bias={}",
            self.in_features,
            self.out_features,
            py_bool(self.bias.is_some())
        )
    }
}

impl Forward for Linear {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let b = self.bias.as_ref().map(Parameter::tensor);
        F::linear(input, &self.weight.tensor(), b.as_ref())
    }
}

/// `y_k = x1ᵀ W_k x2 + b_k` (`nn.Bilinear(in1, in2, out, bias=True)`).
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct Bilinear {
    /// `[out_features, in1_features, in2_features]`.
    pub weight: Parameter,
    /// `[out_features]`.
    pub bias: Option<Parameter>,
    in1_features: usize,
    in2_features: usize,
    out_features: usize,
    state: ModuleState,
}

impl Bilinear {
    /// PyTorch's initialisation: everything U(-1/√in1, 1/√in1).
    pub fn new(in1: usize, in2: usize, out: usize, bias: bool) -> Result<Bilinear> {
        let weight = empty_param(&[out, in1, in2])?;
        let bias = bias.then(|| empty_param(&[out])).transpose()?;
        let bound = 1.0 / (in1 as f64).sqrt();
        init::uniform_(&weight.tensor(), -bound, bound, None)?;
        if let Some(b) = &bias {
            init::uniform_(&b.tensor(), -bound, bound, None)?;
        }
        Ok(Bilinear {
            weight,
            bias,
            in1_features: in1,
            in2_features: in2,
            out_features: out,
            state: ModuleState::new(),
        })
    }

    /// `module(input1, input2)`.
    pub fn forward(&self, input1: &Tensor, input2: &Tensor) -> Result<Tensor> {
        let b = self.bias.as_ref().map(Parameter::tensor);
        F::bilinear(input1, input2, &self.weight.tensor(), b.as_ref())
    }

    fn describe(&self) -> String {
        format!(
            "in1_features={}, in2_features={}, out_features={}, bias={}",
            self.in1_features,
            self.in2_features,
            self.out_features,
            py_bool(self.bias.is_some())
        )
    }
}

/// Returns its input (`nn.Identity`).
#[derive(Module, Default)]
#[module(crate = "crate")]
pub struct Identity {
    state: ModuleState,
}

impl Identity {
    /// `nn.Identity()`.
    pub fn new() -> Identity {
        Identity::default()
    }
}

impl Forward for Identity {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        Ok(input.clone())
    }
}

/// Flattens dims `start_dim..=end_dim` (`nn.Flatten(start_dim=1, end_dim=-1)`).
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct Flatten {
    start_dim: i64,
    end_dim: i64,
    state: ModuleState,
}

impl Flatten {
    /// `nn.Flatten(start_dim, end_dim)`.
    pub fn new(start_dim: i64, end_dim: i64) -> Flatten {
        Flatten {
            start_dim,
            end_dim,
            state: ModuleState::new(),
        }
    }

    fn describe(&self) -> String {
        format!("start_dim={}, end_dim={}", self.start_dim, self.end_dim)
    }
}

impl Default for Flatten {
    fn default() -> Self {
        Flatten::new(1, -1)
    }
}

impl Forward for Flatten {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        input.flatten(self.start_dim, self.end_dim)
    }
}

/// Splits dim `dim` into `sizes` (`nn.Unflatten(dim, unflattened_size)`).
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct Unflatten {
    dim: i64,
    sizes: Vec<i64>,
    state: ModuleState,
}

impl Unflatten {
    /// `nn.Unflatten(dim, unflattened_size)`.
    pub fn new(dim: i64, unflattened_size: &[i64]) -> Unflatten {
        Unflatten {
            dim,
            sizes: unflattened_size.to_vec(),
            state: ModuleState::new(),
        }
    }

    fn describe(&self) -> String {
        let s: Vec<String> = self.sizes.iter().map(i64::to_string).collect();
        let tuple = if s.len() == 1 {
            format!("({},)", s[0])
        } else {
            format!("({})", s.join(", "))
        };
        format!("dim={}, unflattened_size={tuple}", self.dim)
    }
}

impl Forward for Unflatten {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        input.unflatten(self.dim, &self.sizes)
    }
}
