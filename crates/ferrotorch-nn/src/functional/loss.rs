//! Losses of `torch.nn.functional` with PyTorch's reduction modes and
//! options. Inputs are checked as PyTorch checks them (shapes, dtypes,
//! class indices in range), with its messages.

use super::Reduction;
use ferrotorch_core::{DType, Result, Tensor};

fn same_shape(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    ferrotorch_core::ensure!(
        input.shape() == target.shape(),
        Value,
        "{op}: Using a target size ({:?}) that is different to the input size ({:?}) is not supported.",
        target.shape(),
        input.shape()
    );
    Ok(())
}

/// Mean squared error `(x - y)²`.
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    same_shape("mse_loss", input, target)?;
    let d = input.sub(target)?;
    reduction.apply(d.mul(&d)?)
}

/// Mean absolute error `|x - y|`.
pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    same_shape("l1_loss", input, target)?;
    reduction.apply(input.sub(target)?.abs()?)
}

/// `0.5 d² / beta` where `|d| < beta`, else `|d| - 0.5 beta` (default
/// beta 1; beta 0 is the L1 loss).
pub fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    same_shape("smooth_l1_loss", input, target)?;
    ferrotorch_core::ensure!(
        beta >= 0.0,
        Runtime,
        "smooth_l1_loss does not support negative values for beta."
    );
    let d = input.sub(target)?;
    if beta == 0.0 {
        return reduction.apply(d.abs()?);
    }
    // the Huber loss with delta = beta, divided by beta (the branches meet
    // with equal value and slope at |d| = beta, so the boundary's side
    // does not matter)
    reduction.apply(super::act_backward::huber(
        "SmoothL1LossBackward0",
        &d,
        beta,
        beta,
    )?)
}

/// `0.5 d²` where `|d| <= delta`, else `delta (|d| - 0.5 delta)` (default
/// delta 1).
pub fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    same_shape("huber_loss", input, target)?;
    ferrotorch_core::ensure!(
        delta > 0.0,
        Runtime,
        "huber_loss does not support non-positive values for delta."
    );
    reduction.apply(super::act_backward::huber(
        "HuberLossBackward0",
        &input.sub(target)?,
        delta,
        1.0,
    )?)
}

/// `-w[y] (y log x + (1 - y) log(1 - x))` on probabilities; logs are
/// clamped at -100 as in PyTorch.
pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    same_shape("binary_cross_entropy", input, target)?;
    // NaN is outside too, as in torch (it fails `0 <= x <= 1`)
    let outside = input
        .ge(0.0)?
        .logical_and(&input.le(1.0)?)?
        .logical_not()?
        .any()?
        .item()?
        .to_bool();
    ferrotorch_core::ensure!(
        !outside,
        Runtime,
        "all elements of input should be between 0 and 1"
    );
    let log_x = input.log()?.clamp_min(-100.0)?;
    let log_1mx = input.neg()?.add(1.0)?.log()?.clamp_min(-100.0)?;
    let mut l = target
        .mul(&log_x)?
        .add(&target.neg()?.add(1.0)?.mul(&log_1mx)?)?
        .neg()?;
    if let Some(w) = weight {
        l = l.mul(w)?;
    }
    reduction.apply(l)
}

/// Options of [`binary_cross_entropy_with_logits`].
#[derive(Clone, Debug, Default)]
pub struct BceWithLogits<'a> {
    /// Rescales each element's loss.
    pub weight: Option<&'a Tensor>,
    /// Weight of the positive term, broadcast over the last dims.
    pub pos_weight: Option<&'a Tensor>,
    /// Reduction (default mean).
    pub reduction: Reduction,
}

/// Sigmoid and binary cross-entropy in one stable expression:
/// `(1 - y) x + (1 + (p - 1) y) softplus(-x)`, `p` the positive weight.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    opts: BceWithLogits<'_>,
) -> Result<Tensor> {
    same_shape("binary_cross_entropy_with_logits", input, target)?;
    let sp = super::softplus(&input.neg()?, 1.0, f64::INFINITY)?; // log(1 + e^-x)
    let one_minus_y = target.neg()?.add(1.0)?;
    let mut l = match opts.pos_weight {
        Some(p) => {
            let coef = p.sub(1.0)?.mul(target)?.add(1.0)?;
            one_minus_y.mul(input)?.add(&coef.mul(&sp)?)?
        }
        None => one_minus_y.mul(input)?.add(&sp)?,
    };
    if let Some(w) = opts.weight {
        l = l.mul(w)?;
    }
    opts.reduction.apply(l)
}

/// Options of [`nll_loss`] and [`cross_entropy`].
#[derive(Clone, Debug)]
pub struct ClassLoss<'a> {
    /// A weight per class.
    pub weight: Option<&'a Tensor>,
    /// Targets equal to this contribute nothing (default -100).
    pub ignore_index: i64,
    /// Reduction (default mean, weighted by the targets' class weights).
    pub reduction: Reduction,
    /// Mix the target with the uniform distribution (cross_entropy only).
    pub label_smoothing: f64,
}

impl Default for ClassLoss<'_> {
    fn default() -> Self {
        ClassLoss {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
        }
    }
}

/// `input` as `[N, C, rest]` with classes in dim 1 (a 1-D input is one
/// sample), and `target` as `[N, rest]`.
fn class_layout(op: &str, input: &Tensor, target: &Tensor) -> Result<(Tensor, Tensor)> {
    ferrotorch_core::ensure!(
        input.dim() >= 1,
        Value,
        "{op}: Expected 1 or more dimensions (got 0)"
    );
    let (x, t) = if input.dim() == 1 {
        (input.unsqueeze(0)?, target.unsqueeze(0)?)
    } else {
        (input.clone(), target.clone())
    };
    let mut want: Vec<usize> = vec![x.shape()[0]];
    want.extend(&x.shape()[2..]);
    ferrotorch_core::ensure!(
        t.shape() == want.as_slice(),
        Value,
        "{op}: Expected target size {want:?}, got {:?}",
        t.shape()
    );
    Ok((x, t))
}

/// The weight of each target's class (1 without class weights), 0 where
/// the target is `ignore_index`: what a weighted mean divides by.
fn target_weights(
    weight: Option<&Tensor>,
    target: &Tensor,
    ignore_index: i64,
    dtype: DType,
) -> Result<Tensor> {
    let ignored = target.eq(ignore_index)?;
    let w = match weight {
        Some(w) => {
            let safe = target.masked_fill(&ignored, 0)?.reshape(&[-1])?;
            let shape: Vec<i64> = target.shape().iter().map(|&s| s as i64).collect();
            w.to_dtype(dtype)?.index_select(0, &safe)?.reshape(&shape)?
        }
        None => Tensor::ones(target.shape(), dtype)?,
    };
    w.masked_fill(&ignored, 0.0)
}

/// Negative log-likelihood of class indices under log-probabilities
/// `input` (`[N, C]`, `[C]` or `[N, C, d...]`).
pub fn nll_loss(input: &Tensor, target: &Tensor, opts: ClassLoss<'_>) -> Result<Tensor> {
    ferrotorch_core::ensure!(
        target.dtype() == DType::I64,
        Runtime,
        "nll_loss: expected scalar type Long but found {}",
        target.dtype().name_title()
    );
    let (x, t) = class_layout("nll_loss", input, target)?;
    let c = x.shape()[1] as i64;
    let ignored = t.eq(opts.ignore_index)?;
    let bad = t
        .lt(0)?
        .logical_or(&t.ge(c)?)?
        .logical_and(&ignored.logical_not()?)?
        .any()?
        .item()?
        .to_bool();
    if bad {
        let first = t
            .lt(0)?
            .logical_or(&t.ge(c)?)?
            .logical_and(&ignored.logical_not()?)?
            .reshape(&[-1])?
            .nonzero()?;
        let at = first.select(0, 0)?.select(0, 0)?.item()?.to_i64();
        let v = t.reshape(&[-1])?.select(0, at)?.item()?.to_i64();
        ferrotorch_core::bail!(Index, "Target {v} is out of bounds.");
    }
    let safe = t.masked_fill(&ignored, 0)?;
    let picked = x
        .gather(1, &safe.unsqueeze(1)?)?
        .squeeze_dims(&[1])?
        .neg()?;
    if let Some(w) = opts.weight {
        ferrotorch_core::ensure!(w.numel() as i64 == c, Runtime, "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}", w.shape());
    }
    let w = target_weights(opts.weight, &t, opts.ignore_index, x.dtype())?;
    let l = picked.mul(&w)?;
    let l = if input.dim() == 1 {
        l.squeeze_dims(&[0])?
    } else {
        l
    };
    match opts.reduction {
        Reduction::None => Ok(l),
        Reduction::Sum => l.sum(),
        Reduction::Mean => l.sum()?.div(&w.sum()?),
    }
}

/// Cross-entropy of logits `input` against class indices (int64, shaped
/// like `input` without dim 1) or class probabilities (shaped like
/// `input`), with class weights, `ignore_index` and label smoothing.
pub fn cross_entropy(input: &Tensor, target: &Tensor, opts: ClassLoss<'_>) -> Result<Tensor> {
    ferrotorch_core::ensure!(
        (0.0..=1.0).contains(&opts.label_smoothing),
        Runtime,
        "label_smoothing must be between 0.0 and 1.0. Got: {}",
        opts.label_smoothing
    );
    let cdim = if input.dim() == 1 { 0 } else { 1 };
    let logp = input.log_softmax(cdim, None)?;
    let c = input.shape().get(cdim as usize).copied().unwrap_or(1) as f64;
    let eps = opts.label_smoothing;
    let wshape = |w: &Tensor| -> Result<Tensor> {
        let mut s = vec![1i64; input.dim()];
        s[cdim as usize] = -1;
        w.to_dtype(input.dtype())?.reshape(&s)
    };
    if target.is_floating_point() {
        // class probabilities
        ferrotorch_core::ensure!(target.shape() == input.shape(), Runtime, "cross_entropy: Expected input and target of the same shape for class probabilities, got {:?} and {:?}", input.shape(), target.shape());
        let t = if eps > 0.0 {
            target.mul(1.0 - eps)?.add(eps / c)?
        } else {
            target.clone()
        };
        let mut prod = logp.mul(&t)?;
        if let Some(w) = opts.weight {
            prod = prod.mul(&wshape(w)?)?;
        }
        let l = prod.sum_dim(Some(&[cdim]), false, None)?.neg()?;
        let n = if input.dim() == 1 {
            1.0
        } else {
            (input.numel() as f64) / c
        };
        return match opts.reduction {
            Reduction::None => Ok(l),
            Reduction::Sum => l.sum(),
            Reduction::Mean => l.sum()?.div(n),
        };
    }
    let nll = nll_loss(
        &logp,
        target,
        ClassLoss {
            label_smoothing: 0.0,
            ..opts.clone()
        },
    )?;
    if eps == 0.0 {
        return Ok(nll);
    }
    // smoothing term: -Σ_c w_c log p_c / C per sample (ignored targets excluded)
    let mut lp = logp.clone();
    if let Some(w) = opts.weight {
        lp = lp.mul(&wshape(w)?)?;
    }
    let ignored = target.eq(opts.ignore_index)?;
    let smooth = lp
        .sum_dim(Some(&[cdim]), false, None)?
        .neg()?
        .masked_fill(&ignored, 0.0)?;
    let smooth = match opts.reduction {
        Reduction::None => smooth,
        Reduction::Sum => smooth.sum()?,
        Reduction::Mean => {
            let denom =
                target_weights(opts.weight, target, opts.ignore_index, input.dtype())?.sum()?;
            smooth.sum()?.div(&denom)?
        }
    };
    nll.mul(1.0 - eps)?.add(&smooth.mul(eps / c)?)
}

/// `target · (log target - input)` with `input` in log space (and
/// `target` too with `log_target`); `batchmean` is
/// [`kl_div_batchmean`].
pub fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    log_target: bool,
) -> Result<Tensor> {
    reduction.apply(kl_pointwise(input, target, log_target)?)
}

/// [`kl_div`] summed and divided by the batch size (`reduction='batchmean'`).
pub fn kl_div_batchmean(input: &Tensor, target: &Tensor, log_target: bool) -> Result<Tensor> {
    let n = if input.dim() == 0 {
        1
    } else {
        input.shape()[0]
    };
    kl_pointwise(input, target, log_target)?
        .sum()?
        .div(n as f64)
}

fn kl_pointwise(input: &Tensor, target: &Tensor, log_target: bool) -> Result<Tensor> {
    if log_target {
        target.exp()?.mul(&target.sub(input)?)
    } else {
        // xlogy gives 0 where target is 0
        target.xlogy(target)?.sub(&target.mul(input)?)
    }
}

/// `max(0, -y (x1 - x2) + margin)`.
pub fn margin_ranking_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    reduction.apply(
        target
            .neg()?
            .mul(&input1.sub(input2)?)?
            .add(margin)?
            .relu()?,
    )
}

/// `if_pos` where the label is 1, `if_neg` where it is -1, 0 elsewhere.
fn by_label(target: &Tensor, if_pos: &Tensor, if_neg: &Tensor) -> Result<Tensor> {
    let zero = Tensor::zeros(&[], if_pos.dtype())?;
    let pos = ferrotorch_core::native::where_(&target.eq(1.0)?, if_pos, &zero)?;
    let neg = ferrotorch_core::native::where_(&target.eq(-1.0)?, if_neg, &zero)?;
    pos.add(&neg)
}

/// `x` where `y = 1`, `max(0, margin - x)` where `y = -1` (default margin 1).
pub fn hinge_embedding_loss(
    input: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    reduction.apply(by_label(target, input, &input.neg()?.add(margin)?.relu()?)?)
}

/// `1 - cos(x1, x2)` where `y = 1`, `max(0, cos(x1, x2) - margin)` where
/// `y = -1`; cosine along the last dim, with 1e-12 added to each squared
/// norm as PyTorch does.
pub fn cosine_embedding_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    const EPS: f64 = 1e-12;
    let d = (input1.dim() as i64 - 1).max(0);
    let prod = input1.mul(input2)?.sum_dim(Some(&[d]), false, None)?;
    let m1 = input1
        .mul(input1)?
        .sum_dim(Some(&[d]), false, None)?
        .add(EPS)?;
    let m2 = input2
        .mul(input2)?
        .sum_dim(Some(&[d]), false, None)?
        .add(EPS)?;
    let cos = prod.div(&m1.mul(&m2)?.sqrt()?)?;
    reduction.apply(by_label(
        target,
        &cos.neg()?.add(1.0)?,
        &cos.sub(margin)?.relu()?,
    )?)
}

/// `max(d(a, p) - d(a, n) + margin, 0)` with `d` the pairwise p-norm
/// distance (defaults margin 1, p 2, eps 1e-6, no swap).
#[allow(clippy::too_many_arguments)]
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: Reduction,
) -> Result<Tensor> {
    let d_ap = super::pairwise_distance(anchor, positive, p, eps, false)?;
    let mut d_an = super::pairwise_distance(anchor, negative, p, eps, false)?;
    if swap {
        d_an = d_an.minimum(&super::pairwise_distance(
            positive, negative, p, eps, false,
        )?)?;
    }
    reduction.apply(d_ap.sub(&d_an)?.add(margin)?.relu()?)
}

/// Poisson negative log-likelihood: `exp(x) - y x` for log-rate inputs,
/// else `x - y log(x + eps)`; `full` adds Stirling's term for `y > 1`.
pub fn poisson_nll_loss(
    input: &Tensor,
    target: &Tensor,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    let mut l = if log_input {
        input.exp()?.sub(&target.mul(input)?)?
    } else {
        input.sub(&target.mul(&input.add(eps)?.log()?)?)?
    };
    if full {
        let stirling = target
            .xlogy(target)?
            .sub(target)?
            .add(&target.mul(2.0 * std::f64::consts::PI)?.log()?.mul(0.5)?)?;
        let zeros = Tensor::zeros(&[], l.dtype())?;
        l = l.add(&ferrotorch_core::native::where_(
            &target.gt(1.0)?,
            &stirling,
            &zeros,
        )?)?;
    }
    reduction.apply(l)
}

/// Gaussian negative log-likelihood `0.5 (log var + (x - y)² / var)` with
/// `var` clamped at `eps` (defaults no constant term, eps 1e-6).
pub fn gaussian_nll_loss(
    input: &Tensor,
    target: &Tensor,
    var: &Tensor,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    ferrotorch_core::ensure!(
        !var.lt(0.0)?.any()?.item()?.to_bool(),
        Value,
        "var has negative entry/entries"
    );
    // the clamp is not differentiated through, as in PyTorch
    let v = {
        let floor = ferrotorch_core::autograd::with_no_grad(|| var.clamp_min(eps)?.sub(var))?;
        var.add(&floor)?
    };
    let d = input.sub(target)?;
    let mut l = v.log()?.add(&d.mul(&d)?.div(&v)?)?.mul(0.5)?;
    if full {
        l = l.add(0.5 * (2.0 * std::f64::consts::PI).ln())?;
    }
    reduction.apply(l)
}
