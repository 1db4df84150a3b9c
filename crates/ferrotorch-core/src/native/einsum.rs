//! `torch.einsum`: Einstein summation, reduced to diagonals, sums,
//! permutes and batched matrix products (so it inherits their kernels and,
//! later, their derivatives).
//!
//! Operands are contracted left to right; at each step a label shared by
//! both sides becomes a batch dim if it is still needed (by the output or a
//! later operand) and a contracted dim otherwise. `...` stands for the
//! broadcast leading dims of each operand.

use crate::dispatch::Registry;
use crate::error::Result;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;

/// Labels are letters; ellipsis dims get labels above any letter.
type Label = u32;
const ELL: Label = 1000;

fn parse_term(term: &str, ndim: usize, op_index: usize) -> Result<Vec<Label>> {
    let has_ell = term.contains("...");
    let letters: Vec<char> = term.replace("...", "").chars().collect();
    for &c in &letters {
        crate::ensure!(c.is_ascii_alphabetic(), Value, "einsum(): invalid subscript given at index {op_index}: '{c}' (subscripts must be letters)");
    }
    let n_ell = if has_ell {
        ndim.checked_sub(letters.len()).ok_or_else(|| {
            crate::Error::new(crate::ErrorKind::Runtime, format!("einsum(): the number of subscripts in the equation ({}) is more than the number of dimensions ({ndim}) for operand {op_index}", letters.len()))
        })?
    } else {
        crate::ensure!(
            letters.len() == ndim,
            Runtime,
            "einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions ({ndim}) for operand {op_index} and no ellipsis was given",
            letters.len()
        );
        0
    };
    let mut out = Vec::new();
    let (before, _) = term.split_once("...").unwrap_or((term, ""));
    for c in before.chars() {
        out.push(c as Label);
    }
    if has_ell {
        for k in (0..n_ell).rev() {
            out.push(ELL + k as Label);
        }
        for c in term.split_once("...").map_or("", |(_, a)| a).chars() {
            out.push(c as Label);
        }
    }
    Ok(out)
}

/// Take diagonals for labels repeated within one operand.
fn dedup_labels(mut t: Tensor, mut labels: Vec<Label>) -> Result<(Tensor, Vec<Label>)> {
    loop {
        let mut found = None;
        'outer: for i in 0..labels.len() {
            for j in i + 1..labels.len() {
                if labels[i] == labels[j] {
                    found = Some((i, j));
                    break 'outer;
                }
            }
        }
        let Some((i, j)) = found else {
            return Ok((t, labels));
        };
        crate::ensure!(
            t.shape()[i] == t.shape()[j],
            Runtime,
            "einsum(): subscript {} is repeated for operand but the sizes don't match, {} != {}",
            char::from_u32(labels[i]).unwrap_or('?'),
            t.shape()[i],
            t.shape()[j]
        );
        t = t.diagonal(0, i as i64, j as i64)?;
        let l = labels[i];
        labels.remove(j);
        labels.remove(i);
        labels.push(l);
    }
}

/// Sum out the dims whose labels fail `keep`.
fn sum_unneeded(
    t: Tensor,
    labels: Vec<Label>,
    keep: impl Fn(Label) -> bool,
) -> Result<(Tensor, Vec<Label>)> {
    let drop: Vec<i64> = labels
        .iter()
        .enumerate()
        .filter(|(_, l)| !keep(**l))
        .map(|(i, _)| i as i64)
        .collect();
    if drop.is_empty() {
        return Ok((t, labels));
    }
    let kept: Vec<Label> = labels.into_iter().filter(|l| keep(*l)).collect();
    Ok((t.sum_dim(Some(&drop), false, None)?, kept))
}

fn size_of(t: &Tensor, labels: &[Label], l: Label) -> usize {
    labels
        .iter()
        .position(|&x| x == l)
        .map_or(1, |i| t.shape()[i])
}

fn contract(
    a: Tensor,
    la: Vec<Label>,
    b: Tensor,
    lb: Vec<Label>,
    needed: &dyn Fn(Label) -> bool,
) -> Result<(Tensor, Vec<Label>)> {
    let batch: Vec<Label> = la
        .iter()
        .copied()
        .filter(|l| lb.contains(l) && needed(*l))
        .collect();
    let con: Vec<Label> = la
        .iter()
        .copied()
        .filter(|l| lb.contains(l) && !needed(*l))
        .collect();
    let left: Vec<Label> = la.iter().copied().filter(|l| !lb.contains(l)).collect();
    let right: Vec<Label> = lb.iter().copied().filter(|l| !la.contains(l)).collect();
    let order = |labels: &[Label], groups: [&[Label]; 3]| -> Vec<usize> {
        groups
            .iter()
            .flat_map(|g| {
                g.iter()
                    .map(|l| labels.iter().position(|x| x == l).unwrap_or(0))
            })
            .collect()
    };
    // batch sizes broadcast (ellipsis dims of size 1)
    let bshape: Vec<usize> = batch
        .iter()
        .map(|&l| {
            let (x, y) = (size_of(&a, &la, l), size_of(&b, &lb, l));
            broadcast_shapes(&[x], &[y]).map(|s| s[0])
        })
        .collect::<Result<_>>()
        .map_err(|e| e.context("einsum(): operands do not broadcast"))?;
    for &l in &con {
        let (x, y) = (size_of(&a, &la, l), size_of(&b, &lb, l));
        crate::ensure!(
            x == y || x == 1 || y == 1,
            Runtime,
            "einsum(): operands do not broadcast: subscript {} has sizes {x} and {y}",
            char::from_u32(l).unwrap_or('?')
        );
    }
    let pa = a.permute_dims(&order(&la, [&batch, &left, &con]))?;
    let pb = b.permute_dims(&order(&lb, [&batch, &con, &right]))?;
    let csz: Vec<usize> = con
        .iter()
        .map(|&l| size_of(&a, &la, l).max(size_of(&b, &lb, l)))
        .collect();
    let lsz: Vec<usize> = left.iter().map(|&l| size_of(&a, &la, l)).collect();
    let rsz: Vec<usize> = right.iter().map(|&l| size_of(&b, &lb, l)).collect();
    let to_i = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let ea: Vec<usize> = bshape.iter().chain(&lsz).chain(&csz).copied().collect();
    let eb: Vec<usize> = bshape.iter().chain(&csz).chain(&rsz).copied().collect();
    let (bn, ln, cn, rn) = (
        bshape.iter().product::<usize>(),
        lsz.iter().product::<usize>(),
        csz.iter().product::<usize>(),
        rsz.iter().product::<usize>(),
    );
    let a3 = pa
        .expand(&to_i(&ea))?
        .reshape(&[bn as i64, ln as i64, cn as i64])?;
    let b3 = pb
        .expand(&to_i(&eb))?
        .reshape(&[bn as i64, cn as i64, rn as i64])?;
    let out = a3.bmm(&b3)?;
    let shape: Vec<usize> = bshape.iter().chain(&lsz).chain(&rsz).copied().collect();
    let labels: Vec<Label> = batch.iter().chain(&left).chain(&right).copied().collect();
    Ok((out.reshape(&to_i(&shape))?, labels))
}

/// `torch.einsum(equation, operands)`.
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    crate::ensure!(
        terms.len() == operands.len(),
        Value,
        "einsum(): more operands were provided than specified in the equation"
    );
    crate::ensure!(
        !operands.is_empty(),
        Value,
        "einsum(): must provide at least one operand"
    );
    let mut raw: Vec<Vec<Label>> = Vec::new();
    for (i, (t, term)) in operands.iter().zip(&terms).enumerate() {
        raw.push(parse_term(term, t.dim(), i)?);
    }
    // the implicit output counts labels in the equation as written
    let mut counts: std::collections::BTreeMap<Label, usize> = Default::default();
    for ls in &raw {
        for &l in ls {
            *counts.entry(l).or_default() += 1;
        }
    }
    let mut ops: Vec<(Tensor, Vec<Label>)> = Vec::new();
    for (t, labels) in operands.iter().zip(raw) {
        ops.push(dedup_labels(t.clone(), labels)?);
    }
    let max_ell = ops
        .iter()
        .map(|(_, l)| l.iter().filter(|&&x| x >= ELL).count())
        .max()
        .unwrap_or(0);
    let out_labels: Vec<Label> = match &rhs {
        Some(r) => {
            let mut v = Vec::new();
            let (before, after) = r
                .split_once("...")
                .map_or((r.as_str(), None), |(b, a)| (b, Some(a)));
            v.extend(before.chars().map(|c| c as Label));
            if let Some(after) = after {
                v.extend((0..max_ell).rev().map(|k| ELL + k as Label));
                v.extend(after.chars().map(|c| c as Label));
            }
            for &l in &v {
                crate::ensure!(
                    l >= ELL || ops.iter().any(|(_, ls)| ls.contains(&l)),
                    Runtime,
                    "einsum(): output subscript {} does not appear in the equation for any input operand",
                    char::from_u32(l).unwrap_or('?')
                );
            }
            v
        }
        None => {
            let mut v: Vec<Label> = (0..max_ell).rev().map(|k| ELL + k as Label).collect();
            v.extend(
                counts
                    .iter()
                    .filter(|(l, c)| **l < ELL && **c == 1)
                    .map(|(l, _)| *l),
            );
            v
        }
    };
    // contract left to right
    let mut rest = ops.into_iter();
    let (mut acc, mut acc_l) = rest.next().expect("at least one operand");
    let remaining: Vec<(Tensor, Vec<Label>)> = rest.collect();
    for (i, (t, l)) in remaining.iter().enumerate() {
        let later: Vec<Label> = remaining[i + 1..]
            .iter()
            .flat_map(|(_, ls)| ls.iter().copied())
            .collect();
        let needed = |x: Label| out_labels.contains(&x) || later.contains(&x);
        let (a2, la2) = sum_unneeded(acc, acc_l, |x| needed(x) || l.contains(&x))?;
        let (b2, lb2) = sum_unneeded(t.clone(), l.clone(), |x| needed(x) || la2.contains(&x))?;
        let (c, lc) = contract(a2, la2, b2, lb2, &needed)?;
        acc = c;
        acc_l = lc;
    }
    let (acc, acc_l) = sum_unneeded(acc, acc_l, |x| out_labels.contains(&x))?;
    let perm: Vec<usize> = out_labels
        .iter()
        .filter_map(|l| acc_l.iter().position(|x| x == l))
        .collect();
    let res = acc.permute_dims(&perm)?;
    // output ellipsis dims that some operand lacked come out as size-1 broadcast
    if perm.len() != out_labels.len() {
        let shape: Vec<i64> = out_labels
            .iter()
            .map(|l| {
                size_of(
                    &res,
                    &perm.iter().map(|&p| acc_l[p]).collect::<Vec<_>>(),
                    *l,
                ) as i64
            })
            .collect();
        return res.reshape(&shape);
    }
    Ok(res)
}

pub(crate) fn register(r: &mut Registry) {
    r.def_typed(
        "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
        |eq: String, ts: Vec<Tensor>, _path: Option<Vec<i64>>| einsum(&eq, &ts),
    );
}
