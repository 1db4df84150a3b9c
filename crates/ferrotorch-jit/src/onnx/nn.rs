//! The layers' ops as ONNX nodes: `linear`, convolutions, batch and
//! layer norm's weights, pooling, GELU and scaled dot-product attention
//! (the dispatch is `ops::lower`).

use super::emit::{attr_float, attr_int, attr_ints, err, Emitter};
use super::ops::set;
use crate::ir::Node;
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{DType, Result, Tensor};

/// An optional weight, or a constant of `fill` of `shape`.
pub(crate) fn opt_or(
    e: &mut Emitter,
    id: Option<usize>,
    shape: &[usize],
    fill: f64,
    dt: DType,
    what: &str,
) -> Result<String> {
    match id {
        Some(i) if !e.is_none(i) => e.tensor(i, what),
        _ => e.constant(&Tensor::full(shape, fill, dt)?),
    }
}

pub(crate) fn gelu(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let dt = e.dtype(ins[0]).unwrap_or(DType::F32);
    let x = e.tensor(ins[0], what)?;
    let tanh = ins.len() > 1 && matches!(e.konst(ins[1]), Some(IValue::Str(s)) if s == "tanh");
    let half = e.scalar(0.5, dt)?;
    let one = e.scalar(1.0, dt)?;
    let inner = if tanh {
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        let c = e.scalar(0.044715, dt)?;
        let k = e.scalar((2.0 / std::f64::consts::PI).sqrt(), dt)?;
        let x2 = e.op1("Mul", vec![x.clone(), x.clone()], vec![]);
        let x3 = e.op1("Mul", vec![x2, x.clone()], vec![]);
        let cx3 = e.op1("Mul", vec![x3, c], vec![]);
        let s = e.op1("Add", vec![x.clone(), cx3], vec![]);
        let ks = e.op1("Mul", vec![s, k], vec![]);
        e.op1("Tanh", vec![ks], vec![])
    } else {
        let r2 = e.scalar(std::f64::consts::SQRT_2, dt)?;
        let d = e.op1("Div", vec![x.clone(), r2], vec![]);
        e.op1("Erf", vec![d], vec![])
    };
    let p = e.op1("Add", vec![inner, one], vec![]);
    let hx = e.op1("Mul", vec![x, half], vec![]);
    let y = e.op1("Mul", vec![hx, p], vec![]);
    set(e, n, y);
    Ok(())
}

pub(crate) fn linear(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let x = e.tensor(ins[0], what)?;
    let w = e.tensor(ins[1], what)?;
    let has_b = ins.len() > 2 && !e.is_none(ins[2]);
    let y = if e.rank(ins[0], what)? == 2 {
        let mut inputs = vec![x, w];
        if has_b {
            inputs.push(e.tensor(ins[2], what)?);
        }
        e.op1("Gemm", inputs, vec![attr_int("transB", 1)])
    } else {
        let wt = e.op1("Transpose", vec![w], vec![attr_ints("perm", &[1, 0])]);
        let mm = e.op1("MatMul", vec![x, wt], vec![]);
        if has_b {
            let b = e.tensor(ins[2], what)?;
            e.op1("Add", vec![mm, b], vec![])
        } else {
            mm
        }
    };
    set(e, n, y);
    Ok(())
}

/// `n` copies of a per-dim argument given as one int or a list.
pub(crate) fn per_dim(e: &Emitter, id: usize, n: usize, what: &str) -> Result<Vec<i64>> {
    let v = e.int_list(id, what)?;
    Ok(if v.len() == 1 { vec![v[0]; n] } else { v })
}

pub(crate) fn conv(e: &mut Emitter, n: &Node, op: &str, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let k = e
        .sizes(ins[1])
        .ok_or_else(|| err(format!("{what}: weight shape unknown")))?;
    let nd = k.len() - 2;
    let x = e.tensor(ins[0], what)?;
    let w = e.tensor(ins[1], what)?;
    let mut inputs = vec![x, w];
    if !e.is_none(ins[2]) {
        inputs.push(e.tensor(ins[2], what)?);
    }
    let (stride, padding, dilation, transposed, out_pad, groups) =
        if op == "convolution" || op == "_convolution" {
            (
                per_dim(e, ins[3], nd, what)?,
                per_dim(e, ins[4], nd, what)?,
                per_dim(e, ins[5], nd, what)?,
                e.flag(ins[6], what)?,
                per_dim(e, ins[7], nd, what)?,
                e.int(ins[8], what)?,
            )
        } else {
            let stride = if ins.len() > 3 {
                per_dim(e, ins[3], nd, what)?
            } else {
                vec![1; nd]
            };
            let dilation = if ins.len() > 5 {
                per_dim(e, ins[5], nd, what)?
            } else {
                vec![1; nd]
            };
            let padding = match ins.get(4).and_then(|&i| e.konst(i)) {
                None => vec![0; nd],
                Some(IValue::Str(s)) if s == "valid" => vec![0; nd],
                Some(IValue::Str(s)) if s == "same" => {
                    let total: Vec<i64> = (0..nd)
                        .map(|i| dilation[i] * (k[i + 2] as i64 - 1))
                        .collect();
                    if total.iter().any(|t| t % 2 != 0) {
                        return Err(err(format!(
                            "{what}: padding='same' with an even kernel is not exported"
                        )));
                    }
                    total.iter().map(|t| t / 2).collect()
                }
                Some(_) => per_dim(e, ins[4], nd, what)?,
            };
            let groups = if ins.len() > 6 {
                e.int(ins[6], what)?
            } else {
                1
            };
            (stride, padding, dilation, false, vec![0; nd], groups)
        };
    let pads: Vec<i64> = padding.iter().chain(padding.iter()).copied().collect();
    let kernel: Vec<i64> = k[2..].iter().map(|&s| s as i64).collect();
    let mut attrs = vec![
        attr_ints("kernel_shape", &kernel),
        attr_ints("strides", &stride),
        attr_ints("pads", &pads),
        attr_ints("dilations", &dilation),
        attr_int("group", groups),
    ];
    let ty = if transposed {
        attrs.push(attr_ints("output_padding", &out_pad));
        "ConvTranspose"
    } else {
        "Conv"
    };
    let y = e.op1(ty, inputs, attrs);
    set(e, n, y);
    Ok(())
}

pub(crate) fn batch_norm(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    if e.flag(ins[5], what)? {
        return Err(err(format!(
            "{what}: a batch norm in training mode; export the model in eval mode (model.eval())"
        )));
    }
    let c = e
        .sizes(ins[3])
        .ok_or_else(|| err(format!("{what}: running stats are required")))?;
    let dt = e.dtype(ins[0]).unwrap_or(DType::F32);
    let x = e.tensor(ins[0], what)?;
    let w = opt_or(e, Some(ins[1]), &c, 1.0, dt, what)?;
    let b = opt_or(e, Some(ins[2]), &c, 0.0, dt, what)?;
    let (m, v) = (e.tensor(ins[3], what)?, e.tensor(ins[4], what)?);
    let eps = e.float(ins[7], what)?;
    let y = e.op1(
        "BatchNormalization",
        vec![x, w, b, m, v],
        vec![attr_float("epsilon", eps)],
    );
    set(e, n, y);
    Ok(())
}

pub(crate) fn pool(e: &mut Emitter, n: &Node, ty: &str, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let nd = e.rank(ins[0], what)? - 2;
    let kernel = per_dim(e, ins[1], nd, what)?;
    let stride = match ins.get(2).map(|&i| e.int_list(i, what)) {
        Some(Ok(v)) if !v.is_empty() => {
            if v.len() == 1 {
                vec![v[0]; nd]
            } else {
                v
            }
        }
        _ => kernel.clone(),
    };
    let padding = if ins.len() > 3 {
        per_dim(e, ins[3], nd, what)?
    } else {
        vec![0; nd]
    };
    let pads: Vec<i64> = padding.iter().chain(padding.iter()).copied().collect();
    let mut attrs = vec![
        attr_ints("kernel_shape", &kernel),
        attr_ints("strides", &stride),
        attr_ints("pads", &pads),
    ];
    if ty == "MaxPool" {
        let dilation = if ins.len() > 4 {
            per_dim(e, ins[4], nd, what)?
        } else {
            vec![1; nd]
        };
        let ceil = ins.len() > 5 && e.flag(ins[5], what)?;
        attrs.push(attr_ints("dilations", &dilation));
        attrs.push(attr_int("ceil_mode", ceil as i64));
    } else {
        let ceil = ins.len() > 4 && e.flag(ins[4], what)?;
        let include = ins.len() <= 5 || e.flag(ins[5], what)?;
        if ins.len() > 6 && !e.is_none(ins[6]) {
            return Err(err(format!("{what}: divisor_override is not exported")));
        }
        attrs.push(attr_int("ceil_mode", ceil as i64));
        attrs.push(attr_int("count_include_pad", include as i64));
    }
    let x = e.tensor(ins[0], what)?;
    let y = e.op1(ty, vec![x], attrs);
    set(e, n, y);
    Ok(())
}

pub(crate) fn adaptive_avg_pool(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let out = per_dim(e, ins[1], 2, what)?;
    let s = e
        .sizes(ins[0])
        .ok_or_else(|| err(format!("{what}: input shape unknown")))?;
    let x = e.tensor(ins[0], what)?;
    let y = if out == [1, 1] {
        e.op1("GlobalAveragePool", vec![x], vec![])
    } else {
        let (h, w) = (s[s.len() - 2] as i64, s[s.len() - 1] as i64);
        if h % out[0] != 0 || w % out[1] != 0 {
            return Err(err(format!(
                "{what}: output size {out:?} does not divide the input's {h}x{w}; not exported"
            )));
        }
        let k = [h / out[0], w / out[1]];
        e.op1(
            "AveragePool",
            vec![x],
            vec![attr_ints("kernel_shape", &k), attr_ints("strides", &k)],
        )
    };
    set(e, n, y);
    Ok(())
}

/// `F.scaled_dot_product_attention`: softmax(q kᵀ · scale + mask) v.
pub(crate) fn attention(e: &mut Emitter, n: &Node, what: &str) -> Result<()> {
    let ins = &n.inputs;
    let qs = e
        .sizes(ins[0])
        .ok_or_else(|| err(format!("{what}: query shape unknown")))?;
    let ks = e
        .sizes(ins[1])
        .ok_or_else(|| err(format!("{what}: key shape unknown")))?;
    let dt = e.dtype(ins[0]).unwrap_or(DType::F32);
    let rank = qs.len() as i64;
    let (q, k, v) = (
        e.tensor(ins[0], what)?,
        e.tensor(ins[1], what)?,
        e.tensor(ins[2], what)?,
    );
    let mut perm: Vec<i64> = (0..rank).collect();
    perm.swap((rank - 1) as usize, (rank - 2) as usize);
    let kt = e.op1("Transpose", vec![k], vec![attr_ints("perm", &perm)]);
    let scores = e.op1("MatMul", vec![q, kt], vec![]);
    let scale = match ins.get(6).and_then(|&i| e.konst(i)) {
        Some(IValue::Float(s)) => s,
        _ => 1.0 / (*qs.last().unwrap() as f64).sqrt(),
    };
    let sc = e.scalar(scale, dt)?;
    let mut s = e.op1("Mul", vec![scores, sc], vec![]);
    if ins.len() > 3 && !e.is_none(ins[3]) {
        let m = e.tensor(ins[3], what)?;
        s = if e.dtype(ins[3]) == Some(DType::Bool) {
            let ninf = e.scalar(f64::NEG_INFINITY, dt)?;
            e.op1("Where", vec![m, s, ninf], vec![])
        } else {
            e.op1("Add", vec![s, m], vec![])
        };
    }
    if ins.len() > 5 && e.flag(ins[5], what)? {
        let (l, sl) = (qs[qs.len() - 2], ks[ks.len() - 2]);
        let mut mask = vec![0f32; l * sl];
        for i in 0..l {
            for j in i + 1..sl {
                mask[i * sl + j] = f32::NEG_INFINITY;
            }
        }
        let m = e.constant(&Tensor::from_vec(mask, &[l, sl])?.to_dtype(dt)?)?;
        s = e.op1("Add", vec![s, m], vec![]);
    }
    let p = e.op1("Softmax", vec![s], vec![attr_int("axis", -1)]);
    let y = e.op1("MatMul", vec![p, v], vec![]);
    set(e, n, y);
    Ok(())
}
