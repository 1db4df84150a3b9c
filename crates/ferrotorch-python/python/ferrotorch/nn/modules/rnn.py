"""``RNN``, ``LSTM``, ``GRU``: torch's parameter names, shapes, init and
gate order, composed of native ops one time step at a time."""

import math

from ... import _C
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _stack(ts, dim=0):
    return _C._call_op("stack", (ts, dim))


class RNNBase(Module):
    """Shared layout: for each layer and direction ``weight_ih_l{k}``,
    ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (``_reverse``
    suffix for the backward direction)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        # with a projection the hidden state (and output) has proj_size features
        real = proj_size if proj_size > 0 else hidden_size
        self._names = []
        for layer in range(num_layers):
            for d in range(dirs):
                suffix = f"_l{layer}" + ("_reverse" if d == 1 else "")
                in_size = input_size if layer == 0 else real * dirs
                shapes = [("weight_ih", (gate, in_size)), ("weight_hh", (gate, real))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(_C._call_op("empty", (shape,), {"dtype": dtype})))
                    names.append(name + suffix)
                self._names.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _cell(self, x, state, w):
        w_ih, w_hh = getattr(self, w[0]), getattr(self, w[1])
        b_ih = getattr(self, w[2]) if self.bias else None
        b_hh = getattr(self, w[3]) if self.bias else None
        if self.mode == "LSTM":
            h, c = state
            gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
            i, f, g, o = gates.chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            if self.proj_size > 0:
                h = F.linear(h, getattr(self, w[-1]))
            return h, c
        h = state
        if self.mode == "GRU":
            gi = F.linear(x, w_ih, b_ih).chunk(3, 1)
            gh = F.linear(h, w_hh, b_hh).chunk(3, 1)
            r = (gi[0] + gh[0]).sigmoid()
            z = (gi[1] + gh[1]).sigmoid()
            n = (gi[2] + r * gh[2]).tanh()
            return (1 - z) * n + z * h
        pre = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
        return pre.tanh() if self.mode == "RNN_TANH" else F.relu(pre)

    def forward(self, input, hx=None):
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        steps, batch = x.size(0), x.size(1)
        dirs = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        if hx is None:
            zeros = x.new_zeros(self.num_layers * dirs, batch, self.hidden_size)
            if lstm and self.proj_size > 0:
                hx = (x.new_zeros(self.num_layers * dirs, batch, self.proj_size), zeros)
            else:
                hx = (zeros, zeros) if lstm else zeros
        elif not batched:
            hx = tuple(h.unsqueeze(1) for h in hx) if lstm else hx.unsqueeze(1)
        h0, c0 = hx if lstm else (hx, None)
        if x.size(2) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.size(2)}")
        out_size = self.proj_size if lstm and self.proj_size > 0 else self.hidden_size
        for name, state, size in ((("hidden[0]" if lstm else "hidden"), h0, out_size),
                                  ("hidden[1]", c0, self.hidden_size)):
            want = (self.num_layers * dirs, batch, size)
            if state is not None and tuple(state.shape) != want:
                raise RuntimeError(f"Expected {name} size {want}, got {list(state.shape)}")
        layer_in = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                state = (h0[k], c0[k]) if lstm else h0[k]
                order = range(steps) if d == 0 else range(steps - 1, -1, -1)
                ys = [None] * steps
                for t in order:
                    state = self._cell(layer_in[t], state, self._names[k])
                    ys[t] = state[0] if lstm else state
                outs.append(_stack(ys))
                h_n.append(state[0] if lstm else state)
                if lstm:
                    c_n.append(state[1])
            layer_in = outs[0] if dirs == 1 else _C._call_op("cat", (outs, 2))
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        out = layer_in
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        h_n = _stack(h_n)
        c_n = _stack(c_n) if lstm else None
        if not batched:
            out = out.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)


class RNN(RNNBase):
    """Elman RNN with tanh or ReLU."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)
