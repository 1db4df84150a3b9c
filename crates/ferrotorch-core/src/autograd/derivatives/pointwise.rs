//! Elementwise derivatives. `g` is the output gradient, `x` the input,
//! `y` the result; for binary ops `a`, `b` are the operands (`b` may be a
//! number).

use super::want;
use crate::autograd::node::GradVec;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::native::binary::Operand;
use crate::scalar::Scalar;
use crate::tensor::Tensor;
use std::f64::consts::{LN_10, LN_2, PI};

/// d op(x) / dx · g for the unary ops of `native::unary` and
/// `native::unary_exact`, from the input `x` and the result `y`.
fn unary_formula(op: &str, g: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    if let Some(r) = super::fused::unary(op, g, x, y)? {
        return Ok(r);
    }
    Ok(match op {
        "neg" => g.neg()?,
        "abs" => g.mul(x.sign()?)?,
        "sign" | "floor" | "ceil" | "round" | "trunc" => g.zeros_like()?,
        "exp" => g.mul(y)?,
        "exp2" => g.mul(y)?.mul(LN_2)?,
        "expm1" => g.mul(y.add(1.0)?)?,
        "log" => g.div(x)?,
        "log2" => g.div(x.mul(LN_2)?)?,
        "log10" => g.div(x.mul(LN_10)?)?,
        "log1p" => g.div(x.add(1.0)?)?,
        "sqrt" => g.div(y.mul(2.0)?)?,
        "rsqrt" => g.mul(y.pow(3.0)?)?.mul(-0.5)?,
        "reciprocal" => g.mul(y.mul(y)?)?.neg()?,
        "sin" => g.mul(x.cos()?)?,
        "cos" => g.mul(x.sin()?)?.neg()?,
        "tan" => g.mul(y.mul(y)?.add(1.0)?)?,
        "asin" => g.mul(x.mul(x)?.neg()?.add(1.0)?.rsqrt()?)?,
        "acos" => g.mul(x.mul(x)?.neg()?.add(1.0)?.rsqrt()?)?.neg()?,
        "atan" => g.div(x.mul(x)?.add(1.0)?)?,
        "sinh" => g.mul(x.cosh()?)?,
        "cosh" => g.mul(x.sinh()?)?,
        "tanh" => g.mul(y.mul(y)?.neg()?.add(1.0)?)?,
        "asinh" => g.mul(x.mul(x)?.add(1.0)?.rsqrt()?)?,
        "acosh" => g.mul(x.mul(x)?.sub(1.0)?.rsqrt()?)?,
        "atanh" => g.div(x.mul(x)?.neg()?.add(1.0)?)?,
        "sigmoid" => g.mul(y.mul(y.neg()?.add(1.0)?)?)?,
        "erf" => g.mul(x.mul(x)?.neg()?.exp()?.mul(2.0 / PI.sqrt())?)?,
        "erfc" => g.mul(x.mul(x)?.neg()?.exp()?.mul(-2.0 / PI.sqrt())?)?,
        "erfinv" => g.mul(y.mul(y)?.exp()?.mul(PI.sqrt() / 2.0)?)?,
        "lgamma" => g.mul(x.digamma()?)?,
        "digamma" => g.mul(x.polygamma(1)?)?,
        "frac" => g.clone(),
        "relu" => g.mul(y.gt(0.0)?.to_dtype(g.dtype())?)?,
        "silu" => {
            let s = x.sigmoid()?;
            g.mul(s.mul(x.mul(s.neg()?.add(1.0)?)?.add(1.0)?)?)?
        }
        other => crate::bail!(
            NotImplemented,
            "the derivative for '{other}' is not implemented."
        ),
    })
}

/// Record a unary op (`exp`, `sin`, ...) whose formula is in the table above.
pub(crate) fn unary(op: &'static str, x: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    // Save only what the formula reads, as PyTorch does (saving more would
    // make harmless in-place updates fail the version check).
    let uses_result = matches!(
        op,
        "exp"
            | "exp2"
            | "expm1"
            | "sqrt"
            | "rsqrt"
            | "reciprocal"
            | "tan"
            | "tanh"
            | "sigmoid"
            | "erfinv"
            | "relu"
    );
    let save = if uses_result {
        Save::Output(0)
    } else {
        Save::Tensor(x)
    };
    record1(
        super::node_name(op, 0),
        &[x],
        y,
        smallvec::smallvec![save],
        move |c: &Ctx| {
            let s = c.saved(0);
            Ok(smallvec::smallvec![Some(unary_formula(
                op,
                c.grad(),
                s,
                s
            )?)])
        },
    )
}

/// A binary op's right operand as seen by a formula: the saved tensor or the number.
#[derive(Clone)]
enum B {
    T,
    S(Scalar),
}

fn rhs(c: &Ctx, b: &B, idx: usize) -> Operand {
    match b {
        B::T => Operand::Tensor(c.saved(idx).clone()),
        B::S(s) => Operand::Scalar(*s),
    }
}

/// Gradients (for `a`, for `b`) of a binary op.
fn binary_formula(op: &str, c: &Ctx, a: &Tensor, b: Operand, y: &Tensor) -> Result<GradVec> {
    let g = c.grad();
    let bt = |dt| b.to_tensor(dt);
    Ok(match op {
        "mul" => smallvec::smallvec![want(c, 0, || g.mul(b.clone()))?, want(c, 1, || g.mul(a))?],
        "div" => smallvec::smallvec![
            want(c, 0, || g.div(b.clone()))?,
            want(c, 1, || {
                let bb = bt(g.dtype())?;
                g.mul(a)?.div(bb.mul(&bb)?)?.neg()
            })?,
        ],
        "pow" => smallvec::smallvec![
            want(c, 0, || {
                // b · a^(b-1), and 0 where b == 0 (so 0^0 has gradient 0)
                let bb = bt(a.dtype())?;
                let d = bb.mul(a.pow(bb.sub(1.0)?)?)?;
                g.mul(d.masked_fill(&bb.eq(0.0)?, 0.0)?)
            })?,
            want(c, 1, || {
                // y · ln a, and 0 where a == 0 and b >= 0
                let bb = bt(a.dtype())?;
                let d = y.mul(a.log()?)?;
                let zero = a.eq(0.0)?.logical_and(&bb.ge(0.0)?)?;
                g.mul(d.masked_fill(&zero, 0.0)?)
            })?,
        ],
        "atan2" => {
            let bb = bt(a.dtype())?;
            let den = a.mul(a)?.add(bb.mul(&bb)?)?;
            smallvec::smallvec![
                want(c, 0, || g.mul(&bb)?.div(&den))?,
                want(c, 1, || g.mul(a)?.neg()?.div(&den))?,
            ]
        }
        "maximum" | "minimum" | "fmax" | "fmin" => {
            // The larger (smaller) operand takes the gradient; ties split it.
            let bb = bt(a.dtype())?;
            let pick_a = if op.ends_with("max") || op == "maximum" {
                a.gt(&bb)?
            } else {
                a.lt(&bb)?
            };
            let pick_a = if op.starts_with('f') {
                // fmax/fmin: a NaN operand loses to a number
                pick_a.logical_or(&bb.isnan()?.logical_and(&a.isnan()?.logical_not()?)?)?
            } else {
                pick_a
            };
            let tie = a.eq(&bb)?;
            let half = g.mul(0.5)?;
            let ga =
                crate::native::pointwise::where_(&tie, &half, g.mul(pick_a.to_dtype(g.dtype())?)?)?;
            let gb = crate::native::pointwise::where_(&tie, &half, g.sub(&ga)?)?;
            smallvec::smallvec![Some(ga), want(c, 1, || Ok(gb))?]
        }
        "remainder" => smallvec::smallvec![
            Some(g.clone()),
            want(c, 1, || g.mul(a.div_mode(b.clone(), Some("floor"))?)?.neg())?,
        ],
        "fmod" => smallvec::smallvec![
            Some(g.clone()),
            want(c, 1, || g.mul(a.div_mode(b.clone(), Some("trunc"))?)?.neg())?,
        ],
        "hypot" => smallvec::smallvec![
            want(c, 0, || g.mul(a)?.div(y))?,
            want(c, 1, || g.mul(bt(a.dtype())?)?.div(y))?,
        ],
        "copysign" => smallvec::smallvec![
            want(c, 0, || {
                // ±1 where the sign changed or not; 0 at a == 0
                let s = a.sign()?.mul(y.sign()?)?;
                g.mul(s)
            })?,
            want(c, 1, || g.zeros_like())?,
        ],
        "xlogy" => smallvec::smallvec![
            want(c, 0, || {
                let bb = bt(a.dtype())?;
                let d = bb.log()?;
                let zero = a.eq(0.0)?.logical_and(&bb.isnan()?.logical_not()?)?;
                g.mul(d.masked_fill(&zero, 0.0)?)
            })?,
            want(c, 1, || g.mul(a)?.div(bt(a.dtype())?))?,
        ],
        other => crate::bail!(
            NotImplemented,
            "the derivative for '{other}' is not implemented."
        ),
    })
}

/// Record a binary op `y = op(a, b)` (`alpha` scales `b` for add/sub).
pub(crate) fn binary(
    op: &'static str,
    a: &Tensor,
    b: &Operand,
    alpha: f64,
    y: Tensor,
) -> Result<Tensor> {
    let pair;
    let inputs: &[&Tensor] = match b {
        Operand::Tensor(t) => {
            pair = [a, t];
            &pair
        }
        Operand::Scalar(_) => std::slice::from_ref(&a),
    };
    if !needs_grad(inputs) {
        return Ok(y);
    }
    let overload = if op == "pow" && inputs.len() == 2 {
        1
    } else {
        0
    };
    let name = super::node_name(op, overload);
    if matches!(op, "add" | "sub") {
        // nothing saved: the gradients are g and ±alpha·g
        let gb = if op == "sub" { -alpha } else { alpha };
        return record1(name, inputs, y, smallvec::smallvec![], move |c: &Ctx| {
            let g = c.grad();
            let mut r = smallvec::smallvec![Some(g.clone()), want(c, 1, || g.mul(gb))?];
            r.truncate(c.needs.len());
            Ok(r)
        });
    }
    // Saved: a, then b when it is a tensor, then the result when the
    // formula reads it (saving more would fail harmless in-place updates).
    let bk = match b {
        Operand::Tensor(_) => B::T,
        Operand::Scalar(s) => B::S(*s),
    };
    let uses_result = matches!(op, "pow" | "hypot" | "copysign");
    // mul and div read `a` only for b's gradient, and mul reads `b` only for
    // a's: like PyTorch's generated code, save them only when that gradient
    // is wanted (`y * 2.0` saves nothing). The formula then gets `g` in the
    // unsaved operand's place, never read since its gradient isn't computed.
    let b_wants = inputs.len() == 2 && needs_grad(&inputs[1..]);
    let save_a = !matches!(op, "mul" | "div") || b_wants;
    let save_b = inputs.len() == 2 && (op != "mul" || needs_grad(&inputs[..1]));
    let mut saves: smallvec::SmallVec<[Save<'_>; 2]> = smallvec::SmallVec::new();
    if save_a {
        saves.push(Save::Tensor(a));
    }
    if save_b {
        saves.push(Save::Tensor(inputs[1]));
    }
    if uses_result {
        saves.push(Save::Output(0));
    }
    record1(name, inputs, y, saves, move |c: &Ctx| {
        let a = if save_a { c.saved(0) } else { c.grad() };
        let b = match bk {
            B::T if !save_b => Operand::Tensor(c.grad().clone()),
            _ => rhs(c, &bk, usize::from(save_a)),
        };
        // `y` is only read by the ops that saved it
        let y = if uses_result {
            c.saved(c.saved.len() - 1)
        } else {
            a
        };
        let mut r = binary_formula(op, c, a, b, y)?;
        r.truncate(c.needs.len());
        Ok(r)
    })
}

/// `clamp(x, min, max)`: the gradient passes where min <= x <= max
/// (boundaries included, as in PyTorch).
pub(crate) fn clamp(
    x: &Tensor,
    min: Option<&Operand>,
    max: Option<&Operand>,
    y: Tensor,
) -> Result<Tensor> {
    let mut inputs = vec![x];
    for t in [min, max].into_iter().flatten() {
        if let Operand::Tensor(t) = t {
            inputs.push(t);
        }
    }
    if !needs_grad(&inputs) {
        return Ok(y);
    }
    let (lo, hi) = (min.cloned(), max.cloned());
    let tensor_bounds = inputs.len() > 1;
    let name = match (&lo, &hi, tensor_bounds) {
        (_, _, true) => "ClampBackward0",
        (Some(_), None, _) => "ClampMinBackward0",
        (None, Some(_), _) => "ClampMaxBackward0",
        _ => "ClampBackward1",
    };
    let n = inputs.len();
    record1(
        name,
        &inputs,
        y,
        smallvec::smallvec![Save::Tensor(x)],
        move |c: &Ctx| {
            let x = c.saved(0);
            let mut keep = Tensor::ones(x.shape(), crate::DType::Bool)?;
            let mut lo_mask = None;
            let mut hi_mask = None;
            if let Some(l) = &lo {
                let m = x.ge(l.clone())?;
                lo_mask = Some(m.logical_not()?);
                keep = keep.logical_and(&m)?;
            }
            if let Some(h) = &hi {
                let m = x.le(h.clone())?;
                hi_mask = Some(m.logical_not()?);
                keep = keep.logical_and(&m)?;
            }
            let g = c.grad();
            let mut out = smallvec::smallvec![Some(g.mul(keep.to_dtype(g.dtype())?)?)];
            // tensor bounds take the gradient where they clipped
            for (bound, mask) in [(&lo, lo_mask), (&hi, hi_mask)] {
                if let Some(Operand::Tensor(_)) = bound {
                    let m = mask.expect("bound present");
                    out.push(Some(g.mul(m.to_dtype(g.dtype())?)?));
                }
            }
            out.truncate(n);
            Ok(out)
        },
    )
}

/// `polygamma(n, x)`: ψ⁽ⁿ⁺¹⁾.
pub(crate) fn polygamma(x: &Tensor, n: u32, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "PolygammaBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x)],
        move |c: &Ctx| {
            Ok(smallvec::smallvec![Some(
                c.grad().mul(&c.saved(0).polygamma(n + 1)?)?
            )])
        },
    )
}

/// `logit(x, eps)`: `1 / (x (1 - x))`; with `eps`, 0 outside
/// `[eps, 1 - eps]` where the input was clamped.
pub(crate) fn logit(x: &Tensor, eps: Option<f64>, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "LogitBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x)],
        move |c: &Ctx| {
            let x = c.saved(0);
            let gx = c.grad().div(&x.mul(&x.neg()?.add(1.0)?)?)?;
            Ok(smallvec::smallvec![Some(match eps {
                Some(e) => gx.masked_fill(&x.lt(e)?.logical_or(&x.gt(1.0 - e)?)?, 0.0)?,
                None => gx,
            })])
        },
    )
}

/// `nan_to_num`: replaced (non-finite) elements get no gradient.
pub(crate) fn nan_to_num(x: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    record1(
        "NanToNumBackward0",
        &[x],
        y,
        smallvec::smallvec![Save::Tensor(x)],
        |c: &Ctx| {
            Ok(smallvec::smallvec![Some(c.grad().masked_fill(
                &c.saved(0).isfinite()?.logical_not()?,
                0.0,
            )?)])
        },
    )
}

/// `lerp(a, b, w) = a + w (b - a)`.
pub(crate) fn lerp(a: &Tensor, b: &Tensor, w: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a, b, w]) {
        return Ok(y);
    }
    let saves = smallvec::smallvec![Save::Tensor(a), Save::Tensor(b), Save::Tensor(w)];
    record1("LerpBackward1", &[a, b, w], y, saves, |c: &Ctx| {
        let (g, a, b, w) = (c.grad(), c.saved(0), c.saved(1), c.saved(2));
        Ok(smallvec::smallvec![
            want(c, 0, || g.mul(&w.neg()?.add(1.0)?))?,
            want(c, 1, || g.mul(w))?,
            want(c, 2, || g.mul(&b.sub(a)?))?,
        ])
    })
}
