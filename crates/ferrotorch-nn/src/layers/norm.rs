//! `nn.BatchNorm1d/2d`, `nn.LayerNorm`, `nn.GroupNorm`, `nn.RMSNorm`.

use super::fmt::{py_bool, py_float, py_tuple};
use crate::functional as F;
use crate::{Buffer, Forward, Module, ModuleState, Parameter};
use ferrotorch_core::{ensure, get_default_dtype, DType, Result, Tensor};

fn ones(shape: &[usize]) -> Result<Parameter> {
    Ok(Parameter::new(&Tensor::ones(shape, get_default_dtype())?))
}

fn zeros(shape: &[usize]) -> Result<Parameter> {
    Ok(Parameter::new(&Tensor::zeros(shape, get_default_dtype())?))
}

/// Options of the batch norms, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct BatchNormOptions {
    /// Added to the variance (default 1e-5).
    pub eps: f64,
    /// Running-average factor; `None` is a cumulative average (default 0.1).
    pub momentum: Option<f64>,
    /// Learn a per-channel scale and shift (default true).
    pub affine: bool,
    /// Keep running statistics for eval mode (default true).
    pub track_running_stats: bool,
    /// With `affine`, learn the shift too (default true).
    pub bias: bool,
}

impl Default for BatchNormOptions {
    fn default() -> Self {
        BatchNormOptions {
            eps: 1e-5,
            momentum: Some(0.1),
            affine: true,
            track_running_stats: true,
            bias: true,
        }
    }
}

macro_rules! batch_norm {
    ($(#[$doc:meta])* $name:ident, $check:expr, $expect:literal) => {
        $(#[$doc])*
        #[derive(Module)]
        #[module(crate = "crate", extra_repr = "describe")]
        pub struct $name {
            /// Per-channel scale (`affine`).
            pub weight: Option<Parameter>,
            /// Per-channel shift (`affine`).
            pub bias: Option<Parameter>,
            /// Running mean (`track_running_stats`).
            pub running_mean: Option<Buffer>,
            /// Running variance (`track_running_stats`).
            pub running_var: Option<Buffer>,
            /// Batches seen in training (`track_running_stats`).
            pub num_batches_tracked: Option<Buffer>,
            num_features: usize,
            #[module(skip)]
            options: BatchNormOptions,
            state: ModuleState,
        }

        impl $name {
            /// `nn.BatchNorm(num_features, eps, momentum, affine, track_running_stats)`.
            pub fn new(num_features: usize, options: BatchNormOptions) -> Result<$name> {
                let c = [num_features];
                let track = options.track_running_stats;
                let buf = |t: Tensor| Buffer::new(&t);
                Ok($name {
                    weight: options.affine.then(|| ones(&c)).transpose()?,
                    bias: (options.affine && options.bias).then(|| zeros(&c)).transpose()?,
                    running_mean: track.then(|| Tensor::zeros(&c, get_default_dtype()).map(buf)).transpose()?,
                    running_var: track.then(|| Tensor::ones(&c, get_default_dtype()).map(buf)).transpose()?,
                    num_batches_tracked: track.then(|| Tensor::zeros(&[], DType::I64).map(buf)).transpose()?,
                    num_features,
                    options,
                    state: ModuleState::new(),
                })
            }

            fn describe(&self) -> String {
                let o = &self.options;
                format!(
                    "{}, eps={}, momentum={}, affine={}, bias={}, track_running_stats={}",
                    self.num_features,
                    py_float(o.eps),
                    o.momentum.map_or("None".to_string(), py_float),
                    py_bool(o.affine),
                    py_bool(self.bias.is_some()),
                    py_bool(o.track_running_stats)
                )
            }
        }

        impl $name {
            /// In eval mode with running statistics, the per-channel f32
            /// `(scale, shift)` the forward applies (`y = x·scale + shift`);
            /// `None` in training or without running statistics.
            #[allow(dead_code)] // used for BatchNorm2d only
            pub(crate) fn eval_affine(&self) -> Result<Option<(Vec<f32>, Vec<f32>)>> {
                let (Some(rm), Some(rv)) = (&self.running_mean, &self.running_var) else {
                    return Ok(None);
                };
                if self.state.is_training() {
                    return Ok(None);
                }
                let (w, b) = (
                    self.weight.as_ref().map(Parameter::tensor),
                    self.bias.as_ref().map(Parameter::tensor),
                );
                let (scale, shift) = Tensor::batch_norm_eval_affine(
                    &rm.tensor(),
                    &rv.tensor(),
                    w.as_ref(),
                    b.as_ref(),
                    self.options.eps,
                    DType::F32,
                )?;
                Ok(Some((scale.to_vec::<f32>()?, shift.to_vec::<f32>()?)))
            }
        }

        impl Forward for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                let d = x.dim();
                ensure!($check(d), Value, concat!("expected ", $expect, " input (got {}D input)"), d);
                let training = self.state.is_training();
                let mut factor = self.options.momentum.unwrap_or(0.0);
                if training {
                    if let Some(n) = &self.num_batches_tracked {
                        let n = n.tensor();
                        n.add_(1)?;
                        if self.options.momentum.is_none() {
                            factor = 1.0 / n.item_f64()?;
                        }
                    }
                }
                let use_batch = training || self.running_mean.is_none();
                let (rm, rv) = (
                    self.running_mean.as_ref().map(Buffer::tensor),
                    self.running_var.as_ref().map(Buffer::tensor),
                );
                let (w, b) = (
                    self.weight.as_ref().map(Parameter::tensor),
                    self.bias.as_ref().map(Parameter::tensor),
                );
                x.batch_norm(rm.as_ref(), rv.as_ref(), w.as_ref(), b.as_ref(), use_batch, factor, self.options.eps)
            }
        }
    };
}

batch_norm!(
    /// `nn.BatchNorm1d` over `[N, C]` or `[N, C, L]`.
    BatchNorm1d, |d| d == 2 || d == 3, "2D or 3D"
);
batch_norm!(
    /// `nn.BatchNorm2d` over `[N, C, H, W]`.
    BatchNorm2d, |d| d == 4, "4D"
);

/// `nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True)`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct LayerNorm {
    /// Scale over `normalized_shape`.
    pub weight: Option<Parameter>,
    /// Shift over `normalized_shape`.
    pub bias: Option<Parameter>,
    normalized_shape: Vec<usize>,
    eps: f64,
    state: ModuleState,
}

impl LayerNorm {
    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias)`.
    pub fn new(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
    ) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: elementwise_affine
                .then(|| ones(normalized_shape))
                .transpose()?,
            bias: (elementwise_affine && bias)
                .then(|| zeros(normalized_shape))
                .transpose()?,
            normalized_shape: normalized_shape.to_vec(),
            eps,
            state: ModuleState::new(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{}, eps={}, elementwise_affine={}, bias={}",
            py_tuple(&self.normalized_shape),
            py_float(self.eps),
            py_bool(self.weight.is_some()),
            py_bool(self.bias.is_some())
        )
    }
}

impl Forward for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (w, b) = (
            self.weight.as_ref().map(Parameter::tensor),
            self.bias.as_ref().map(Parameter::tensor),
        );
        x.layer_norm(&self.normalized_shape, w.as_ref(), b.as_ref(), self.eps)
    }
}

/// `nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True, bias=True)`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct GroupNorm {
    /// Per-channel scale.
    pub weight: Option<Parameter>,
    /// Per-channel shift.
    pub bias: Option<Parameter>,
    num_groups: usize,
    num_channels: usize,
    eps: f64,
    state: ModuleState,
}

impl GroupNorm {
    /// `nn.GroupNorm(num_groups, num_channels, eps, affine, bias)`.
    pub fn new(
        num_groups: usize,
        num_channels: usize,
        eps: f64,
        affine: bool,
        bias: bool,
    ) -> Result<GroupNorm> {
        ensure!(
            num_groups > 0 && num_channels.is_multiple_of(num_groups),
            Value,
            "num_channels must be divisible by num_groups"
        );
        let c = [num_channels];
        Ok(GroupNorm {
            weight: affine.then(|| ones(&c)).transpose()?,
            bias: (affine && bias).then(|| zeros(&c)).transpose()?,
            num_groups,
            num_channels,
            eps,
            state: ModuleState::new(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{}, {}, eps={}, affine={}, bias={}",
            self.num_groups,
            self.num_channels,
            py_float(self.eps),
            py_bool(self.weight.is_some()),
            py_bool(self.bias.is_some())
        )
    }
}

impl Forward for GroupNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (w, b) = (
            self.weight.as_ref().map(Parameter::tensor),
            self.bias.as_ref().map(Parameter::tensor),
        );
        x.group_norm(self.num_groups, w.as_ref(), b.as_ref(), self.eps)
    }
}

/// `nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True)`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct RMSNorm {
    /// Scale over `normalized_shape`.
    pub weight: Option<Parameter>,
    normalized_shape: Vec<usize>,
    #[module(skip)]
    eps: Option<f64>,
    state: ModuleState,
}

impl RMSNorm {
    /// `nn.RMSNorm(normalized_shape, eps, elementwise_affine)`; `eps: None`
    /// uses the input dtype's machine epsilon.
    pub fn new(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
    ) -> Result<RMSNorm> {
        Ok(RMSNorm {
            weight: elementwise_affine
                .then(|| ones(normalized_shape))
                .transpose()?,
            normalized_shape: normalized_shape.to_vec(),
            eps,
            state: ModuleState::new(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{}, eps={}, elementwise_affine={}",
            py_tuple(&self.normalized_shape),
            self.eps.map_or("None".to_string(), py_float),
            py_bool(self.weight.is_some())
        )
    }
}

impl Forward for RMSNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let w = self.weight.as_ref().map(Parameter::tensor);
        F::rms_norm(x, &self.normalized_shape, w.as_ref(), self.eps)
    }
}
