//! Recurrent layers as ops, with ATen's names and schemas: `rnn_tanh`,
//! `rnn_relu`, `gru`, `lstm` over whole sequences (what `nn.RNN`,
//! `nn.GRU`, `nn.LSTM` call, with their parameters as one flat list) and
//! the one-step `*_cell` forms (`nn.RNNCell`, `nn.GRUCell`,
//! `nn.LSTMCell`).
//!
//! # Note [Fused recurrent cells]
//! A GRU step composed of tensor ops is about fifteen of them (three
//! chunks, adds, two sigmoids, a tanh, the blend), each a node backward;
//! with small batches the step is bound by that bookkeeping, not by
//! arithmetic. Float32 steps instead run the pointwise part as one kernel
//! (`ferrotorch_kernels::rnn`) recorded as one node
//! (`ThnnFusedGruCellBackward0` / `ThnnFusedLstmCellBackward0`, torch's
//! names for its fused cells) whose backward is one kernel too; other
//! dtypes take the composed form, which is also the formula the fused node
//! differentiates under `create_graph` (`autograd/derivatives/rnn.rs`).
//! The input projection of all time steps is one GEMM before the loop,
//! and the steps are taken with one `unbind` (Note [One node for all
//! pieces]), as in ATen.

use crate::dispatch::{IValue, Registry};
use crate::error::Result;
use crate::native::{cat, stack};
use crate::tensor::access::contiguous_slices_mut;
use crate::tensor::Tensor;
use crate::DType;

/// Which recurrence a layer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RnnMode {
    /// `h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`.
    Tanh,
    /// `h' = relu(W_ih x + b_ih + W_hh h + b_hh)`.
    Relu,
    /// Gated recurrent unit, gates `r, z, n`.
    Gru,
    /// Long short-term memory, gates `i, f, g, o`, optional projection.
    Lstm,
}

impl RnnMode {
    fn gates(self) -> usize {
        match self {
            RnnMode::Tanh | RnnMode::Relu => 1,
            RnnMode::Gru => 3,
            RnnMode::Lstm => 4,
        }
    }

    fn op(self) -> &'static str {
        match self {
            RnnMode::Tanh => "rnn_tanh",
            RnnMode::Relu => "rnn_relu",
            RnnMode::Gru => "gru",
            RnnMode::Lstm => "lstm",
        }
    }
}

/// The options of the sequence ops after the parameters, as in ATen's
/// `gru.input(input, hx, params, has_biases, num_layers, dropout, train,
/// bidirectional, batch_first)`.
#[derive(Clone, Copy, Debug)]
pub struct RnnArgs {
    /// `params` holds `b_ih`, `b_hh` after each layer's weights.
    pub has_biases: bool,
    /// Stacked layers.
    pub num_layers: usize,
    /// Dropout probability on the outputs of all layers but the last.
    pub dropout: f64,
    /// Whether dropout is active.
    pub train: bool,
    /// A second direction over the reversed sequence per layer.
    pub bidirectional: bool,
    /// `input` is `[batch, seq, feature]` (the output too).
    pub batch_first: bool,
}

fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    x.linear(w, b)
}

/// One GRU step from the input and hidden projections (biases included).
fn gru_step(gi: &Tensor, gh: &Tensor, h: &Tensor) -> Result<Tensor> {
    if [gi, gh, h].iter().all(|t| t.dtype() == DType::F32) {
        let (gi, gh, h) = (gi.contiguous()?, gh.contiguous()?, h.contiguous()?);
        let out = Tensor::empty(h.shape(), DType::F32)?;
        let ws = Tensor::empty(gi.shape(), DType::F32)?;
        let n = h.shape()[1];
        contiguous_slices_mut::<f32>("gru_cell", &[&out, &ws], &[&gi, &gh, &h], |o, r| {
            let (a, b) = o.split_at_mut(1);
            ferrotorch_kernels::rnn::gru_forward(r[0], r[1], r[2], a[0], b[0], n);
        })?;
        return crate::autograd::derivatives::rnn::gru_step(&gi, &gh, &h, ws, out);
    }
    let (i, hh) = (gi.chunk(3, 1)?, gh.chunk(3, 1)?);
    let r = i[0].add(&hh[0])?.sigmoid()?;
    let z = i[1].add(&hh[1])?.sigmoid()?;
    let n = i[2].add(&r.mul(&hh[2])?)?.tanh()?;
    // ATen's order: (h - n)·z + n
    h.sub(&n)?.mul(&z)?.add(&n)
}

/// One LSTM step from the summed gate pre-activations and the cell state.
fn lstm_step(gates: &Tensor, c: &Tensor) -> Result<(Tensor, Tensor)> {
    if gates.dtype() == DType::F32 && c.dtype() == DType::F32 {
        let (gates, c) = (gates.contiguous()?, c.contiguous()?);
        let h = Tensor::empty(c.shape(), DType::F32)?;
        let cn = Tensor::empty(c.shape(), DType::F32)?;
        let n = c.shape()[1];
        let ws = Tensor::empty(&[c.shape()[0], 5 * n], DType::F32)?;
        contiguous_slices_mut::<f32>("lstm_cell", &[&h, &cn, &ws], &[&gates, &c], |o, r| {
            let (a, rest) = o.split_at_mut(1);
            let (b, w) = rest.split_at_mut(1);
            ferrotorch_kernels::rnn::lstm_forward(r[0], r[1], a[0], b[0], w[0], n);
        })?;
        return crate::autograd::derivatives::rnn::lstm_step(&gates, &c, ws, h, cn);
    }
    let q = gates.chunk(4, 1)?;
    let (i, f, g, o) = (
        q[0].sigmoid()?,
        q[1].sigmoid()?,
        q[2].tanh()?,
        q[3].sigmoid()?,
    );
    let cn = f.mul(c)?.add(&i.mul(&g)?)?;
    Ok((o.mul(&cn.tanh()?)?, cn))
}

/// One step of `mode` for 2-D `x` `[batch, in]` and states `[batch, *]`;
/// `w` is `[w_ih, w_hh, b_ih?, b_hh?, w_hr?]`.
fn step(
    mode: RnnMode,
    gi: &Tensor,
    h: &Tensor,
    c: Option<&Tensor>,
    w: &Weights,
) -> Result<(Tensor, Option<Tensor>)> {
    let gh = linear(h, &w.hh, w.b_hh.as_ref())?;
    Ok(match mode {
        RnnMode::Tanh => (gi.add(&gh)?.tanh()?, None),
        RnnMode::Relu => (gi.add(&gh)?.relu()?, None),
        RnnMode::Gru => (gru_step(gi, &gh, h)?, None),
        RnnMode::Lstm => {
            let (mut h, cn) = lstm_step(&gi.add(&gh)?, c.expect("an LSTM step has a cell state"))?;
            if let Some(hr) = &w.hr {
                h = h.matmul(&hr.t()?)?;
            }
            (h, Some(cn))
        }
    })
}

/// One layer-direction's parameters.
struct Weights {
    ih: Tensor,
    hh: Tensor,
    b_ih: Option<Tensor>,
    b_hh: Option<Tensor>,
    hr: Option<Tensor>,
}

/// Check the flat parameter list and the states against the input, with
/// ATen's messages; split the list per layer and direction.
fn check(
    mode: RnnMode,
    x: &Tensor,
    hx: &[Tensor],
    params: &[Tensor],
    o: &RnnArgs,
) -> Result<Vec<Weights>> {
    let op = mode.op();
    crate::ensure!(
        x.dim() == 3,
        Runtime,
        "{op}: input must have 3 dimensions, got {} (shape {:?})",
        x.dim(),
        x.shape()
    );
    crate::ensure!(
        x.is_floating_point(),
        Runtime,
        "{op}: expected a floating point input, got {}",
        x.dtype()
    );
    crate::ensure!(
        o.num_layers > 0,
        Value,
        "{op}: num_layers must be greater than zero"
    );
    crate::ensure!(
        (0.0..=1.0).contains(&o.dropout),
        Value,
        "{op}: dropout should be a number in range [0, 1], got {}",
        o.dropout
    );
    let want_states = if mode == RnnMode::Lstm { 2 } else { 1 };
    crate::ensure!(
        hx.len() == want_states,
        Runtime,
        "{op}: expected {want_states} hidden state tensor(s), got {}",
        hx.len()
    );
    for h in hx {
        crate::ensure!(
            h.dim() == 3,
            Runtime,
            "{op}: hidden states must have 3 dimensions, got shape {:?}",
            h.shape()
        );
    }
    let dirs = if o.bidirectional { 2 } else { 1 };
    let real = hx[0].shape()[2];
    let hidden = hx.last().map_or(real, |c| c.shape()[2]);
    let proj = mode == RnnMode::Lstm && real != hidden;
    let per = 2 + 2 * usize::from(o.has_biases) + usize::from(proj);
    let want = o.num_layers * dirs * per;
    crate::ensure!(
        params.len() == want,
        Runtime,
        "{op}: expected {want} parameter tensors ({} layers x {dirs} directions x {per}), got {}",
        o.num_layers,
        params.len()
    );
    let (batch, seq) = if o.batch_first {
        (x.shape()[0], x.shape()[1])
    } else {
        (x.shape()[1], x.shape()[0])
    };
    crate::ensure!(
        seq > 0,
        Runtime,
        "{op}: Expected sequence length to be larger than 0 in RNN"
    );
    for (k, (h, size)) in hx.iter().zip([real, hidden]).enumerate() {
        let expect = [o.num_layers * dirs, batch, size];
        // torch's own words (nn.RNNBase.check_hidden_size)
        crate::ensure!(
            h.shape() == expect,
            Runtime,
            "Expected hidden{} size ({}, {}, {}), got {:?}",
            if want_states == 2 {
                format!("[{k}]")
            } else {
                String::new()
            },
            expect[0],
            expect[1],
            expect[2],
            h.shape()
        );
    }
    let gate = mode.gates() * hidden;
    let mut ws = Vec::new();
    for (i, p) in params.chunks(per).enumerate() {
        let (layer, dir) = (i / dirs, i % dirs);
        let in_size = if layer == 0 {
            x.shape()[2]
        } else {
            real * dirs
        };
        let mut shapes = vec![
            ("weight_ih", vec![gate, in_size]),
            ("weight_hh", vec![gate, real]),
        ];
        if o.has_biases {
            shapes.push(("bias_ih", vec![gate]));
            shapes.push(("bias_hh", vec![gate]));
        }
        if proj {
            shapes.push(("weight_hr", vec![real, hidden]));
        }
        for (t, (name, s)) in p.iter().zip(&shapes) {
            let sfx = if dir == 1 { "_reverse" } else { "" };
            crate::ensure!(
                t.shape() == s.as_slice(),
                Runtime,
                "{op}: {name}_l{layer}{sfx} should have shape {s:?} (input size {in_size}, hidden size {hidden}), got {:?}",
                t.shape()
            );
            crate::ensure!(
                t.dtype() == x.dtype(),
                Runtime,
                "{op}: input dtype {} does not match {name}_l{layer}{sfx} dtype {}",
                x.dtype(),
                t.dtype()
            );
        }
        let b = |j: usize| o.has_biases.then(|| p[j].clone());
        ws.push(Weights {
            ih: p[0].clone(),
            hh: p[1].clone(),
            b_ih: b(2),
            b_hh: b(3),
            hr: proj.then(|| p[per - 1].clone()),
        });
    }
    Ok(ws)
}

/// A sequence op: the output `[seq, batch, dirs·real]` (batch first when
/// asked) and the final states, stacked over layers and directions.
pub fn rnn(
    mode: RnnMode,
    input: &Tensor,
    hx: &[Tensor],
    params: &[Tensor],
    o: RnnArgs,
) -> Result<(Tensor, Vec<Tensor>)> {
    static OPS: [crate::dispatch::OpHandle; 4] = [
        crate::dispatch::OpHandle::new("rnn_tanh.input"),
        crate::dispatch::OpHandle::new("rnn_relu.input"),
        crate::dispatch::OpHandle::new("gru.input"),
        crate::dispatch::OpHandle::new("lstm.input"),
    ];
    let handle = &OPS[mode as usize];
    if let Some(r) = crate::dispatch::handle::intercept(handle, || {
        let h: IValue = if mode == RnnMode::Lstm {
            hx.to_vec().into()
        } else {
            hx.first().cloned().into()
        };
        vec![
            input.into(),
            h,
            params.to_vec().into(),
            o.has_biases.into(),
            (o.num_layers as i64).into(),
            o.dropout.into(),
            o.train.into(),
            o.bidirectional.into(),
            o.batch_first.into(),
        ]
    }) {
        let IValue::Tuple(items) = r? else {
            crate::bail!(Runtime, "{}: expected a tuple of results", mode.op());
        };
        let mut it = items.into_iter().map(IValue::into_tensor);
        let y = it
            .next()
            .transpose()?
            .ok_or_else(|| crate::Error::new(crate::ErrorKind::Runtime, "missing output"))?;
        return Ok((y, it.collect::<Result<_>>()?));
    }
    let weights = check(mode, input, hx, params, &o)?;
    let dirs = if o.bidirectional { 2 } else { 1 };
    let lstm = mode == RnnMode::Lstm;
    let mut x = if o.batch_first {
        input.transpose(0, 1)?
    } else {
        input.clone()
    };
    let h0 = hx[0].unbind(0)?;
    let c0 = if lstm { hx[1].unbind(0)? } else { Vec::new() };
    let (mut hn, mut cn) = (Vec::new(), Vec::new());
    let steps = x.shape()[0];
    for layer in 0..o.num_layers {
        let mut outs = Vec::with_capacity(dirs);
        for d in 0..dirs {
            let k = layer * dirs + d;
            let w = &weights[k];
            let gi = linear(&x, &w.ih, w.b_ih.as_ref())?.unbind(0)?;
            let (mut h, mut c) = (h0[k].clone(), c0.get(k).cloned());
            let mut ys = vec![None; steps];
            for s in 0..steps {
                let t = if d == 0 { s } else { steps - 1 - s };
                let (nh, nc) = step(mode, &gi[t], &h, c.as_ref(), w)?;
                ys[t] = Some(nh.clone());
                (h, c) = (nh, nc);
            }
            let ys: Vec<Tensor> = ys.into_iter().map(|y| y.expect("every step ran")).collect();
            outs.push(stack(&ys, 0)?);
            hn.push(h);
            cn.extend(c);
        }
        x = if dirs == 1 {
            outs.pop().expect("one direction")
        } else {
            cat(&outs, 2)?
        };
        if o.dropout > 0.0 && o.train && layer + 1 < o.num_layers {
            x = x.dropout(o.dropout, true, None)?;
        }
    }
    if o.batch_first {
        x = x.transpose(0, 1)?;
    }
    let mut states = vec![stack(&hn, 0)?];
    if lstm {
        states.push(stack(&cn, 0)?);
    }
    Ok((x, states))
}

/// One step of `mode` for a 1-D or 2-D input (`nn.GRUCell` and friends):
/// the new hidden state (and cell state for the LSTM).
pub fn rnn_cell(
    mode: RnnMode,
    input: &Tensor,
    hx: &[Tensor],
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<Vec<Tensor>> {
    let op = format!("{}_cell", mode.op());
    crate::ensure!(
        input.dim() == 1 || input.dim() == 2,
        Value,
        "{op}: Expected input to be 1D or 2D, got {}D instead",
        input.dim()
    );
    let batched = input.dim() == 2;
    let x = if batched {
        input.clone()
    } else {
        input.unsqueeze(0)?
    };
    let hidden = w_hh.shape().get(1).copied().unwrap_or(0);
    let gate = mode.gates() * hidden;
    crate::ensure!(
        w_ih.dim() == 2
            && w_hh.dim() == 2
            && w_ih.shape()[0] == gate
            && w_hh.shape()[0] == gate
            && w_ih.shape()[1] == x.shape()[1],
        Runtime,
        "{op}: input {:?} does not match weight_ih {:?} and weight_hh {:?}",
        input.shape(),
        w_ih.shape(),
        w_hh.shape()
    );
    for b in [b_ih, b_hh].into_iter().flatten() {
        crate::ensure!(
            b.shape() == [gate],
            Runtime,
            "{op}: bias of shape {:?}, expected [{gate}]",
            b.shape()
        );
    }
    let n = x.shape()[0];
    let want_states = if mode == RnnMode::Lstm { 2 } else { 1 };
    crate::ensure!(
        hx.len() == want_states,
        Runtime,
        "{op}: expected {want_states} state tensor(s), got {}",
        hx.len()
    );
    let states: Vec<Tensor> = hx
        .iter()
        .map(|h| {
            let h = if batched { h.clone() } else { h.unsqueeze(0)? };
            crate::ensure!(
                h.shape() == [n, hidden],
                Runtime,
                "{op}: Expected hidden size [{n}, {hidden}] for input {:?}, got {:?}",
                input.shape(),
                h.shape()
            );
            Ok(h)
        })
        .collect::<Result<_>>()?;
    let w = Weights {
        ih: w_ih.clone(),
        hh: w_hh.clone(),
        b_ih: b_ih.cloned(),
        b_hh: b_hh.cloned(),
        hr: None,
    };
    let gi = linear(&x, &w.ih, w.b_ih.as_ref())?;
    let (h, c) = step(mode, &gi, &states[0], states.get(1), &w)?;
    let mut out = vec![h];
    out.extend(c);
    if !batched {
        out = out
            .into_iter()
            .map(|t| t.squeeze_dims(&[0]))
            .collect::<Result<_>>()?;
    }
    Ok(out)
}

/// The trailing arguments of the `rnn_*`/`gru`/`lstm` schemas.
fn args(
    has_biases: bool,
    num_layers: usize,
    dropout: f64,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> RnnArgs {
    RnnArgs {
        has_biases,
        num_layers,
        dropout,
        train,
        bidirectional,
        batch_first,
    }
}

pub(crate) fn register(r: &mut Registry) {
    const TAIL: &str = "Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first)";
    type Opt = Option<Tensor>;
    for mode in [RnnMode::Tanh, RnnMode::Relu, RnnMode::Gru] {
        r.def_typed(
            &format!(
                "{}.input(Tensor input, Tensor hx, {TAIL} -> (Tensor, Tensor)",
                mode.op()
            ),
            move |x: Tensor,
                  hx: Tensor,
                  params: Vec<Tensor>,
                  bias: bool,
                  layers: usize,
                  p: f64,
                  train: bool,
                  bidir: bool,
                  batch_first: bool| {
                let a = args(bias, layers, p, train, bidir, batch_first);
                let (y, mut h) = rnn(mode, &x, &[hx], &params, a)?;
                Ok((y, h.remove(0)))
            },
        );
        r.def_typed(
            &format!("{}_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", mode.op()),
            move |x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Opt, b_hh: Opt| {
                let out = rnn_cell(mode, &x, &[hx], &w_ih, &w_hh, b_ih.as_ref(), b_hh.as_ref())?;
                Ok(out.into_iter().next().expect("one state"))
            },
        );
    }
    r.def_typed(
        &format!("lstm.input(Tensor input, Tensor[] hx, {TAIL} -> (Tensor, Tensor, Tensor)"),
        |x: Tensor,
         hx: Vec<Tensor>,
         params: Vec<Tensor>,
         bias: bool,
         layers: usize,
         p: f64,
         train: bool,
         bidir: bool,
         batch_first: bool| {
            let a = args(bias, layers, p, train, bidir, batch_first);
            let (y, s) = rnn(RnnMode::Lstm, &x, &hx, &params, a)?;
            Ok((y, s[0].clone(), s[1].clone()))
        },
    );
    r.def_typed(
        "lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)",
        |x: Tensor, hx: Vec<Tensor>, w_ih: Tensor, w_hh: Tensor, b_ih: Opt, b_hh: Opt| {
            let s = rnn_cell(RnnMode::Lstm, &x, &hx, &w_ih, &w_hh, b_ih.as_ref(), b_hh.as_ref())?;
            Ok((s[0].clone(), s[1].clone()))
        },
    );
}
