//! Pointwise activations: with fast f32 kernels `relu`, `gelu` (exact and
//! tanh), `elu` (and so selu/celu), `silu` (floating dtypes only, as in
//! PyTorch; `relu` also takes integers); and those computed from their
//! activation rows (Note [Activation rows]): `leaky_relu`, `hardtanh`,
//! `relu6`, `softplus`, `mish`, `hardswish`, `hardsigmoid`,
//! `log_sigmoid`.

use super::super::unary::unary_float;
use crate::dispatch::Registry;
use crate::error::Result;
use crate::tensor::Tensor;
use ferrotorch_kernels::math as km;
use ferrotorch_kernels::simd;

fn float_only(op: &str, x: &Tensor) -> Result<()> {
    crate::ensure!(
        x.is_floating_point(),
        NotImplemented,
        "{op}: \"{op}_cpu\" not implemented for '{}'",
        x.dtype().name_title()
    );
    Ok(())
}

crate::ops! {
    register = register_ops;
    /// max(x, 0). NaN stays NaN.
    #[op = "relu(Tensor self) -> Tensor"]
    pub fn relu(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dtype() != crate::DType::Bool,
            NotImplemented,
            "relu: \"clamp_min_scalar_cpu\" not implemented for 'Bool'"
        );
        let y = crate::autograd::raw(&[self], || self.clamp_min(0))?;
        crate::autograd::derivatives::pointwise::unary("relu", self, y)
    }

    /// SELU: `elu` with the self-normalising constants
    /// (`scale = 1.0507…`, `alpha = 1.6733…`).
    #[op = "selu(Tensor self) -> Tensor"]
    pub fn selu(&self) -> Result<Tensor> {
        const ALPHA: f64 = 1.673_263_242_354_377_3;
        const SCALE: f64 = 1.050_700_987_355_480_5;
        self.elu(ALPHA, SCALE, 1.0)
    }

    /// GELU: `approximate = "none"` (erf form) or `"tanh"`.
    #[op = "gelu(Tensor self, *, str approximate='none') -> Tensor"]
    pub fn gelu(&self, approximate: &str) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.gelu_impl(approximate))?;
        crate::autograd::derivatives::nn::gelu(self, approximate == "tanh", y)
    }

    /// ELU with PyTorch's full parameters (`torch.ops.aten.elu(self, alpha,
    /// scale, input_scale)`): `scale·x` for `x > 0`, else
    /// `scale·alpha·(exp(input_scale·x) − 1)`. `F.elu`, `F.selu` and
    /// `F.celu` are this one op, as in PyTorch.
    #[op = "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor"]
    pub fn elu(&self, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
        float_only("elu", self)?;
        let y = crate::autograd::raw(&[self], || {
            let (a, s, i) = (alpha as f32, scale as f32, input_scale as f32);
            unary_float(
                self,
                move |x: f32| {
                    if x > 0.0 {
                        s * x
                    } else {
                        s * a * km::expm1(x * i)
                    }
                },
                move |x: f64| {
                    if x > 0.0 {
                        scale * x
                    } else {
                        scale * alpha * (x * input_scale).exp_m1()
                    }
                },
            )
        })?;
        crate::autograd::derivatives::nn::elu(self, alpha, scale, input_scale, y)
    }

    /// SiLU / swish: `x * sigmoid(x)`.
    #[op = "silu(Tensor self) -> Tensor"]
    pub fn silu(&self) -> Result<Tensor> {
        float_only("silu", self)?;
        let y = crate::autograd::raw(&[self], || {
            unary_float(
                self,
                |x: f32| x * km::sigmoid(x),
                |x: f64| x / (1.0 + (-x).exp()),
            )
        })?;
        crate::autograd::derivatives::pointwise::unary("silu", self, y)
    }

    /// `x` for `x > 0`, `negative_slope · x` otherwise (`F.leaky_relu`,
    /// default slope 0.01).
    #[op = "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"]
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        act_row("leaky_relu", self, &[negative_slope])
    }

    /// `clamp(x, min_val, max_val)` whose gradient passes strictly inside
    /// the bounds (`F.hardtanh`, defaults -1 and 1).
    #[op = "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"]
    pub fn hardtanh(&self, min_val: f64, max_val: f64) -> Result<Tensor> {
        crate::ensure!(
            min_val <= max_val,
            Value,
            "hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})"
        );
        act_row("hardtanh", self, &[min_val, max_val])
    }

    /// `hardtanh(x, 0, 6)`.
    #[op = "relu6(Tensor self) -> Tensor"]
    pub fn relu6(&self) -> Result<Tensor> {
        act_row("relu6", self, &[])
    }

    /// `log(1 + e^(beta x)) / beta`, `x` where `beta x > threshold`
    /// (`F.softplus`, defaults 1 and 20).
    #[op = "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor"]
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        act_row("softplus", self, &[beta, threshold])
    }

    /// `x · tanh(softplus(x))`.
    #[op = "mish(Tensor self) -> Tensor"]
    pub fn mish(&self) -> Result<Tensor> {
        act_row("mish", self, &[])
    }

    /// `x · relu6(x + 3) / 6`.
    #[op = "hardswish(Tensor self) -> Tensor"]
    pub fn hardswish(&self) -> Result<Tensor> {
        act_row("hardswish", self, &[])
    }

    /// `relu6(x + 3) / 6`.
    #[op = "hardsigmoid(Tensor self) -> Tensor"]
    pub fn hardsigmoid(&self) -> Result<Tensor> {
        act_row("hardsigmoid", self, &[])
    }

    /// `log(sigmoid(x))`, computed as `min(x, 0) - log1p(e^-|x|)`.
    #[op = "log_sigmoid(Tensor self) -> Tensor"]
    pub fn log_sigmoid(&self) -> Result<Tensor> {
        act_row("log_sigmoid", self, &[])
    }

    /// CELU: `elu(x, alpha, 1, 1/alpha)` (`F.celu`, default alpha 1).
    #[op = "celu(Tensor self, Scalar alpha=1.0) -> Tensor"]
    pub fn celu(&self, alpha: f64) -> Result<Tensor> {
        crate::ensure!(
            alpha != 0.0,
            Runtime,
            "ZeroDivisionError: alpha cannot be 0 for CELU"
        );
        self.elu(alpha, 1.0, 1.0 / alpha)
    }
}

/// Activation `name` on `x` at parameters `p`, from its row.
fn act_row(name: &str, x: &Tensor, p: &[f64]) -> Result<Tensor> {
    crate::rows::act_named(name).apply(x, p)
}

impl Tensor {
    /// `relu` in place (`x.relu_()`): negative elements become 0.
    pub fn relu_(&self) -> Result<()> {
        static OP: crate::dispatch::OpHandle = crate::dispatch::OpHandle::new("relu_");
        if let Some(r) = crate::dispatch::handle::intercept(&OP, || vec![self.into()]) {
            return r.map(|_| ());
        }
        if self.dtype() == crate::DType::Bool
            || crate::autograd::derivatives::inplace::check("relu_", self, &[])?
        {
            // relu's own error, or its node recorded (ReluBackward0)
            return crate::native::binary::inplace_from("relu_", self, &[], |t| t.relu());
        }
        // relu is clamp_min(0), which is maximum(x, 0): in place, one pass
        // (Note [In-place loops vectorise]), not relu into a copy
        self.maximum_(0)
    }

    fn gelu_impl(&self, approximate: &str) -> Result<Tensor> {
        float_only("GeluKernelImpl", self)?;
        match approximate {
            "none" if self.dtype() == crate::DType::F32 => {
                // Cheap erf form, with blocks holding inputs outside
                // its range (`km::gelu_fast_ok`) computed by the accurate one.
                let out = crate::native::iter::empty_like_layout(
                    self.shape(),
                    crate::DType::F32,
                    Some(self),
                )?;
                crate::native::iter::map_unary_with::<f32, f32>(
                    self,
                    &out,
                    |n, s, ss, d, ds| unsafe {
                        simd::map1_tiered(n, s, ss, d, ds, km::gelu_fast, km::gelu, |x: f32| {
                            !km::gelu_fast_ok(x)
                        })
                    },
                );
                Ok(out)
            }
            "none" => unary_float(self, km::gelu, |x: f64| {
                0.5 * x * super::super::special::erfc(-x / std::f64::consts::SQRT_2)
            }),
            "tanh" => unary_float(self, km::gelu_tanh, |x: f64| {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
            }),
            other => crate::bail!(
                Runtime,
                "approximate argument must be either none or tanh. (got '{other}')"
            ),
        }
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_ops(r);
    r.def_typed("relu_(Tensor(a!) self) -> Tensor(a!)", |x: Tensor| {
        x.relu_()?;
        Ok(x)
    });
}
