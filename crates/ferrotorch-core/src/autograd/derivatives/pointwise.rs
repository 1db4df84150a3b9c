//! Elementwise derivatives: the recording of the ops with a pointwise
//! row (Note [Pointwise rows]), and the eager-only formulas of the ops
//! outside the rows' algebra. `g` is the output gradient, `x` the input,
//! `y` the result; for binary ops `a`, `b` are the operands (`b` may be a
//! number).

use super::want;
use crate::autograd::node::GradVec;
use crate::autograd::node::Save;
use crate::autograd::{needs_grad, record1, Ctx};
use crate::error::Result;
use crate::native::binary::Operand;
use crate::rows::{BinaryIn, BinaryRow, Reads, TVal, UnaryRow, When};
use crate::scalar::Scalar;
use crate::tensor::Tensor;
use std::f64::consts::PI;

/// `f(x) - h(x)/x` (the derivative of `J₁` and `I₁` from `J₀`/`I₀` and
/// themselves), `at_zero` where `x` is 0.
fn over_x_at_zero(
    x: &Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor>,
    h: impl Fn(&Tensor) -> Result<Tensor>,
    at_zero: f64,
) -> Result<Tensor> {
    let zero = x.eq(0.0)?;
    let safe = crate::native::where_(&zero, 1.0, x)?;
    let d = f(x)?.sub(&h(x)?.div(&safe)?)?;
    crate::native::where_(&zero, at_zero, &d)
}

/// A unary formula: the input gradient from `g` and the tensor it reads.
type UnaryFormula = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// The derivative of each unary op of `native::unary`,
/// `native::unary_exact` and `native::special_ops` without a pointwise row
/// (their formulas need functions outside the rows' algebra), one entry
/// per op: what it reads and the formula of `g` and that tensor (`x` for
/// [`Reads::Input`], `y` for [`Reads::Result`]).
fn unary_derivative(op: &str) -> Option<(Reads, UnaryFormula)> {
    use Reads::{Input, Result as Res};
    Some(match op {
        "sinh" => (Input, |g, x| g.mul(x.cosh()?)),
        "cosh" => (Input, |g, x| g.mul(x.sinh()?)),
        "lgamma" => (Input, |g, x| g.mul(x.digamma()?)),
        "digamma" => (Input, |g, x| g.mul(x.polygamma(1)?)),
        // torch.special (native::special_ops), as FunctionsManual.cpp
        "i0" => (Input, |g, x| g.mul(x.special_i1()?)),
        "special_i0e" => (Input, |g, x| {
            g.mul(x.special_i1e()?.sub(&x.sign()?.mul(&x.special_i0e()?)?)?)
        }),
        "special_i1" => (Input, |g, x| {
            // I₁'(x) = I₀(x) - I₁(x)/x, ½ at 0
            let zero = x.eq(0.0)?;
            let safe = crate::native::where_(&zero, 1.0, x)?;
            let d = x.i0()?.sub(&x.special_i1()?.div(&safe)?)?;
            g.mul(&crate::native::where_(&zero, 0.5, &d)?)
        }),
        "special_i1e" => (Input, |g, x| {
            let zero = x.eq(0.0)?;
            let safe = crate::native::where_(&zero, 1.0, x)?;
            let d = x
                .special_i0e()?
                .sub(&x.special_i1e()?.mul(&x.sign()?.add(&safe.reciprocal()?)?)?)?;
            g.mul(&crate::native::where_(&zero, 0.5, &d)?)
        }),
        "special_ndtr" => (Input, |g, x| {
            g.mul(&x.mul(x)?.mul(-0.5)?.exp()?.div((2.0 * PI).sqrt())?)
        }),
        "special_ndtri" => (Res, |g, y| {
            g.mul(&y.mul(y)?.mul(0.5)?.exp()?.mul((2.0 * PI).sqrt())?)
        }),
        "special_log_ndtr" => (Input, |g, x| {
            let y = x.special_log_ndtr()?;
            g.mul(
                &x.mul(x)?
                    .mul(-0.5)?
                    .sub(&y)?
                    .exp()?
                    .div((2.0 * PI).sqrt())?,
            )
        }),
        "special_erfcx" => (Input, |g, x| {
            g.mul(&x.mul(&x.special_erfcx()?)?.mul(2.0)?.sub(2.0 / PI.sqrt())?)
        }),
        "special_entr" => (Input, |g, x| g.mul(&x.log()?.add(1.0)?.neg()?)),
        "special_bessel_j0" => (Input, |g, x| g.mul(&x.special_bessel_j1()?.neg()?)),
        "special_bessel_y0" => (Input, |g, x| g.mul(&x.special_bessel_y1()?.neg()?)),
        "special_bessel_y1" => (Input, |g, x| {
            g.mul(
                &x.special_bessel_y0()?
                    .sub(&x.special_bessel_y1()?.div(x)?)?,
            )
        }),
        "special_bessel_j1" => (Input, |g, x| {
            g.mul(&over_x_at_zero(
                x,
                |x| x.special_bessel_j0(),
                |x| x.special_bessel_j1(),
                0.5,
            )?)
        }),
        "special_modified_bessel_i0" => (Input, |g, x| g.mul(&x.special_modified_bessel_i1()?)),
        "special_modified_bessel_i1" => (Input, |g, x| {
            g.mul(&over_x_at_zero(
                x,
                |x| x.special_modified_bessel_i0(),
                |x| x.special_modified_bessel_i1(),
                0.5,
            )?)
        }),
        "special_modified_bessel_k0" => {
            (Input, |g, x| g.mul(&x.special_modified_bessel_k1()?.neg()?))
        }
        "special_modified_bessel_k1" => (Input, |g, x| {
            // K₁' = -K₀ - K₁/x
            let k1x = x.special_modified_bessel_k1()?.div(x)?;
            g.mul(&x.special_modified_bessel_k0()?.neg()?.sub(&k1x)?)
        }),
        "special_scaled_modified_bessel_k0" => (Input, |g, x| {
            g.mul(
                &x.special_scaled_modified_bessel_k0()?
                    .sub(&x.special_scaled_modified_bessel_k1()?)?,
            )
        }),
        "special_scaled_modified_bessel_k1" => (Input, |g, x| {
            let k1 = x.special_scaled_modified_bessel_k1()?;
            g.mul(
                &k1.sub(&x.special_scaled_modified_bessel_k0()?)?
                    .sub(&k1.div(x)?)?,
            )
        }),
        _ => return None,
    })
}

/// A unary op's derivative: its row, or an eager-only formula.
#[derive(Clone, Copy)]
enum UnaryD {
    Row(&'static UnaryRow),
    Eager(UnaryFormula),
}

/// Record a unary op (`exp`, `sin`, ...) with its row (Note [Pointwise
/// rows]) or its entry in [`unary_derivative`].
pub(crate) fn unary(op: &'static str, x: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[x]) {
        return Ok(y);
    }
    let (reads, d) = match crate::rows::unary(op) {
        Some(row) => (row.reads, UnaryD::Row(row)),
        None => match unary_derivative(op) {
            Some((reads, f)) => (reads, UnaryD::Eager(f)),
            None => crate::bail!(
                NotImplemented,
                "the derivative for '{op}' is not implemented."
            ),
        },
    };
    let saves = match reads {
        Reads::Nothing => smallvec::smallvec![],
        Reads::Input => smallvec::smallvec![Save::Tensor(x)],
        Reads::Result => smallvec::smallvec![Save::Output(0)],
    };
    record1(super::node_name(op, 0), &[x], y, saves, move |c: &Ctx| {
        let g = c.grad();
        let s = if reads == Reads::Nothing {
            g
        } else {
            c.saved(0)
        };
        let dx = match d {
            UnaryD::Row(row) => match super::fused::unary(row, g, s)? {
                Some(d) => d,
                None => row.grad_tensor(g, s)?,
            },
            UnaryD::Eager(f) => f(g, s)?,
        };
        Ok(smallvec::smallvec![Some(dx)])
    })
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

/// What a binary formula reads: each operand, and whether the result.
#[derive(Clone, Copy)]
struct BinaryReads {
    a: When,
    b: When,
    result: bool,
}

/// A binary formula: gradients (for `a`, for `b`) from the context, the
/// operands, the result and `alpha` (add/sub's scale of `b`). An operand
/// the formula does not read is `g` in its place.
type BinaryFormula = fn(&Ctx, &Tensor, Operand, &Tensor, f64) -> Result<GradVec>;

/// The derivative of each binary op of `native::binary` without a
/// pointwise row, one entry per op: what it reads, and its formula.
fn binary_derivative(op: &str) -> Option<(BinaryReads, BinaryFormula)> {
    use When::Always;
    let reads = |a, b, result| BinaryReads { a, b, result };
    Some(match op {
        "atan2" => (reads(Always, Always, false), |c, a, b, _, _| {
            let g = c.grad();
            let bb = b.to_tensor(a.dtype())?;
            // 1 / (a² + b²), 0 where that sum is 0 (at the origin, or
            // underflowed), as torch: its gradient there is 0, not NaN
            let den = a.mul(a)?.add(bb.mul(&bb)?)?;
            let recip = crate::native::where_(&den.eq(0.0)?, 0.0, &den.reciprocal()?)?;
            Ok(smallvec::smallvec![
                want(c, 0, || g.mul(&bb)?.mul(&recip))?,
                want(c, 1, || g.mul(&a.neg()?)?.mul(&recip))?,
            ])
        }),
        "fmax" => (reads(Always, Always, false), |c, a, b, _, _| {
            fextremum(c, a, b, true)
        }),
        "fmin" => (reads(Always, Always, false), |c, a, b, _, _| {
            fextremum(c, a, b, false)
        }),
        "remainder" => (reads(Always, Always, false), |c, a, b, _, _| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                Some(g.clone()),
                want(c, 1, || g.mul(a.div_mode(b.clone(), Some("floor"))?)?.neg())?,
            ])
        }),
        "fmod" => (reads(Always, Always, false), |c, a, b, _, _| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                Some(g.clone()),
                want(c, 1, || g.mul(a.div_mode(b.clone(), Some("trunc"))?)?.neg())?,
            ])
        }),
        "hypot" => (reads(Always, Always, true), |c, a, b, y, _| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                want(c, 0, || g.mul(a)?.div(y))?,
                want(c, 1, || g.mul(b.to_tensor(a.dtype())?)?.div(y))?,
            ])
        }),
        "copysign" => (reads(Always, Always, true), |c, a, _, y, _| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                want(c, 0, || {
                    // torch's y / a, 0 at a == 0 (±1; NaN at a NaN a)
                    let ratio = y.div(a)?.masked_fill(&a.eq(0.0)?, 0.0)?;
                    g.mul(ratio)
                })?,
                want(c, 1, || g.zeros_like())?,
            ])
        }),
        "xlogy" => (reads(Always, Always, false), |c, a, b, _, _| {
            let g = c.grad();
            Ok(smallvec::smallvec![
                want(c, 0, || {
                    // log y, and 0 where x == 0 and y <= 0 (torch 2.15:
                    // x == 0 with y > 0 still takes log y)
                    let bb = b.to_tensor(a.dtype())?;
                    let d = bb.log()?;
                    let zero = a.eq(0.0)?.logical_and(&bb.le(0.0)?)?;
                    g.mul(d.masked_fill(&zero, 0.0)?)
                })?,
                want(c, 1, || g.mul(a)?.div(b.to_tensor(a.dtype())?))?,
            ])
        }),
        _ => return None,
    })
}

/// fmax/fmin: the larger (smaller) operand takes the gradient; ties
/// split it; a NaN operand loses to a number, and with both NaN the first
/// takes it (torch's `self >= other | other.isnan()`).
fn fextremum(c: &Ctx, a: &Tensor, b: Operand, max: bool) -> Result<GradVec> {
    use crate::native::pointwise::where_;
    let g = c.grad();
    let bb = b.to_tensor(a.dtype())?;
    let tie = a.eq(&bb)?;
    let half = g.mul(0.5)?;
    let pick_a = if max { a.gt(&bb)? } else { a.lt(&bb)? };
    let pick_a = pick_a.logical_or(&bb.isnan()?)?;
    let ga = where_(&tie, &half, where_(&pick_a, g, 0.0)?)?;
    let gb = where_(&tie, &half, g.sub(&ga)?)?;
    Ok(smallvec::smallvec![Some(ga), want(c, 1, || Ok(gb))?])
}

/// A binary op's derivative: its row, or an eager-only formula.
#[derive(Clone, Copy)]
enum BinaryD {
    Row(&'static BinaryRow),
    Eager(BinaryFormula),
}

/// The gradients of a binary row's formula with tensor ops; `None` for an
/// operand or result the row does not read (it gets NaN in its place,
/// which the tests of the rows would see if read).
fn binary_row(
    row: &BinaryRow,
    c: &Ctx,
    a: Option<&Tensor>,
    b: Option<Operand>,
    y: Option<&Tensor>,
    alpha: f64,
) -> Result<GradVec> {
    let g = c.grad();
    let unread = || TVal::C(f64::NAN);
    let b = match b {
        Some(Operand::Tensor(t)) => TVal::T(t),
        Some(Operand::Scalar(s)) => TVal::C(s.to_f64()),
        None => unread(),
    };
    let [ga, gb] = row.grad_tensor(BinaryIn {
        g: g.into(),
        a: a.map_or_else(unread, TVal::from),
        b,
        y: y.map_or_else(unread, TVal::from),
        alpha,
        need: [c.needs_input_grad(0), c.needs_input_grad(1)],
    });
    let out = |v: Option<TVal>| v.map(|v| v.tensor_shaped(g, g.shape())).transpose();
    Ok(smallvec::smallvec![out(ga)?, out(gb)?])
}

/// Record a binary op `y = op(a, b)` (`alpha` scales `b` for add/sub)
/// with its row (Note [Pointwise rows]) or its entry in
/// [`binary_derivative`].
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
    let (reads, d) = match crate::rows::binary(op) {
        Some(row) => (
            BinaryReads {
                a: row.reads_a,
                b: row.reads_b,
                result: row.reads_result,
            },
            BinaryD::Row(row),
        ),
        None => match binary_derivative(op) {
            Some((reads, f)) => (reads, BinaryD::Eager(f)),
            None => crate::bail!(
                NotImplemented,
                "the derivative for '{op}' is not implemented."
            ),
        },
    };
    let overload = if op == "pow" && inputs.len() == 2 {
        1
    } else {
        0
    };
    // Saved: a, then b when it is a tensor, then the result, each only
    // when the formula reads it (saving more would fail harmless in-place
    // updates).
    let bk = match b {
        Operand::Tensor(_) => B::T,
        Operand::Scalar(s) => B::S(*s),
    };
    let saves_for = |w: When, other_wants: bool| match w {
        When::Never => false,
        When::Always => true,
        When::ForOther => other_wants,
    };
    let save_a = saves_for(reads.a, inputs.len() == 2 && needs_grad(&inputs[1..]));
    let save_b = inputs.len() == 2 && saves_for(reads.b, needs_grad(&inputs[..1]));
    let mut saves: smallvec::SmallVec<[Save<'_>; 2]> = smallvec::SmallVec::new();
    if save_a {
        saves.push(Save::Tensor(a));
    }
    if save_b {
        saves.push(Save::Tensor(inputs[1]));
    }
    if reads.result {
        saves.push(Save::Output(0));
    }
    record1(
        super::node_name(op, overload),
        inputs,
        y,
        saves,
        move |c: &Ctx| {
            let a = if save_a { c.saved(0) } else { c.grad() };
            // `y` is only read by the ops that saved it
            let y = if reads.result {
                c.saved(c.saved.len() - 1)
            } else {
                a
            };
            let mut r = match d {
                // what the row does not read is not handed to it (no
                // tensor clones: their reference counts cost a tiny op's
                // backward more than its arithmetic)
                BinaryD::Row(row) => {
                    let b = match bk {
                        B::T if !save_b => None,
                        _ => Some(rhs(c, &bk, usize::from(save_a))),
                    };
                    let y = reads.result.then_some(y);
                    binary_row(row, c, save_a.then_some(a), b, y, alpha)?
                }
                BinaryD::Eager(f) => {
                    let b = match bk {
                        B::T if !save_b => Operand::Tensor(c.grad().clone()),
                        _ => rhs(c, &bk, usize::from(save_a)),
                    };
                    f(c, a, b, y, alpha)?
                }
            };
            r.truncate(c.needs.len());
            Ok(r)
        },
    )
}

/// `clamp(x, min, max)`, with PyTorch 2.15's gradients (Note [Clamp
/// gradients]).
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
            let (x, g) = (c.saved(0), c.grad());
            let mut out: GradVec = if tensor_bounds {
                clamp_tensor_grads(x, g, lo.as_ref(), hi.as_ref())?
            } else {
                // number bounds: strictly inside
                let mut keep = Tensor::ones(x.shape(), crate::DType::Bool)?;
                if let Some(l) = &lo {
                    keep = keep.logical_and(&x.gt(l.clone())?)?;
                }
                if let Some(h) = &hi {
                    keep = keep.logical_and(&x.lt(h.clone())?)?;
                }
                smallvec::smallvec![Some(crate::native::where_(&keep, g, 0.0)?)]
            };
            out.truncate(n);
            Ok(out)
        },
    )
}

/// # Note [Clamp gradients]
/// PyTorch 2.15's, worked out from its results over every combination of
/// NaN, below, equal and above for `x`, `min` and `max` (the edge-value
/// fixtures of the Python tests hold them). Number bounds: `x` takes the
/// gradient strictly inside (0 at a bound and at NaN). One tensor bound:
/// `maximum(x, min)` / `minimum(x, max)`'s gradients (ties split in half,
/// a NaN on either side gives both the gradient). Two tensor bounds:
/// - `x`: where neither `x < min` nor `x > max` (so a NaN `x` passes),
///   halved where it ties one bound strictly inside the other;
/// - `min`: where `x < min <= max`, half where `x == min < max`;
/// - `max`: where `x > max >= min` or `max < min`, half where
///   `min < x == max`.
///
/// Selects throughout, never products with masks: an infinite gradient
/// where a mask is off gives 0, as torch's.
fn clamp_tensor_grads(
    x: &Tensor,
    g: &Tensor,
    lo: Option<&Operand>,
    hi: Option<&Operand>,
) -> Result<GradVec> {
    use crate::native::where_;
    let half = g.mul(0.5)?;
    // `a <= b` for two bounds, one of them a tensor
    let le = |a: &Operand, b: &Operand| match (a, b) {
        (Operand::Tensor(t), b) => t.le(b.clone()),
        (Operand::Scalar(s), Operand::Tensor(t)) => t.ge(*s),
        (Operand::Scalar(_), Operand::Scalar(_)) => unreachable!("a tensor bound"),
    };
    let pick = |full: &Tensor, halved: &Tensor| -> Result<Tensor> {
        where_(full, g, where_(halved, &half, 0.0)?)
    };
    let mut out = GradVec::new();
    match (lo, hi) {
        (Some(l), Some(h)) => {
            let (below, above) = (x.lt(l.clone())?, x.gt(h.clone())?);
            let (at_lo, at_hi) = (x.eq(l.clone())?, x.eq(h.clone())?);
            let (under_hi, over_lo) = (x.lt(h.clone())?, x.gt(l.clone())?);
            let lo_le_hi = le(l, h)?;
            // max < min, neither NaN
            let hi_lt_lo = lo_le_hi.logical_not()?.logical_and(&le(h, l)?)?;
            let inside = below.logical_or(&above)?.logical_not()?;
            let tie = at_lo
                .logical_and(&under_hi)?
                .logical_or(&at_hi.logical_and(&over_lo)?)?;
            out.push(Some(where_(&inside, where_(&tie, &half, g)?, 0.0)?));
            if let Operand::Tensor(_) = l {
                let full = below.logical_and(&lo_le_hi)?;
                out.push(Some(pick(&full, &at_lo.logical_and(&under_hi)?)?));
            }
            if let Operand::Tensor(_) = h {
                let full = above.logical_and(&lo_le_hi)?.logical_or(&hi_lt_lo)?;
                out.push(Some(pick(&full, &at_hi.logical_and(&over_lo)?)?));
            }
        }
        (Some(b), None) | (None, Some(b)) => {
            // maximum(x, min) / minimum(x, max)
            let is_min = lo.is_some();
            let tie = x.eq(b.clone())?;
            let (x_off, b_off) = if is_min {
                (x.lt(b.clone())?, x.gt(b.clone())?)
            } else {
                (x.gt(b.clone())?, x.lt(b.clone())?)
            };
            let share = where_(&tie, &half, g)?;
            out.push(Some(where_(&x_off, 0.0, &share)?));
            out.push(Some(where_(&b_off, 0.0, &share)?));
        }
        (None, None) => out.push(Some(g.clone())),
    }
    Ok(out)
}

/// An op whose derivative is zero wherever it exists (`div` with a
/// rounding mode, as torch's `DivBackward1`): recorded, so its result
/// requires grad as torch's does, with zero gradients for every input.
pub(crate) fn zero_derivative(name: &'static str, inputs: &[&Tensor], y: Tensor) -> Result<Tensor> {
    if !needs_grad(inputs) {
        return Ok(y);
    }
    let like: Vec<(Vec<usize>, crate::DType)> = inputs
        .iter()
        .map(|t| (t.shape().to_vec(), t.dtype()))
        .collect();
    record1(name, inputs, y, smallvec::smallvec![], move |_c: &Ctx| {
        like.iter()
            .map(|(s, d)| Tensor::zeros(s, *d).map(Some))
            .collect()
    })
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
