//! The core ATen ops torch's decompositions produce and `torch.export`
//! programs name (`run_decompositions`, `.pt2` files PyTorch wrote):
//! `_softmax`, `_log_softmax`, `native_layer_norm`, `native_batch_norm`,
//! the `_native_batch_norm_legit*` family, `native_dropout`,
//! `_adaptive_avg_pool2d`, `copy`, `_unsafe_view`. Each is made of the ops
//! it stands for, and returns the saved statistics torch returns beside
//! the result (mean and reciprocal standard deviation, the dropout mask).

use crate::dispatch::{IValue, Registry};
use crate::error::Result;
use crate::tensor::Tensor;

type T = Tensor;
type OptT = Option<Tensor>;

/// `(mean, rstd)` over `dims` (biased variance), kept as `keepdim` says.
fn mean_rstd(x: &Tensor, dims: &[i64], eps: f64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let x = x.detach();
    let (var, mean) = x.var_mean(Some(dims), Some(0.0), keepdim)?;
    Ok((mean, var.add(eps)?.rsqrt()?))
}

/// The dims a batch norm reduces: all but the channel dim (1).
fn batch_dims(x: &Tensor) -> Vec<i64> {
    (0..x.dim() as i64).filter(|&d| d != 1).collect()
}

/// `(out, save_mean, save_rstd)` of a batch norm; running stats (when
/// given) are updated in place in training, as `batch_norm` does.
#[allow(clippy::too_many_arguments)]
fn batch_norm3(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    rm: Option<&Tensor>,
    rv: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let out = x.batch_norm(rm, rv, w, b, training, momentum, eps)?;
    let (mean, rstd) = if training || rm.is_none() {
        mean_rstd(x, &batch_dims(x), eps, false)?
    } else {
        (
            Tensor::empty(&[0], x.dtype())?,
            Tensor::empty(&[0], x.dtype())?,
        )
    };
    Ok((out, mean, rstd))
}

pub(crate) fn register(r: &mut Registry) {
    r.def_typed(
        "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
        |x: T, dim: i64, _half: bool| x.softmax(dim, None),
    );
    r.def_typed(
        "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
        |x: T, dim: i64, _half: bool| x.log_softmax(dim, None),
    );
    r.def_typed(
        "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
        |x: T, shape: Vec<i64>, w: OptT, b: OptT, eps: f64| {
            crate::ensure!(
                shape.len() <= x.dim() && shape.iter().all(|&s| s >= 0),
                Runtime,
                "native_layer_norm: normalized_shape {shape:?} for an input of shape {:?}",
                x.shape()
            );
            let sizes: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
            let out = x.layer_norm(&sizes, w.as_ref(), b.as_ref(), eps)?;
            let first = (x.dim() - sizes.len()) as i64;
            let dims: Vec<i64> = (first..x.dim() as i64).collect();
            let (mean, rstd) = mean_rstd(&x, &dims, eps, true)?;
            Ok((out, mean, rstd))
        },
    );
    r.def_typed(
        "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        |x: T, w: OptT, b: OptT, rm: OptT, rv: OptT, training: bool, momentum: f64, eps: f64| {
            batch_norm3(&x, w.as_ref(), b.as_ref(), rm.as_ref(), rv.as_ref(), training, momentum, eps)
        },
    );
    r.def_typed(
        "_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        |x: T, w: OptT, b: OptT, rm: T, rv: T, training: bool, momentum: f64, eps: f64| {
            batch_norm3(&x, w.as_ref(), b.as_ref(), Some(&rm), Some(&rv), training, momentum, eps)
        },
    );
    r.def_typed(
        "_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        |x: T, w: OptT, b: OptT, _training: bool, momentum: f64, eps: f64| {
            batch_norm3(&x, w.as_ref(), b.as_ref(), None, None, true, momentum, eps)
        },
    );
    r.def_typed(
        "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        |x: T, w: OptT, b: OptT, rm: T, rv: T, momentum: f64, eps: f64| {
            batch_norm3(&x, w.as_ref(), b.as_ref(), Some(&rm), Some(&rv), false, momentum, eps)
        },
    );
    // functional: the updated running stats are returned, the given ones
    // left as they were
    r.add(
        "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
        |a| {
            let (x, w, b) = (a.tensor(0)?, a.opt_tensor(1)?, a.opt_tensor(2)?);
            let rm = a.tensor(3)?.detach().deep_clone()?;
            let rv = a.tensor(4)?.detach().deep_clone()?;
            let (training, momentum, eps) = (a.bool(5)?, a.float(6)?, a.float(7)?);
            let (out, mean, rstd) = batch_norm3(
                &x,
                w.as_ref(),
                b.as_ref(),
                Some(&rm),
                Some(&rv),
                training,
                momentum,
                eps,
            )?;
            Ok(IValue::Tuple(vec![
                out.into(),
                mean.into(),
                rstd.into(),
                rm.into(),
                rv.into(),
            ]))
        },
    )
    .expect("a valid schema");
    r.def_typed(
        "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
        |x: T, p: f64, train: Option<bool>| {
            crate::ensure!(
                (0.0..=1.0).contains(&p),
                Runtime,
                "native_dropout: dropout probability has to be between 0 and 1, but got {p}"
            );
            if train == Some(false) || p == 0.0 {
                return Ok((x.clone(), Tensor::ones(x.shape(), crate::DType::Bool)?));
            }
            let keep = Tensor::full(x.shape(), 1.0 - p, x.dtype())?.bernoulli(None)?;
            let mask = keep.to_dtype(crate::DType::Bool)?;
            let scale = if p == 1.0 { 0.0 } else { 1.0 / (1.0 - p) };
            Ok((x.mul(&keep)?.mul(scale)?, mask))
        },
    );
    r.def_typed(
        "_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
        |x: T, size: Vec<i64>| {
            crate::ensure!(
                size.len() == 2 && size.iter().all(|&s| s >= 0),
                Runtime,
                "_adaptive_avg_pool2d: output_size must be 2 non-negative sizes, got {size:?}"
            );
            x.adaptive_avg_pool2d(&[size[0] as usize, size[1] as usize])
        },
    );
    r.def_typed(
        "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
        |x: T, src: T, _nb: bool| {
            let shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
            // differentiable in `src`; laid out like `self`, as torch's
            src.to_dtype(x.dtype())?
                .expand(&shape)?
                .clone_laid_out_like(&x)
        },
    );
    r.def_typed(
        "_unsafe_view(Tensor self, SymInt[] size) -> Tensor",
        |x: T, size: Vec<i64>| x.contiguous()?.view(&size),
    );
}
