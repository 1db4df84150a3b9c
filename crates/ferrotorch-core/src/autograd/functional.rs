//! Higher-level derivatives of whole functions
//! (`torch.autograd.functional`): [`vjp`], [`jvp`], [`jacobian`],
//! [`hessian`], [`hvp`], [`vhp`].
//!
//! Each takes `func` from a list of tensors to a list of tensors and runs
//! it on fresh leaves made from `inputs` (so the caller's tensors are not
//! touched). With `create_graph` the results stay differentiable.
//! Gradients of inputs that the outputs do not depend on are zeros.
//! `jvp` uses the double-vjp trick (two reverse passes), as PyTorch does.

use super::mode;
use crate::error::Result;
use crate::tensor::Tensor;

/// A differentiable function of several tensors.
pub trait Func: Fn(&[Tensor]) -> Result<Vec<Tensor>> {}
impl<F: Fn(&[Tensor]) -> Result<Vec<Tensor>>> Func for F {}

fn leaves(inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    inputs
        .iter()
        .map(|t| t.detach().requires_grad_(true))
        .collect()
}

/// Gradients of `outputs` (weighted by `v`) with respect to `inputs`, zeros
/// where unused.
fn vjp_of(
    outputs: &[Tensor],
    inputs: &[Tensor],
    v: &[Tensor],
    create_graph: bool,
) -> Result<Vec<Tensor>> {
    let (outs, vs): (Vec<Tensor>, Vec<Tensor>) = outputs
        .iter()
        .zip(v)
        .filter(|(o, _)| o.requires_grad())
        .map(|(o, v)| (o.clone(), v.clone()))
        .unzip();
    if outs.is_empty() {
        return inputs.iter().map(|x| x.zeros_like()).collect();
    }
    let g = super::grad(&outs, inputs, Some(&vs), Some(true), create_graph, true)?;
    g.into_iter()
        .zip(inputs)
        .map(|(g, x)| match g {
            Some(g) => Ok(g),
            None => x.zeros_like(),
        })
        .collect()
}

/// Gradient of the one-element `out` with respect to `inputs`.
fn grad_of_scalar(out: &Tensor, inputs: &[Tensor], create_graph: bool) -> Result<Vec<Tensor>> {
    let one = Tensor::ones(out.shape(), out.dtype())?;
    vjp_of(std::slice::from_ref(out), inputs, &[one], create_graph)
}

fn detach_unless(ts: Vec<Tensor>, keep: bool) -> Vec<Tensor> {
    if keep {
        ts
    } else {
        ts.iter().map(Tensor::detach).collect()
    }
}

fn check_len(op: &str, what: &str, got: usize, want: usize) -> Result<()> {
    crate::ensure!(
        got == want,
        Runtime,
        "{op}: expected {want} tensors in {what} (one per {}), got {got}",
        if what == "v" { "output" } else { "input" }
    );
    Ok(())
}

/// `(func(inputs), vᵀ J)`: the vector-Jacobian product. `v` may be omitted
/// when every output has one element.
pub fn vjp(
    func: impl Func,
    inputs: &[Tensor],
    v: Option<&[Tensor]>,
    create_graph: bool,
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let _g = mode::enable_grad();
    let xs = leaves(inputs)?;
    let outs = func(&xs)?;
    let v = match v {
        Some(v) => {
            check_len("vjp", "v", v.len(), outs.len())?;
            v.to_vec()
        }
        None => outs
            .iter()
            .map(|o| {
                crate::ensure!(
                    o.numel() == 1,
                    Runtime,
                    "vjp: the vector v can only be None if the user-provided function returns a single Tensor with a single element."
                );
                Tensor::ones(o.shape(), o.dtype())
            })
            .collect::<Result<_>>()?,
    };
    let g = vjp_of(&outs, &xs, &v, create_graph)?;
    Ok((
        detach_unless(outs, create_graph),
        detach_unless(g, create_graph),
    ))
}

/// `(func(inputs), J v)`: the Jacobian-vector product.
pub fn jvp(
    func: impl Func,
    inputs: &[Tensor],
    v: &[Tensor],
    create_graph: bool,
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    check_len("jvp", "v", v.len(), inputs.len())?;
    let _g = mode::enable_grad();
    let xs = leaves(inputs)?;
    let outs = func(&xs)?;
    // u ↦ uᵀJ is linear in u; differentiating it against v gives J v.
    let us: Vec<Tensor> = outs
        .iter()
        .map(|o| Tensor::zeros(o.shape(), o.dtype())?.requires_grad_(true))
        .collect::<Result<_>>()?;
    let g = vjp_of(&outs, &xs, &us, true)?;
    let jv = vjp_of(&g, &us, v, create_graph)?;
    Ok((
        detach_unless(outs, create_graph),
        detach_unless(jv, create_graph),
    ))
}

/// The Jacobian of each output with respect to each input: `[out][in]`,
/// each of shape `output.shape + input.shape`.
pub fn jacobian(
    func: impl Func,
    inputs: &[Tensor],
    create_graph: bool,
) -> Result<Vec<Vec<Tensor>>> {
    let _g = mode::enable_grad();
    let xs = leaves(inputs)?;
    let outs = func(&xs)?;
    outs.iter()
        .map(|o| {
            let flat = o.reshape(&[-1])?;
            let rows: Vec<Vec<Tensor>> = (0..flat.numel())
                .map(|k| {
                    let e = flat.select(0, k as i64)?;
                    grad_of_scalar(&e, &xs, create_graph)
                })
                .collect::<Result<_>>()?;
            xs.iter()
                .enumerate()
                .map(|(j, x)| {
                    let mut shape: Vec<i64> = o.shape().iter().map(|&s| s as i64).collect();
                    shape.extend(x.shape().iter().map(|&s| s as i64));
                    let parts: Vec<Tensor> = rows
                        .iter()
                        .map(|r| r[j].reshape(&[-1]))
                        .collect::<Result<_>>()?;
                    let j = if parts.is_empty() {
                        Tensor::zeros(&[0], x.dtype())?
                    } else {
                        crate::native::movement::stack(&parts, 0)?
                    };
                    let j = j.reshape(&shape)?;
                    Ok(if create_graph { j } else { j.detach() })
                })
                .collect()
        })
        .collect()
}

/// The Hessian of a scalar function: `[i][j]` of shape
/// `inputs[i].shape + inputs[j].shape`.
pub fn hessian(func: impl Func, inputs: &[Tensor], create_graph: bool) -> Result<Vec<Vec<Tensor>>> {
    let grads = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let out = scalar_output("hessian", &func, xs)?;
        grad_of_scalar(&out, xs, true)
    };
    jacobian(grads, inputs, create_graph)
}

fn scalar_output(op: &str, func: &impl Func, xs: &[Tensor]) -> Result<Tensor> {
    let outs = func(xs)?;
    crate::ensure!(
        outs.len() == 1 && outs[0].numel() == 1,
        Runtime,
        "{op}: the function given to {op} should return a single Tensor with a single element"
    );
    outs.into_iter().next().expect("checked").reshape(&[])
}

/// `(func(inputs), H v)` for a scalar function: the Hessian-vector product.
pub fn hvp(
    func: impl Func,
    inputs: &[Tensor],
    v: &[Tensor],
    create_graph: bool,
) -> Result<(Tensor, Vec<Tensor>)> {
    check_len("hvp", "v", v.len(), inputs.len())?;
    let _g = mode::enable_grad();
    let xs = leaves(inputs)?;
    let out = scalar_output("hvp", &func, &xs)?;
    let g = grad_of_scalar(&out, &xs, true)?;
    // H is symmetric: (vᵀ H)ᵀ = H v.
    let hv = vjp_of(&g, &xs, v, create_graph)?;
    let out = if create_graph { out } else { out.detach() };
    Ok((out, detach_unless(hv, create_graph)))
}

/// `(func(inputs), vᵀ H)` for a scalar function (equal to [`hvp`] for the
/// symmetric Hessians of twice-differentiable functions).
pub fn vhp(
    func: impl Func,
    inputs: &[Tensor],
    v: &[Tensor],
    create_graph: bool,
) -> Result<(Tensor, Vec<Tensor>)> {
    hvp(func, inputs, v, create_graph)
}
