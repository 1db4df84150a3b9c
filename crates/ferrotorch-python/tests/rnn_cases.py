"""Packed-sequence cases run the same way under torch (fixtures/gen_rnn.py)
and ferrotorch (test_rnn_packed.py): the library is an argument."""

import numpy as np

CASES = [
    ("LSTM 2-layer bidirectional, unsorted", "LSTM", {"num_layers": 2, "bidirectional": True}, [3, 6, 2, 6], False,
     False),
    ("GRU bidirectional batch_first", "GRU", {"bidirectional": True, "batch_first": True}, [5, 4, 4, 1], True, True),
    ("RNN relu 2-layer", "RNN", {"num_layers": 2, "nonlinearity": "relu"}, [6, 6, 3, 2], True, False),
    ("LSTM with proj and initial state", "LSTM", {"proj_size": 2}, [2, 6, 4, 1], False, False),
]


def run_packed(L, mode, kwargs, lengths, enforce_sorted, hx_given):
    rng = np.random.default_rng(0)
    batch_first = kwargs.get("batch_first", False)
    x = rng.normal(size=(4, 6, 3) if batch_first else (6, 4, 3)).astype(np.float32)
    L.manual_seed(0)
    m = getattr(L.nn, mode)(3, 5, **kwargs)
    xt = L.tensor(x).requires_grad_(True)
    packed = L.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    dirs = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1)
    hx = None
    if hx_given or kwargs.get("proj_size"):
        h0 = L.tensor(rng.normal(size=(layers * dirs, 4, kwargs.get("proj_size") or 5)).astype(np.float32))
        c0 = L.tensor(rng.normal(size=(layers * dirs, 4, 5)).astype(np.float32))
        hx = (h0, c0) if mode == "LSTM" else c0
    out, h = m(packed, hx)
    pad, lens = L.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first, padding_value=-2.0, total_length=7)
    states = h if isinstance(h, tuple) else (h,)
    w = L.tensor(rng.normal(size=tuple(pad.shape)).astype(np.float32))
    loss = (pad * w).sum() + sum((s * s).sum() for s in states)
    loss.backward()
    return {"data": out.data.detach().reshape(-1).tolist(), "batch_sizes": out.batch_sizes.tolist(),
            "padded": pad.detach().reshape(-1).tolist(), "lengths": lens.tolist(),
            "states": [s.detach().reshape(-1).tolist() for s in states],
            "grad_x": xt.grad.reshape(-1).tolist(),
            "grad_w": m.weight_ih_l0.grad.reshape(-1).tolist()}


def run_helpers(L):
    a, b, c = L.arange(6.0).reshape(3, 2), L.arange(4.0).reshape(2, 2) + 10, L.tensor([[7.0, 8.0]])
    padded = L.nn.utils.rnn.pad_sequence([a, b, c], padding_value=-1.0)
    left = L.nn.utils.rnn.pad_sequence([a, b, c], batch_first=True, padding_side="left")
    packed = L.nn.utils.rnn.pack_sequence([b, a, c], enforce_sorted=False)
    back = L.nn.utils.rnn.unpack_sequence(packed)
    unpadded = L.nn.utils.rnn.unpad_sequence(padded, L.tensor([3, 2, 1]))
    perm = L.nn.utils.rnn.invert_permutation(L.tensor([2, 0, 1]))
    return {"padded": padded.reshape(-1).tolist(), "padded_shape": list(padded.shape),
            "left": left.reshape(-1).tolist(), "packed": packed.data.reshape(-1).tolist(),
            "batch_sizes": packed.batch_sizes.tolist(), "sorted": packed.sorted_indices.tolist(),
            "unsorted": packed.unsorted_indices.tolist(), "back": [t.reshape(-1).tolist() for t in back],
            "unpadded": [t.reshape(-1).tolist() for t in unpadded], "perm": perm.tolist()}
