"""``RNN``, ``LSTM``, ``GRU`` and their cells: torch's parameter names,
shapes, init and gate order; the time loop is one native op per call
(``gru``, ``lstm``, ``rnn_tanh``, ``rnn_relu``, ``*_cell``, as
``torch._VF``), Note [Fused recurrent cells] in the core crate.

Note [Packed recurrent layers]: a ``PackedSequence`` input is run as
torch's packed kernels run it, sequence by sequence to its own length:
the batch (sorted by decreasing length) is cut into groups of equal
length, each group runs through the fused op over exactly its time steps,
and the outputs are packed again; the final states are each sequence's
state after its last step (the reverse direction starts there too). One
native call per distinct length, no step loop in Python. Stacked layers
with dropout in training run one layer at a time, the dropout drawn over
the packed data between them, where torch draws it."""

import math

from ... import _C
from .. import init
from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _reset_uniform(module):
    """torch's init for recurrent layers and cells: every parameter
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for w in module.parameters():
        init.uniform_(w, -stdv, stdv)


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
        _reset_uniform(self)

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

    def _flat_weights(self):
        return [getattr(self, n) for names in self._names for n in names]

    def _forward_packed(self, packed, hx):
        if self.num_layers > 1 and self.dropout > 0 and self.training:
            return self._forward_packed_by_layer(packed, hx)
        return self._forward_packed_grouped(packed, hx)

    def _forward_packed_by_layer(self, packed, hx):
        """Stacked layers with dropout between them, one layer at a time
        over the whole packed batch, dropping out the packed data between
        layers as torch's packed kernels do (the same random draws)."""
        from ..utils.rnn import PackedSequence
        from .. import functional as F
        import ferrotorch as ft

        lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        saved = (self._names, self.num_layers, self.input_size, self.dropout)
        data, hs, cs = packed.data, [], []
        try:
            for k in range(saved[1]):
                self._names = saved[0][k * dirs:(k + 1) * dirs]
                self.num_layers, self.dropout = 1, 0.0
                if k > 0:
                    self.input_size = data.shape[-1]
                h = None
                if hx is not None:
                    h = tuple(x[k * dirs:(k + 1) * dirs] for x in hx) if lstm else hx[k * dirs:(k + 1) * dirs]
                layer_in = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
                out, state = self._forward_packed_grouped(layer_in, h)
                data = out.data
                if k < saved[1] - 1:
                    data = F.dropout(data, saved[3], True)
                hs.append(state[0] if lstm else state)
                if lstm:
                    cs.append(state[1])
        finally:
            self._names, self.num_layers, self.input_size, self.dropout = saved
        out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        h_n = ft.cat(hs, 0)
        return (out, (h_n, ft.cat(cs, 0))) if lstm else (out, h_n)

    def _forward_packed_grouped(self, packed, hx):
        from ..utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
        import ferrotorch as ft

        sorted_idx, unsorted_idx = packed.sorted_indices, packed.unsorted_indices
        padded, lengths = pad_packed_sequence(PackedSequence(packed.data, packed.batch_sizes))
        lengths = [int(v) for v in lengths.tolist()]
        lstm = self.mode == "LSTM"
        if hx is not None and sorted_idx is not None:
            hx = tuple(h.index_select(1, sorted_idx) for h in hx) if lstm else hx.index_select(1, sorted_idx)
        outs, hs, cs, start = [], [], [], 0
        while start < len(lengths):
            end = start
            while end < len(lengths) and lengths[end] == lengths[start]:
                end += 1
            L = lengths[start]
            h = None if hx is None else (tuple(x[:, start:end] for x in hx) if lstm else hx[:, start:end])
            batch_first, self.batch_first = self.batch_first, False
            try:
                out, state = self.forward(padded[:L, start:end], h)
            finally:
                self.batch_first = batch_first
            if L < padded.shape[0]:
                out = ft.cat([out, out.new_zeros(padded.shape[0] - L, *out.shape[1:])])
            outs.append(out)
            if lstm:
                hs.append(state[0])
                cs.append(state[1])
            else:
                hs.append(state)
            start = end
        out = pack_padded_sequence(ft.cat(outs, 1), lengths)
        out = PackedSequence(out.data, out.batch_sizes, sorted_idx, unsorted_idx)
        h_n = ft.cat(hs, 1)
        c_n = ft.cat(cs, 1) if lstm else None
        if unsorted_idx is not None:
            h_n = h_n.index_select(1, unsorted_idx)
            c_n = c_n.index_select(1, unsorted_idx) if lstm else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def forward(self, input, hx=None):
        if isinstance(input, tuple) and type(input).__name__ == "PackedSequence":
            return self._forward_packed(input, hx)
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        x = input if batched else input.unsqueeze(1)
        batch_first = self.batch_first and batched
        batch = x.size(0) if batch_first else x.size(1)
        dirs = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        out_size = self.proj_size if lstm and self.proj_size > 0 else self.hidden_size
        if hx is None:
            zeros = x.new_zeros(self.num_layers * dirs, batch, self.hidden_size)
            if lstm:
                hx = (x.new_zeros(self.num_layers * dirs, batch, out_size), zeros)
            else:
                hx = zeros
        elif not batched:
            hx = tuple(h.unsqueeze(1) for h in hx) if lstm else hx.unsqueeze(1)
        if x.size(2) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.size(2)}")
        states = hx if lstm else (hx,)
        for name, state, size in zip(("hidden[0]", "hidden[1]") if lstm else ("hidden",), states,
                                     (out_size, self.hidden_size)):
            want = (self.num_layers * dirs, batch, size)
            if tuple(state.shape) != want:
                raise RuntimeError(f"Expected {name} size {want}, got {list(state.shape)}")
        args = (self._flat_weights(), self.bias, self.num_layers, self.dropout, self.training,
                self.bidirectional, batch_first)
        if lstm:
            out, h_n, c_n = _C._call_op("lstm", (x, list(hx)) + args)
        else:
            op = {"GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}[self.mode]
            out, h_n = _C._call_op(op, (x, hx) + args)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)


class RNNCellBase(Module):
    """Shared layout of the cells: ``weight_ih``, ``weight_hh``, ``bias_ih``,
    ``bias_hh``."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gate = num_chunks * hidden_size
        empty = lambda *shape: Parameter(_C._call_op("empty", (shape,), {"dtype": dtype}))
        self.weight_ih = empty(gate, input_size)
        self.weight_hh = empty(gate, hidden_size)
        if bias:
            self.bias_ih, self.bias_hh = empty(gate), empty(gate)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_uniform(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _state(self, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and not isinstance(hx, tuple) and hx.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        if hx is None:
            shape = (input.size(0), self.hidden_size) if input.dim() == 2 else (self.hidden_size,)
            return input.new_zeros(*shape)
        return hx

    def _weights(self):
        return (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class RNNCell(RNNCellBase):
    """Elman cell: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        hx = self._state(input, hx)
        op = "rnn_tanh_cell" if self.nonlinearity == "tanh" else "rnn_relu_cell"
        return _C._call_op(op, (input, hx) + self._weights())


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return _C._call_op("gru_cell", (input, self._state(input, hx)) + self._weights())


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o): returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is None:
            z = self._state(input, None)
            hx = (z, z)
        else:
            self._state(input, hx[0])
        return _C._call_op("lstm_cell", (input, list(hx)) + self._weights())


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
