"""``torch.random`` and generator states: the bytes are torch's (a state
saved by torch restores here to torch's stream, and ours equal torch's
after the same draws; fixtures/rng_state.json from fixtures/gen_rng_state.py)."""

import base64
import json
import os
import pickle

import numpy as np
import pytest

import ferrotorch as ft

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "rng_state.json")) as f:
    FIX = json.load(f)
BEFORE = {"after rand(5)": lambda: ft.rand(5), "normal cached after randn(3)": lambda: ft.randn(3),
          "past a twist": lambda: ft.randint(0, 10, (700,))}


def _state(case):
    return ft.tensor(np.frombuffer(base64.b64decode(case["state"]), dtype=np.uint8).copy())


@pytest.mark.parametrize("case", FIX["cases"], ids=lambda c: c["name"])
def test_state_bytes_are_torchs(case):
    ft.manual_seed(case["seed"])
    BEFORE[case["name"]]()
    mine = ft.get_rng_state()
    assert mine.dtype == ft.uint8 and mine.shape == (5056,)
    np.testing.assert_array_equal(np.asarray(mine), np.asarray(_state(case)))


@pytest.mark.parametrize("case", FIX["cases"], ids=lambda c: c["name"])
def test_a_torch_state_continues_torchs_stream(case):
    ft.manual_seed(0)
    ft.set_rng_state(_state(case))
    assert ft.initial_seed() == case["seed"]
    np.testing.assert_array_equal(ft.rand(3).tolist(), np.float32(case["rand"]))
    np.testing.assert_allclose(ft.randn(3).tolist(), case["randn"], rtol=1e-6)
    assert ft.randint(0, 1000, (5,)).tolist() == case["randint"]


def test_fork_rng_restores_the_stream():
    ft.manual_seed(1)
    want = ft.rand(4)
    ft.manual_seed(1)
    with ft.random.fork_rng():
        ft.rand(100)
    assert ft.equal(ft.rand(4), want)
    with ft.random.fork_rng(enabled=False):
        ft.rand(1)
    assert not ft.equal(ft.rand(4), want)


def test_generator_state_clone_and_pickle():
    g = ft.Generator().manual_seed(9)
    ft.rand(7, generator=g)
    s = g.get_state()
    a = ft.rand(3, generator=g)
    assert ft.equal(ft.rand(3, generator=ft.Generator().set_state(s)), a)
    h = pickle.loads(pickle.dumps(g))
    assert ft.equal(ft.rand(5, generator=h), ft.rand(5, generator=g))
    c = g.clone_state()
    assert ft.equal(ft.rand(2, generator=c), ft.rand(2, generator=g))
    assert ft.manual_seed(4) is ft.default_generator
    assert ft.initial_seed() == 4


def test_bad_states_are_refused():
    with pytest.raises(RuntimeError, match="found the input RNG state size to be 10"):
        ft.set_rng_state(ft.zeros(10, dtype=ft.uint8))
    with pytest.raises(TypeError, match="ByteTensor"):
        ft.set_rng_state(ft.zeros(5056))
    bad = np.asarray(ft.get_rng_state()).copy()
    bad[8:12] = np.frombuffer(np.int32(9999).tobytes(), np.uint8)
    with pytest.raises(RuntimeError, match="left value"):
        ft.set_rng_state(ft.tensor(bad))
