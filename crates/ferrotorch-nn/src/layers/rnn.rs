//! `nn.RNN`, `nn.LSTM`, `nn.GRU`: multi-layer, optionally bidirectional,
//! batch-first or sequence-first, with dropout between layers; PyTorch's
//! parameter names (`weight_ih_l0`, `bias_hh_l1_reverse`) and
//! initialisation (everything U(-1/√hidden, 1/√hidden)).

use super::fmt::{py_bool, py_float};
use super::linear::empty_param;
use crate::functional as F;
use crate::{init, Entry, Module, ModuleState, Parameter};
use ferrotorch_core::native::{cat, stack};
use ferrotorch_core::{bail, ensure, Result, Tensor};

/// Options of the recurrent layers, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct RNNOptions {
    /// Stacked layers (default 1).
    pub num_layers: usize,
    /// Learn biases (default true).
    pub bias: bool,
    /// Inputs and outputs are `[batch, seq, feature]` (default false).
    pub batch_first: bool,
    /// Dropout on the outputs of every layer but the last (default 0).
    pub dropout: f64,
    /// Run a second direction over the reversed sequence (default false).
    pub bidirectional: bool,
    /// `nn.RNN` only: `"tanh"` (default) or `"relu"`.
    pub nonlinearity: &'static str,
}

impl Default for RNNOptions {
    fn default() -> Self {
        RNNOptions {
            num_layers: 1,
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
            nonlinearity: "tanh",
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Rnn,
    Lstm,
    Gru,
}

/// What the recurrent layers share: parameters and the time loop.
struct Recurrent {
    mode: Mode,
    input_size: usize,
    hidden_size: usize,
    o: RNNOptions,
    params: Vec<(String, Parameter)>,
    state: ModuleState,
}

impl Recurrent {
    fn new(mode: Mode, input_size: usize, hidden_size: usize, o: RNNOptions) -> Result<Recurrent> {
        ensure!(
            hidden_size > 0,
            Value,
            "hidden_size must be greater than zero"
        );
        ensure!(
            o.num_layers > 0,
            Value,
            "num_layers must be greater than zero"
        );
        ensure!(
            (0.0..=1.0).contains(&o.dropout),
            Value,
            "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
        );
        if mode == Mode::Rnn && !matches!(o.nonlinearity, "tanh" | "relu") {
            bail!(
                Value,
                "Unknown nonlinearity '{}'. Select from 'tanh' or 'relu'.",
                o.nonlinearity
            );
        }
        let gates = match mode {
            Mode::Rnn => 1,
            Mode::Lstm => 4,
            Mode::Gru => 3,
        } * hidden_size;
        let dirs = if o.bidirectional { 2 } else { 1 };
        let mut params = Vec::new();
        for layer in 0..o.num_layers {
            let inp = if layer == 0 {
                input_size
            } else {
                hidden_size * dirs
            };
            for d in 0..dirs {
                let sfx = format!("l{layer}{}", if d == 1 { "_reverse" } else { "" });
                params.push((format!("weight_ih_{sfx}"), empty_param(&[gates, inp])?));
                params.push((
                    format!("weight_hh_{sfx}"),
                    empty_param(&[gates, hidden_size])?,
                ));
                if o.bias {
                    params.push((format!("bias_ih_{sfx}"), empty_param(&[gates])?));
                    params.push((format!("bias_hh_{sfx}"), empty_param(&[gates])?));
                }
            }
        }
        let k = 1.0 / (hidden_size as f64).sqrt();
        for (_, p) in &params {
            init::uniform_(&p.tensor(), -k, k, None)?;
        }
        Ok(Recurrent {
            mode,
            input_size,
            hidden_size,
            o,
            params,
            state: ModuleState::new(),
        })
    }

    fn extra_repr(&self) -> String {
        let mut s = format!("{}, {}", self.input_size, self.hidden_size);
        if self.o.num_layers != 1 {
            s += &format!(", num_layers={}", self.o.num_layers);
        }
        if !self.o.bias {
            s += ", bias=False";
        }
        if self.o.batch_first {
            s += &format!(", batch_first={}", py_bool(true));
        }
        if self.o.dropout != 0.0 {
            s += &format!(", dropout={}", py_float(self.o.dropout));
        }
        if self.o.bidirectional {
            s += ", bidirectional=True";
        }
        s
    }

    fn weights(&self, layer: usize, dir: usize) -> [Option<Tensor>; 4] {
        let per = if self.o.bias { 4 } else { 2 };
        let dirs = if self.o.bidirectional { 2 } else { 1 };
        let base = (layer * dirs + dir) * per;
        let get = |i: usize| (i < per).then(|| self.params[base + i].1.tensor());
        [get(0), get(1), get(2), get(3)]
    }

    /// One step: the new hidden (and cell) state from the projected input.
    fn cell(
        &self,
        xp: &Tensor,
        h: &Tensor,
        c: Option<&Tensor>,
        w_hh: &Tensor,
        b_hh: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let hp = F::linear(h, w_hh, b_hh)?;
        match self.mode {
            Mode::Rnn => {
                let pre = xp.add(&hp)?;
                Ok((
                    if self.o.nonlinearity == "relu" {
                        pre.relu()?
                    } else {
                        pre.tanh()?
                    },
                    None,
                ))
            }
            Mode::Lstm => {
                let g = xp.add(&hp)?.chunk(4, -1)?;
                let (i, f, gg, o) = (
                    g[0].sigmoid()?,
                    g[1].sigmoid()?,
                    g[2].tanh()?,
                    g[3].sigmoid()?,
                );
                let c = f
                    .mul(c.expect("LSTM carries a cell state"))?
                    .add(&i.mul(&gg)?)?;
                Ok((o.mul(&c.tanh()?)?, Some(c)))
            }
            Mode::Gru => {
                let gi = xp.chunk(3, -1)?;
                let gh = hp.chunk(3, -1)?;
                let r = gi[0].add(&gh[0])?.sigmoid()?;
                let z = gi[1].add(&gh[1])?.sigmoid()?;
                let n = gi[2].add(&r.mul(&gh[2])?)?.tanh()?;
                // (1 - z) * n + z * h
                Ok((z.neg()?.add(1.0)?.mul(&n)?.add(&z.mul(h)?)?, None))
            }
        }
    }

    /// The time loop over sequence-first `[L, N, H_in]` input.
    fn run(
        &self,
        input: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let name = self.type_name();
        let unbatched = input.dim() == 2;
        ensure!(
            input.dim() == 3 || unbatched,
            Value,
            "{name}: Expected input to be 2D or 3D, got {}D instead",
            input.dim()
        );
        let mut x = if unbatched {
            input.unsqueeze(1)?
        } else if self.o.batch_first {
            input.transpose(0, 1)?
        } else {
            input.clone()
        };
        ensure!(
            x.shape()[2] == self.input_size,
            Runtime,
            "input.size(-1) must be equal to input_size. Expected {}, got {}",
            self.input_size,
            x.shape()[2]
        );
        let (l, n) = (x.shape()[0], x.shape()[1]);
        let dirs = if self.o.bidirectional { 2 } else { 1 };
        let hshape = [self.o.num_layers * dirs, n, self.hidden_size];
        let init_state = |s: Option<&Tensor>, what: &str| -> Result<Tensor> {
            match s {
                Some(t) => {
                    let t = if unbatched {
                        t.unsqueeze(1)?
                    } else {
                        t.clone()
                    };
                    ensure!(
                        t.shape() == hshape,
                        Runtime,
                        "Expected {what} size ({}, {}, {}), got {:?}",
                        hshape[0],
                        hshape[1],
                        hshape[2],
                        t.shape()
                    );
                    Ok(t)
                }
                None => Tensor::zeros(&hshape, x.dtype()),
            }
        };
        let lstm = self.mode == Mode::Lstm;
        let h0 = init_state(h0, if lstm { "hidden[0]" } else { "hidden" })?;
        let c0 = if lstm {
            Some(init_state(c0, "hidden[1]")?)
        } else {
            None
        };
        let (mut hn, mut cn) = (Vec::new(), Vec::new());
        for layer in 0..self.o.num_layers {
            let mut outs = Vec::new();
            for d in 0..dirs {
                let [w_ih, w_hh, b_ih, b_hh] = self.weights(layer, d);
                let (w_ih, w_hh) = (w_ih.expect("weight_ih"), w_hh.expect("weight_hh"));
                let xp = F::linear(&x, &w_ih, b_ih.as_ref())?;
                let idx = (layer * dirs + d) as i64;
                let mut h = h0.select(0, idx)?;
                let mut c = c0.as_ref().map(|c| c.select(0, idx)).transpose()?;
                let mut steps = vec![None; l];
                let order: Vec<usize> = if d == 0 {
                    (0..l).collect()
                } else {
                    (0..l).rev().collect()
                };
                for t in order {
                    let (nh, nc) = self.cell(
                        &xp.select(0, t as i64)?,
                        &h,
                        c.as_ref(),
                        &w_hh,
                        b_hh.as_ref(),
                    )?;
                    steps[t] = Some(nh.clone());
                    h = nh;
                    c = nc;
                }
                let steps: Vec<Tensor> = steps
                    .into_iter()
                    .map(|s| s.expect("every step ran"))
                    .collect();
                outs.push(stack(&steps, 0)?);
                hn.push(h);
                cn.extend(c);
            }
            x = if dirs == 1 {
                outs.remove(0)
            } else {
                cat(&outs, -1)?
            };
            if layer + 1 < self.o.num_layers && self.o.dropout > 0.0 {
                x = F::dropout(&x, self.o.dropout, self.state.is_training())?;
            }
        }
        let out = if unbatched {
            x.squeeze_dims(&[1])?
        } else if self.o.batch_first {
            x.transpose(0, 1)?
        } else {
            x
        };
        let fix = |v: Vec<Tensor>| -> Result<Tensor> {
            let s = stack(&v, 0)?;
            if unbatched {
                s.squeeze_dims(&[1])
            } else {
                Ok(s)
            }
        };
        let c = if cn.is_empty() { None } else { Some(fix(cn)?) };
        Ok((out, fix(hn)?, c))
    }

    fn type_name(&self) -> &'static str {
        match self.mode {
            Mode::Rnn => "RNN",
            Mode::Lstm => "LSTM",
            Mode::Gru => "GRU",
        }
    }
}

macro_rules! recurrent {
    ($(#[$doc:meta])* $name:ident, $mode:expr) => {
        $(#[$doc])*
        pub struct $name(Recurrent);

        impl $name {
            /// The layer with PyTorch's initialisation.
            pub fn new(input_size: usize, hidden_size: usize, options: RNNOptions) -> Result<$name> {
                Ok($name(Recurrent::new($mode, input_size, hidden_size, options)?))
            }
        }

        impl Module for $name {
            fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
                visitor("", Entry::State(&self.0.state));
                for (name, p) in &self.0.params {
                    visitor(name, Entry::Parameter(p));
                }
            }
            fn type_name(&self) -> &str {
                self.0.type_name()
            }
            fn as_module(&self) -> &dyn Module {
                self
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
            fn extra_repr(&self) -> String {
                self.0.extra_repr()
            }
        }

        impl crate::ModuleField for $name {
            fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
                visitor(name, Entry::Module(self));
            }
        }
    };
}

recurrent!(
    /// `nn.RNN(input_size, hidden_size, ...)`: `h' = tanh(W_ih x + b_ih + W_hh h + b_hh)` (or relu).
    RNN,
    Mode::Rnn
);
recurrent!(
    /// `nn.LSTM(input_size, hidden_size, ...)`.
    LSTM,
    Mode::Lstm
);
recurrent!(
    /// `nn.GRU(input_size, hidden_size, ...)`.
    GRU,
    Mode::Gru
);

impl RNN {
    /// `forward(input, hx)`: `(output, h_n)`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (out, h, _) = self.0.run(input, hx, None)?;
        Ok((out, h))
    }
}

impl GRU {
    /// `forward(input, hx)`: `(output, h_n)`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (out, h, _) = self.0.run(input, hx, None)?;
        Ok((out, h))
    }
}

impl LSTM {
    /// `forward(input, (h_0, c_0))`: `(output, (h_n, c_n))`.
    pub fn forward(
        &self,
        input: &Tensor,
        hx: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, (Tensor, Tensor))> {
        let (out, h, c) = self.0.run(input, hx.map(|s| s.0), hx.map(|s| s.1))?;
        Ok((out, (h, c.expect("LSTM returns a cell state"))))
    }
}
