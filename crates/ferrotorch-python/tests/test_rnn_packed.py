"""Packed sequences through nn.RNN/LSTM/GRU give torch's outputs, states
and gradients, and the padding helpers torch's results
(fixtures/rnn_packed.json from fixtures/gen_rnn.py)."""

import json
import os

import numpy as np
import pytest

import ferrotorch as ft
import rnn_cases as C

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "rnn_packed.json")) as f:
    FIX = json.load(f)


@pytest.mark.parametrize("case", C.CASES, ids=[c[0] for c in C.CASES])
def test_packed_recurrent_layers_are_torchs(case):
    got = C.run_packed(ft, *case[1:])
    want = FIX["cases"][case[0]]
    assert got["batch_sizes"] == want["batch_sizes"] and got["lengths"] == want["lengths"]
    for key in ("data", "padded", "grad_x", "grad_w"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)
    for a, b in zip(got["states"], want["states"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_padding_helpers_are_torchs():
    assert C.run_helpers(ft) == FIX["helpers"]


def test_packing_checks_its_input():
    x = ft.zeros(4, 2, 3)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        ft.nn.utils.rnn.pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        ft.nn.utils.rnn.pack_padded_sequence(x, [3, 0])
    with pytest.raises(RuntimeError, match="batch_size"):
        ft.nn.utils.rnn.pack_padded_sequence(x, [3, 2, 1])
