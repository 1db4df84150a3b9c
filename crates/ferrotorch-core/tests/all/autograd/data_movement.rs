//! Gradchecks for indexing and data movement: gathers, scatters, cat and
//! stack, repeats, flips, triangles, advanced indexing, index_put, and the
//! in-place writes (copy_, fill_, masked_fill_, index_put_).

use super::{check, input, F};
use ferrotorch_core::tensor::TensorIndex;
use ferrotorch_core::{native, Tensor};

fn idx(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v)
        .reshape(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>())
        .unwrap()
}

#[test]
fn gathers_and_scatters() {
    let x = || vec![input(&[3, 4], -1.0, 1.0, 3)];
    let xs = || vec![input(&[3, 4], -1.0, 1.0, 3), input(&[2, 4], 0.5, 1.5, 4)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "index_select",
            |x| Ok(vec![x[0].index_select(1, &idx(&[3, 0, 3], &[3]))?]),
            x(),
        ),
        (
            "gather",
            |x| Ok(vec![x[0].gather(1, &idx(&[0, 1, 1, 2, 3, 3], &[3, 2]))?]),
            x(),
        ),
        (
            "take",
            |x| Ok(vec![x[0].take(&idx(&[11, 0, 5, 5], &[2, 2]))?]),
            x(),
        ),
        (
            "take_along_dim",
            |x| {
                Ok(vec![
                    x[0].take_along_dim(&idx(&[2, 0, 1, 0], &[1, 4]), Some(0))?
                ])
            },
            x(),
        ),
        (
            "masked_select",
            |x| {
                let m = Tensor::from_slice(&[true, false, true, true]);
                Ok(vec![x[0].masked_select(&m)?])
            },
            x(),
        ),
        (
            "scatter",
            |x| {
                Ok(vec![x[0].scatter(
                    0,
                    &idx(&[2, 0, 1, 1, 0, 2, 2, 0], &[2, 4]),
                    &x[1],
                )?])
            },
            xs(),
        ),
        (
            "scatter_add",
            |x| {
                Ok(vec![x[0].scatter_add(
                    0,
                    &idx(&[2, 0, 1, 1, 2, 0, 2, 1], &[2, 4]),
                    &x[1],
                )?])
            },
            xs(),
        ),
        (
            "scatter_reduce_mean",
            |x| {
                let i = idx(&[2, 0, 1, 1, 2, 0, 2, 1], &[2, 4]);
                Ok(vec![x[0].scatter_reduce(
                    0,
                    &i,
                    &x[1],
                    Some("mean"),
                    false,
                )?])
            },
            xs(),
        ),
        (
            "scatter_reduce_amax",
            |x| {
                let i = idx(&[2, 0, 1, 1, 2, 0, 2, 1], &[2, 4]);
                Ok(vec![x[0].scatter_reduce(
                    0,
                    &i,
                    &x[1],
                    Some("amax"),
                    true,
                )?])
            },
            xs(),
        ),
        (
            "scatter_reduce_prod",
            |x| {
                let i = idx(&[2, 0, 1, 1, 2, 0, 2, 1], &[2, 4]);
                Ok(vec![x[0].scatter_reduce(
                    0,
                    &i,
                    &x[1],
                    Some("prod"),
                    true,
                )?])
            },
            xs(),
        ),
        (
            "scatter_reduce_sum_no_self",
            |x| {
                let i = idx(&[2, 0, 1, 1, 2, 0, 2, 1], &[2, 4]);
                Ok(vec![x[0].scatter_reduce(
                    0,
                    &i,
                    &x[1],
                    Some("sum"),
                    false,
                )?])
            },
            xs(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn concatenation_repeats_and_reorderings() {
    let x = || vec![input(&[2, 3], -1.0, 1.0, 5)];
    let two = || vec![input(&[2, 3], -1.0, 1.0, 5), input(&[2, 2], -1.0, 1.0, 6)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "cat",
            |x| Ok(vec![native::cat(&[x[0].clone(), x[1].clone()], 1)?]),
            two(),
        ),
        (
            "cat_with_empty",
            |x| {
                Ok(vec![native::cat(
                    &[
                        x[0].clone(),
                        Tensor::zeros(&[0], x[0].dtype())?,
                        x[0].mul(2.0)?,
                    ],
                    0,
                )?])
            },
            x(),
        ),
        (
            "stack",
            |x| Ok(vec![native::stack(&[x[0].clone(), x[0].exp()?], 1)?]),
            x(),
        ),
        ("repeat", |x| Ok(vec![x[0].repeat(&[2, 1, 2])?]), x()),
        ("tile", |x| Ok(vec![x[0].tile(&[2])?]), x()),
        (
            "repeat_interleave",
            |x| {
                Ok(vec![x[0].repeat_interleave(
                    &Tensor::from_slice(&[1i64, 0, 2]),
                    Some(1),
                )?])
            },
            x(),
        ),
        ("flip", |x| Ok(vec![x[0].flip(&[0, 1])?]), x()),
        ("roll", |x| Ok(vec![x[0].roll(&[1, -1], &[0, 1])?]), x()),
        ("tril", |x| Ok(vec![x[0].tril(0)?]), x()),
        ("triu", |x| Ok(vec![x[0].triu(1)?]), x()),
        ("unfold", |x| Ok(vec![x[0].unfold(1, 2, 1)?]), x()),
        ("unfold_step", |x| Ok(vec![x[0].t()?.unfold(0, 2, 2)?]), x()),
        (
            "pad_reflect",
            |x| Ok(vec![x[0].unsqueeze(0)?.pad(&[2, 1], "reflect", 0.0)?]),
            x(),
        ),
        (
            "pad_replicate",
            |x| {
                Ok(vec![x[0].unsqueeze(0)?.pad(
                    &[1, 2, 1, 0],
                    "replicate",
                    0.0,
                )?])
            },
            x(),
        ),
        (
            "pad_circular",
            |x| Ok(vec![x[0].unsqueeze(0)?.pad(&[1, 2], "circular", 0.0)?]),
            x(),
        ),
        (
            "pad_crop",
            |x| Ok(vec![x[0].pad(&[-1, 2, 1, -1], "constant", 0.0)?]),
            x(),
        ),
        (
            "advanced_index",
            |x| {
                let i = TensorIndex::from(idx(&[1, 0, 1], &[3]));
                let j = TensorIndex::from(idx(&[2, 2, 0], &[3]));
                Ok(vec![x[0].index(&[i, j])?])
            },
            x(),
        ),
        (
            "bool_mask_index",
            |x| Ok(vec![x[0].index(&[TensorIndex::from(x[0].gt(0.0)?)])?]),
            x(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn index_put_and_in_place_writes() {
    let two = || vec![input(&[3, 4], -1.0, 1.0, 7), input(&[2, 4], -1.0, 1.0, 8)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        (
            "index_put",
            |x| {
                Ok(vec![x[0].index_put(
                    &[TensorIndex::from(idx(&[2, 0], &[2]))],
                    &x[1],
                    false,
                )?])
            },
            two(),
        ),
        (
            "index_put_accumulate",
            |x| {
                Ok(vec![x[0].index_put(
                    &[TensorIndex::from(idx(&[2, 2], &[2]))],
                    &x[1],
                    true,
                )?])
            },
            two(),
        ),
        (
            "index_put_",
            |x| {
                let y = x[0].mul(2.0)?;
                y.index_put_(
                    &[TensorIndex::from(idx(&[1, 0], &[2]))],
                    &x[1].exp()?,
                    false,
                )?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "copy_",
            |x| {
                let y = x[0].mul(3.0)?;
                y.narrow(0, 1, 2)?.copy_(&x[1].sin()?)?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "copy_broadcast",
            |x| {
                let y = x[0].mul(3.0)?;
                y.copy_(&x[1].narrow(0, 0, 1)?)?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "fill_",
            |x| {
                let y = x[0].mul(2.0)?;
                y.select(1, 2)?.fill_(0.5)?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "masked_fill_",
            |x| {
                let y = x[0].mul(2.0)?;
                y.masked_fill_(&x[0].gt(0.2)?, 1.0)?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "clamp_",
            |x| {
                let y = x[0].mul(2.0)?;
                y.clamp_(Some(-0.5), Some(0.7))?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "relu_",
            |x| {
                let y = x[0].mul(2.0)?;
                y.relu_()?;
                Ok(vec![y])
            },
            two(),
        ),
        (
            "addcmul_",
            |x| {
                let y = x[0].narrow(0, 0, 2)?.mul(2.0)?;
                y.addcmul_(&x[1], &x[1].cos()?, 0.5)?;
                Ok(vec![y])
            },
            two(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn writing_into_a_saved_output_is_caught() {
    // PyTorch: exp saves its result, so filling part of it breaks backward.
    let x = input(&[2, 3], -1.0, 1.0, 10);
    let y = x.exp().unwrap();
    y.select(1, 2).unwrap().fill_(0.5).unwrap();
    let e = y.sum().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("modified by an inplace operation"), "{e}");
}

#[test]
fn running_statistics_stay_out_of_the_graph() {
    let x = input(&[4, 3], -1.0, 1.0, 9);
    let (rm, rv) = (
        Tensor::zeros(&[3], x.dtype()).unwrap(),
        Tensor::ones(&[3], x.dtype()).unwrap(),
    );
    let y = x
        .batch_norm(Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5)
        .unwrap();
    assert!(y.requires_grad());
    assert!(!rm.requires_grad() && !rv.requires_grad());
    assert!(rm.grad_fn().is_none());
}

#[test]
fn views_taken_before_an_in_place_op_see_the_new_history() {
    // PyTorch: v = y[0:2]; y.mul_(3) -> v is 6x, its grad_fn regenerated.
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0])
        .requires_grad_(true)
        .unwrap();
    let y = x.mul(2.0).unwrap();
    let v = y.narrow(0, 0, 2).unwrap();
    y.mul_(3.0).unwrap();
    assert_eq!(v.grad_fn().unwrap().name(), "AsStridedBackward0");
    v.sum().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![6.0, 6.0, 0.0, 0.0]
    );

    // a sibling view written in place: the other view keeps its values' history
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0])
        .requires_grad_(true)
        .unwrap();
    let y = x.mul(2.0).unwrap();
    let (v, w) = (y.narrow(0, 0, 2).unwrap(), y.narrow(0, 2, 2).unwrap());
    w.mul_(5.0).unwrap();
    v.sum()
        .unwrap()
        .add(&w.sum().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![2.0, 2.0, 10.0, 10.0]
    );
}

#[test]
fn scatter_saves_only_its_index() {
    // PyTorch's scatter/scatter_add backward reads only the index, so
    // updating self or src in place afterwards is harmless.
    let x = input(&[3, 2], -1.0, 1.0, 12);
    let s = input(&[1, 2], -1.0, 1.0, 13);
    let (a, b) = (x.mul(1.0).unwrap(), s.mul(1.0).unwrap());
    let i = idx(&[2, 0], &[1, 2]);
    let y = a
        .scatter(0, &i, &b)
        .unwrap()
        .add(&a.scatter_add(0, &i, &b).unwrap())
        .unwrap();
    a.add_(1.0).unwrap();
    b.add_(1.0).unwrap();
    y.sum().unwrap().backward().unwrap();
    // self: 1 (scatter_add) + 1 where scatter did not overwrite
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![2.0, 1.0, 2.0, 2.0, 1.0, 2.0]
    );
    assert_eq!(s.grad().unwrap().to_vec::<f64>().unwrap(), vec![2.0, 2.0]);
}
