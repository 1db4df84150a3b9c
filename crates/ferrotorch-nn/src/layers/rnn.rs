//! `nn.RNN`, `nn.LSTM`, `nn.GRU`: multi-layer, optionally bidirectional,
//! batch-first or sequence-first, with dropout between layers; PyTorch's
//! parameter names (`weight_ih_l0`, `bias_hh_l1_reverse`) and
//! initialisation (everything U(-1/√hidden, 1/√hidden)).

use super::fmt::{py_bool, py_float};
use super::linear::empty_param;
use crate::{init, Entry, Module, ModuleState, Parameter};
use ferrotorch_core::native::{rnn, RnnArgs, RnnMode};
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
    /// `nn.LSTM` only: project the hidden state to this many features
    /// (default 0: no projection).
    pub proj_size: usize,
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
            proj_size: 0,
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
        ensure!(
            o.proj_size < hidden_size,
            Value,
            "proj_size has to be smaller than hidden_size"
        );
        ensure!(
            o.proj_size == 0 || mode == Mode::Lstm,
            Value,
            "proj_size argument is only supported for LSTM, not RNN or GRU"
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
        let real = if o.proj_size > 0 {
            o.proj_size
        } else {
            hidden_size
        };
        let mut params = Vec::new();
        for layer in 0..o.num_layers {
            let inp = if layer == 0 { input_size } else { real * dirs };
            for d in 0..dirs {
                let sfx = format!("l{layer}{}", if d == 1 { "_reverse" } else { "" });
                params.push((format!("weight_ih_{sfx}"), empty_param(&[gates, inp])?));
                params.push((format!("weight_hh_{sfx}"), empty_param(&[gates, real])?));
                if o.bias {
                    params.push((format!("bias_ih_{sfx}"), empty_param(&[gates])?));
                    params.push((format!("bias_hh_{sfx}"), empty_param(&[gates])?));
                }
                if o.proj_size > 0 {
                    params.push((
                        format!("weight_hr_{sfx}"),
                        empty_param(&[o.proj_size, hidden_size])?,
                    ));
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
        if self.o.proj_size != 0 {
            s += &format!(", proj_size={}", self.o.proj_size);
        }
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

    /// The time loop: the `rnn_tanh` / `rnn_relu` / `gru` / `lstm` op on
    /// the flat parameter list, with unbatched input handled here as in
    /// PyTorch's module.
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
        let x = if unbatched {
            input.unsqueeze(1)?
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
        let n = if self.o.batch_first && !unbatched {
            x.shape()[0]
        } else {
            x.shape()[1]
        };
        let dirs = if self.o.bidirectional { 2 } else { 1 };
        let real = if self.o.proj_size > 0 {
            self.o.proj_size
        } else {
            self.hidden_size
        };
        let lstm = self.mode == Mode::Lstm;
        let state = |s: Option<&Tensor>, size: usize, what: &str| -> Result<Tensor> {
            let want = [self.o.num_layers * dirs, n, size];
            let t = match s {
                Some(t) if unbatched => t.unsqueeze(1)?,
                Some(t) => t.clone(),
                None => return Tensor::zeros(&want, x.dtype()),
            };
            // torch's check_forward_args, before the op infers a projection
            // from the states' sizes
            ensure!(
                t.shape() == want,
                Runtime,
                "Expected {what} size ({}, {}, {}), got {:?}",
                want[0],
                want[1],
                want[2],
                t.shape()
            );
            Ok(t)
        };
        let mut hx = vec![state(h0, real, if lstm { "hidden[0]" } else { "hidden" })?];
        if lstm {
            hx.push(state(c0, self.hidden_size, "hidden[1]")?);
        }
        let params: Vec<Tensor> = self.params.iter().map(|(_, p)| p.tensor()).collect();
        let args = RnnArgs {
            has_biases: self.o.bias,
            num_layers: self.o.num_layers,
            dropout: self.o.dropout,
            train: self.state.is_training(),
            bidirectional: self.o.bidirectional,
            batch_first: self.o.batch_first && !unbatched,
        };
        let mode = match self.mode {
            Mode::Rnn if self.o.nonlinearity == "relu" => RnnMode::Relu,
            Mode::Rnn => RnnMode::Tanh,
            Mode::Gru => RnnMode::Gru,
            Mode::Lstm => RnnMode::Lstm,
        };
        let (out, states) = rnn(mode, &x, &hx, &params, args)?;
        let fix = |t: Tensor| -> Result<Tensor> {
            if unbatched {
                t.squeeze_dims(&[1])
            } else {
                Ok(t)
            }
        };
        let mut states = states.into_iter();
        let h = fix(states.next().expect("a hidden state"))?;
        let c = states.next().map(fix).transpose()?;
        Ok((fix(out)?, h, c))
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
