//! `aten::lstm`, `gru`, `rnn_tanh`, `rnn_relu` as ONNX's `LSTM`, `GRU`
//! and `RNN`, one node per layer: torch's weights regrouped in ONNX's gate
//! order (LSTM i,f,g,o → i,o,f,c; GRU r,z,n → z,r,h with
//! `linear_before_reset`, which is torch's GRU), the layers' outputs
//! re-laid (seq, dirs, batch, H) → (seq, batch, dirs·H) between layers and
//! the final states concatenated as torch returns them.

use super::emit::{attr_int, attr_ints, attr_string, attr_strings, err, Emitter, V};
use crate::ir::Node;
use ferrotorch_core::native::cat;
use ferrotorch_core::{Result, Tensor};

/// One kind of recurrent layer.
struct Kind {
    onnx: &'static str,
    gates: usize,
    /// torch's gate chunks in ONNX's order
    order: &'static [usize],
}

fn kind(op: &str) -> Result<Kind> {
    Ok(match op {
        "lstm" => Kind {
            onnx: "LSTM",
            gates: 4,
            order: &[0, 3, 1, 2],
        },
        "gru" => Kind {
            onnx: "GRU",
            gates: 3,
            order: &[1, 0, 2],
        },
        "rnn_tanh" | "rnn_relu" => Kind {
            onnx: "RNN",
            gates: 1,
            order: &[0],
        },
        _ => {
            return Err(err(format!(
                "onnx.export: aten::{op} is not a recurrent layer"
            )))
        }
    })
}

/// `w`'s gate blocks (rows) in ONNX's order.
fn regroup(w: &Tensor, k: &Kind) -> Result<Tensor> {
    let parts = w.chunk(k.gates, 0)?;
    let ordered: Vec<Tensor> = k.order.iter().map(|&i| parts[i].clone()).collect();
    cat(&ordered, 0)
}

fn param(e: &Emitter, v: &V, what: &str) -> Result<Tensor> {
    match v {
        V::T(name) => e.attrs.get(name).cloned().ok_or_else(|| {
            err(format!(
                "onnx.export: {what}: the weight {name:?} is not a module parameter"
            ))
        }),
        other => Err(err(format!("onnx.export: {what}: a weight {other:?}"))),
    }
}

pub(crate) fn lower(e: &mut Emitter, n: &Node, op: &str, overload: &str) -> Result<()> {
    let what = format!("aten::{op}");
    if overload != "input" {
        return Err(err(format!(
            "onnx.export: {what}.{overload} (packed sequences) has no ONNX mapping"
        )));
    }
    let k = kind(op)?;
    let ins = &n.inputs;
    let has_b = e.flag(ins[3], &what)?;
    let layers = e.int(ins[4], &what)? as usize;
    let dropout = e.float(ins[5], &what)?;
    let train = e.flag(ins[6], &what)?;
    let dirs = if e.flag(ins[7], &what)? { 2 } else { 1 };
    let batch_first = e.flag(ins[8], &what)?;
    if train && dropout > 0.0 {
        return Err(err(format!(
            "onnx.export: {what} with dropout in training mode; export in eval mode"
        )));
    }
    let params = match e.value(ins[2])?.clone() {
        V::L(items) => items,
        other => return Err(err(format!("onnx.export: {what}: params {other:?}"))),
    };
    let per = if has_b { 4 } else { 2 };
    if params.len() != layers * dirs * per {
        return Err(err(format!(
            "onnx.export: {what}: {} weights for {layers} layers",
            params.len()
        )));
    }
    let (h0, c0) = match e.value(ins[1])?.clone() {
        V::L(items) if op == "lstm" && items.len() == 2 => {
            (items[0].clone(), Some(items[1].clone()))
        }
        v @ V::T(_) if op != "lstm" => (v, None),
        other => return Err(err(format!("onnx.export: {what}: initial state {other:?}"))),
    };
    let tensor_of = |v: &V| match v {
        V::T(t) => Ok(t.clone()),
        other => Err(err(format!("onnx.export: aten::{op}: a state {other:?}"))),
    };
    let (h0, c0) = (tensor_of(&h0)?, c0.map(|c| tensor_of(&c)).transpose()?);
    let mut x = e.tensor(ins[0], &what)?;
    if batch_first {
        x = e.op1("Transpose", vec![x], vec![attr_ints("perm", &[1, 0, 2])]);
    }
    let mut hs = Vec::new();
    let mut cs = Vec::new();
    for l in 0..layers {
        let (mut ws, mut rs, mut bs) = (Vec::new(), Vec::new(), Vec::new());
        for d in 0..dirs {
            let at = (l * dirs + d) * per;
            let w_ih = param(e, &params[at], &what)?;
            let w_hh = param(e, &params[at + 1], &what)?;
            ws.push(regroup(&w_ih, &k)?.unsqueeze(0)?);
            rs.push(regroup(&w_hh, &k)?.unsqueeze(0)?);
            if has_b {
                let b_ih = regroup(&param(e, &params[at + 2], &what)?, &k)?;
                let b_hh = regroup(&param(e, &params[at + 3], &what)?, &k)?;
                bs.push(cat(&[b_ih, b_hh], 0)?.unsqueeze(0)?);
            }
        }
        let hidden = ws[0].shape()[1] / k.gates;
        let w = e.constant(&cat(&ws, 0)?)?;
        let r = e.constant(&cat(&rs, 0)?)?;
        let b = if has_b {
            e.constant(&cat(&bs, 0)?)?
        } else {
            String::new()
        };
        let (lo, hi) = (
            e.ints_const(&[(l * dirs) as i64])?,
            e.ints_const(&[((l + 1) * dirs) as i64])?,
        );
        let axis0 = e.ints_const(&[0])?;
        let h = e.op1(
            "Slice",
            vec![h0.clone(), lo.clone(), hi.clone(), axis0.clone()],
            vec![],
        );
        let mut inputs = vec![x, w, r, b, String::new(), h];
        if let Some(c0) = &c0 {
            inputs.push(e.op1("Slice", vec![c0.clone(), lo, hi, axis0], vec![]));
        }
        let mut attrs = vec![attr_int("hidden_size", hidden as i64)];
        if dirs == 2 {
            attrs.push(attr_string("direction", "bidirectional"));
        }
        if op == "gru" {
            attrs.push(attr_int("linear_before_reset", 1));
        }
        if op == "rnn_relu" {
            attrs.push(attr_strings("activations", &vec!["Relu"; dirs]));
        }
        let n_out = if op == "lstm" { 3 } else { 2 };
        let outs = e.op(k.onnx, inputs, n_out, attrs);
        let y = e.op1(
            "Transpose",
            vec![outs[0].clone()],
            vec![attr_ints("perm", &[0, 2, 1, 3])],
        );
        let shape = e.ints_const(&[0, 0, -1])?;
        x = e.op1("Reshape", vec![y, shape], vec![]);
        hs.push(outs[1].clone());
        if op == "lstm" {
            cs.push(outs[2].clone());
        }
    }
    if batch_first {
        x = e.op1("Transpose", vec![x], vec![attr_ints("perm", &[1, 0, 2])]);
    }
    e.vals.insert(n.outputs[0], V::T(x));
    let h = if hs.len() == 1 {
        hs.remove(0)
    } else {
        e.op1("Concat", hs, vec![attr_int("axis", 0)])
    };
    e.vals.insert(n.outputs[1], V::T(h));
    if op == "lstm" {
        let c = if cs.len() == 1 {
            cs.remove(0)
        } else {
            e.op1("Concat", cs, vec![attr_int("axis", 0)])
        };
        e.vals.insert(n.outputs[2], V::T(c));
    }
    Ok(())
}
