//! Pointwise activations with fast f32 kernels: `relu`, `gelu` (exact and
//! tanh), `silu`. Floating dtypes only, as in PyTorch (`relu` also takes
//! integers).

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

impl Tensor {
    /// max(x, 0). NaN stays NaN.
    pub fn relu(&self) -> Result<Tensor> {
        crate::ensure!(
            self.dtype() != crate::DType::Bool,
            NotImplemented,
            "relu: \"clamp_min_scalar_cpu\" not implemented for 'Bool'"
        );
        let y = crate::autograd::raw(&[self], || self.clamp_min(0))?;
        crate::autograd::derivatives::pointwise::unary("relu", self, y)
    }

    /// GELU: `approximate = "none"` (erf form) or `"tanh"`.
    pub fn gelu(&self, approximate: &str) -> Result<Tensor> {
        let y = crate::autograd::raw(&[self], || self.gelu_impl(approximate))?;
        crate::autograd::derivatives::nn::gelu(self, approximate == "tanh", y)
    }

    fn gelu_impl(&self, approximate: &str) -> Result<Tensor> {
        float_only("GeluKernelImpl", self)?;
        match approximate {
            "none" if self.dtype() == crate::DType::F32 => {
                // Cheap erf form, with blocks holding inputs below
                // GELU_FAST_MIN recomputed by the accurate one.
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
                            x < km::GELU_FAST_MIN
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

    /// SiLU / swish: `x * sigmoid(x)`.
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
}

pub(crate) fn register(r: &mut Registry) {
    r.def("relu(Tensor self) -> Tensor", |a| {
        Ok(a.tensor(0)?.relu()?.into())
    });
    r.def(
        "gelu(Tensor self, *, str approximate='none') -> Tensor",
        |a| Ok(a.tensor(0)?.gelu(&a.str(1)?)?.into()),
    );
    r.def("silu(Tensor self) -> Tensor", |a| {
        Ok(a.tensor(0)?.silu()?.into())
    });
}
