//! Pointwise ops with three operands or options: `where`, `clamp`, `lerp`,
//! `addcmul`, `addcdiv`, `masked_fill`, `nan_to_num`, `logit`.
//!
//! Most are compositions of the binary ops (so they inherit promotion,
//! broadcasting and, later, autograd); `where` has its own kernel.

use super::binary::{inplace_from, Operand};
use super::iter::map_ternary;
use crate::dispatch::Registry;
use crate::dtype::{result_type, DType, Element, ResultTypeArg};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;

fn operand_arg(o: &Operand) -> ResultTypeArg {
    match o {
        Operand::Tensor(t) => ResultTypeArg::Tensor(t.dtype(), t.dim()),
        Operand::Scalar(s) => ResultTypeArg::Scalar(*s),
    }
}

crate::ops! {
register = register_where;
/// `torch.where(condition, input, other)`: elements of `input` where
/// `condition` holds, else of `other`; all three broadcast.
#[op = "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"]
#[op = "where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor"]
#[op = "where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor"]
#[op = "where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor"]
pub fn where_(condition: &Tensor, input: impl Into<Operand>, other: impl Into<Operand>) -> Result<Tensor> {
    let (x, y) = (input, other);
    crate::ensure!(
        condition.dtype() == DType::Bool,
        Runtime,
        "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
        condition.dtype().name_title()
    );
    let dt = result_type(&[operand_arg(&x), operand_arg(&y)]);
    let (x, y) = (x.to_tensor(dt)?, y.to_tensor(dt)?);
    let (xg, yg) = (x.clone(), y.clone());
    let (x, y) = (x.detach(), y.detach());
    let s = broadcast_shapes(condition.shape(), x.shape()).map_err(|e| e.context("where"))?;
    let s = broadcast_shapes(&s, y.shape()).map_err(|e| e.context("where"))?;
    let out = Tensor::empty(&s, dt)?;
    crate::dispatch_dtype!(dt, T => map_ternary::<bool, T, T, T>(condition, &x, &y, &out, |c, a, b| if c { a } else { b }));
    crate::autograd::derivatives::shape::where_(condition, &xg, &yg, out)
}
}

crate::ops! {
    register = register_ops;
    /// `torch.clamp(self, min, max)`: NaN propagates; when `min > max`
    /// every element becomes `max`, as in PyTorch.
    #[op = "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"]
    #[op = "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor"]
    pub fn clamp(&self, min: Option<impl Into<Operand>>, max: Option<impl Into<Operand>>) -> Result<Tensor> {
        crate::ensure!(
            min.is_some() || max.is_some(),
            Runtime,
            "torch.clamp: At least one of 'min' or 'max' must not be None"
        );
        let mut ins = vec![self];
        for b in [&min, &max].into_iter().flatten() {
            if let Operand::Tensor(t) = b {
                ins.push(t);
            }
        }
        let y = crate::autograd::raw(&ins, || -> Result<Tensor> {
            let mut r = self.clone();
            if let Some(m) = &min {
                r = r.maximum(m.clone())?;
            }
            if let Some(m) = &max {
                r = r.minimum(m.clone())?;
            }
            Ok(r)
        })?;
        crate::autograd::derivatives::pointwise::clamp(self, min.as_ref(), max.as_ref(), y)
    }

    /// `clamp(min=lo)`.
    #[op = "clamp_min(Tensor self, Scalar min) -> Tensor"]
    #[op = "clamp_min.Tensor(Tensor self, Tensor min) -> Tensor"]
    pub fn clamp_min(&self, lo: impl Into<Operand>) -> Result<Tensor> {
        self.clamp(Some(lo), None::<Operand>)
    }

    /// `clamp(max=hi)`.
    #[op = "clamp_max(Tensor self, Scalar max) -> Tensor"]
    #[op = "clamp_max.Tensor(Tensor self, Tensor max) -> Tensor"]
    pub fn clamp_max(&self, hi: impl Into<Operand>) -> Result<Tensor> {
        self.clamp(None::<Operand>, Some(hi))
    }

    /// In-place `clamp`.
    #[op = "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)"]
    #[op = "clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)"]
    pub fn clamp_(&self, min: Option<impl Into<Operand>>, max: Option<impl Into<Operand>>) -> Result<()> {
        let others: Vec<Tensor> = [&min, &max]
            .into_iter()
            .flatten()
            .flat_map(|o: &Operand| o.tensors().to_vec())
            .collect();
        inplace_from("clamp_", self, &others, |t| t.clamp(min, max))
    }

    /// `self + weight * (end - self)`, computed from the nearer end for
    /// accuracy as PyTorch does (float dtypes).
    #[op = "lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor"]
    #[op = "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor"]
    pub fn lerp(&self, end: &Tensor, weight: impl Into<Operand>) -> Result<Tensor> {
        let w = weight;
        crate::ensure!(
            self.is_floating_point() && self.dtype() == end.dtype(),
            Runtime,
            "lerp: expected dtype {} for `end` but got dtype {} (floating inputs required)",
            self.dtype(),
            end.dtype()
        );
        let w = w.to_tensor(self.dtype())?;
        let y = crate::autograd::raw(&[self, end, &w], || self.lerp_impl(end, &w))?;
        crate::autograd::derivatives::pointwise::lerp(self, end, &w, y)
    }

    fn lerp_impl(&self, end: &Tensor, w: &Tensor) -> Result<Tensor> {
        let s = broadcast_shapes(self.shape(), end.shape()).map_err(|e| e.context("lerp"))?;
        let s = broadcast_shapes(&s, w.shape()).map_err(|e| e.context("lerp"))?;
        let out = Tensor::empty(&s, self.dtype())?;
        crate::dispatch_dtype!(self.dtype(), T => {
            map_ternary::<T, T, T, T>(self, end, w, &out, |a: T, b: T, t: T| {
                let (a, b, t) = (a.to_f64(), b.to_f64(), t.to_f64());
                let d = b - a;
                T::from_f64(if t.abs() < 0.5 { a + t * d } else { b - d * (1.0 - t) })
            })
        });
        Ok(out)
    }

    /// `self + value * t1 * t2`.
    #[op = "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"]
    pub fn addcmul(&self, t1: &Tensor, t2: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        self.add(t1.mul(t2)?.mul(value)?)
    }

    /// `self + value * t1 / t2`.
    #[op = "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"]
    pub fn addcdiv(&self, t1: &Tensor, t2: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        crate::ensure!(
            t1.is_floating_point() || t2.is_floating_point(),
            Runtime,
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2."
        );
        self.add(t1.div(t2)?.mul(value)?)
    }

    /// In-place `lerp`.
    #[op = "lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)"]
    #[op = "lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)"]
    pub fn lerp_(&self, end: &Tensor, weight: impl Into<Operand>) -> Result<()> {
        let w = weight;
        let mut others = vec![end.clone()];
        others.extend(w.tensors().iter().cloned());
        inplace_from("lerp_", self, &others, |t| t.lerp(end, w))
    }

    /// In-place `addcmul`.
    #[op = "addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)"]
    pub fn addcmul_(&self, t1: &Tensor, t2: &Tensor, value: impl Into<Scalar>) -> Result<()> {
        let others = [t1.clone(), t2.clone()];
        inplace_from("addcmul_", self, &others, |t| t.addcmul(t1, t2, value))
    }

    /// In-place `addcdiv`.
    #[op = "addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)"]
    pub fn addcdiv_(&self, t1: &Tensor, t2: &Tensor, value: impl Into<Scalar>) -> Result<()> {
        let others = [t1.clone(), t2.clone()];
        inplace_from("addcdiv_", self, &others, |t| t.addcdiv(t1, t2, value))
    }

    /// Elements where `mask` is true replaced by `value` (dtype kept).
    #[op = "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor"]
    #[op = "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor"]
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Operand>) -> Result<Tensor> {
        let v = value;
        crate::ensure!(
            mask.dtype() == DType::Bool,
            Runtime,
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().name_title()
        );
        if let Operand::Scalar(s) = &v {
            s.check_fits(self.dtype())?;
        }
        if let Operand::Tensor(t) = &v {
            crate::ensure!(
                t.dim() == 0,
                Runtime,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                t.dim()
            );
        }
        let vt = crate::autograd::with_no_grad(|| v.to_tensor(self.dtype()))?;
        let s =
            broadcast_shapes(self.shape(), mask.shape()).map_err(|e| e.context("masked_fill"))?;
        let out = Tensor::empty(&s, self.dtype())?;
        crate::dispatch_dtype!(self.dtype(), T => map_ternary::<bool, T, T, T>(mask, &vt, self, &out, |c, a, b| if c { a } else { b }));
        let value = match &v {
            Operand::Tensor(t) => Some(t),
            Operand::Scalar(_) => None,
        };
        crate::autograd::derivatives::shape::masked_fill(self, mask, value, out)
    }

    /// In-place `masked_fill`; the mask must broadcast to `self`.
    #[op = "masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)"]
    #[op = "masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)"]
    pub fn masked_fill_(&self, mask: &Tensor, value: impl Into<Operand>) -> Result<()> {
        let v = value;
        let others = v.tensors().to_vec();
        inplace_from("masked_fill_", self, &others, |t| t.masked_fill(mask, v))
    }

    /// Replace NaN by `nan`, +inf by `posinf` and -inf by `neginf` (defaults:
    /// 0, the dtype's largest and smallest finite values).
    #[op = "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor"]
    pub fn nan_to_num(&self, nan: Option<f64>, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        if !self.is_floating_point() {
            return self.deep_clone();
        }
        let hi = self.dtype().finite_max().expect("floating dtype");
        let lo = -hi;
        let (n, p, m) = (
            nan.unwrap_or(0.0),
            posinf.unwrap_or(hi),
            neginf.unwrap_or(lo),
        );
        let y = crate::autograd::raw(&[self], || {
            super::unary::unary_float(
                self,
                move |x: f32| {
                    if x.is_nan() {
                        n as f32
                    } else if x == f32::INFINITY {
                        p as f32
                    } else if x == f32::NEG_INFINITY {
                        m as f32
                    } else {
                        x
                    }
                },
                move |x: f64| {
                    if x.is_nan() {
                        n
                    } else if x == f64::INFINITY {
                        p
                    } else if x == f64::NEG_INFINITY {
                        m
                    } else {
                        x
                    }
                },
            )
        })?;
        crate::autograd::derivatives::special::nan_to_num(self, y)
    }

    /// `log(z / (1 - z))` with `z` clamped to `[eps, 1 - eps]` when `eps` is given.
    #[op = "logit(Tensor self, float? eps=None) -> Tensor"]
    pub fn logit(&self, eps: Option<f64>) -> Result<Tensor> {
        let f64f = move |x: f64| {
            let z = match eps {
                // torch's order: below eps first, then above 1 - eps (an
                // eps over one half never panics); NaN stays NaN
                Some(e) if x < e => e,
                Some(e) if x > 1.0 - e => 1.0 - e,
                Some(_) => x,
                None => x,
            };
            (z / (1.0 - z)).ln()
        };
        let y = crate::autograd::raw(&[self], || {
            super::unary::unary_float(self, move |x: f32| f64f(x as f64) as f32, f64f)
        })?;
        crate::autograd::derivatives::special::logit(self, eps, y)
    }

}

impl Tensor {
    /// ψ⁽ⁿ⁾, the n-th derivative of digamma (`torch.polygamma(n, self)`).
    pub fn polygamma(&self, n: u32) -> Result<Tensor> {
        let f64f = move |x: f64| super::special::polygamma(n, x);
        let y = crate::autograd::raw(&[self], || {
            super::unary::unary_float(self, move |x: f32| f64f(x as f64) as f32, f64f)
        })?;
        crate::autograd::derivatives::special::polygamma(self, n, y)
    }
}

pub(crate) fn register(r: &mut Registry) {
    register_where(r);
    register_ops(r);
    // its self is not its first argument
    r.def_typed(
        "polygamma(int n, Tensor self) -> Tensor",
        |n: i64, x: Tensor| {
            crate::ensure!(
                n >= 0,
                Runtime,
                "polygamma(n, x) does not support negative n."
            );
            let n = u32::try_from(n).map_err(|_| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    format!("polygamma: order {n} is too large"),
                )
            })?;
            x.polygamma(n)
        },
    );
}
