"""PyTorch's own OpInfo samples, replayed without PyTorch: for every
``op_db`` entry that ``bench/opinfo_diff.py`` found matching torch, its
stored samples (inputs, torch's outputs, and torch's float64 gradients of a
weighted sum of the outputs) are run through ferrotorch and compared with
the same tolerances. The fixture file is written by

    PYTHONPATH=crates/ferrotorch-python/python python bench/opinfo_diff.py \\
        --fixtures crates/ferrotorch-python/tests/fixtures/opinfo.json.gz

with torch installed (its version is recorded in the file)."""
import gzip
import json
import math
import os

import numpy as np
import pytest

import ferrotorch as ft

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "opinfo.json.gz")
RTOL = {"float32": 1.3e-5, "float64": 1e-7}
ATOL = {"float32": 1e-5, "float64": 1e-7}


def _load():
    with gzip.open(FIXTURES, "rt") as f:
        return json.load(f)


DATA = _load()
ENTRIES = sorted(DATA["entries"])


def dec(x):
    """A stored value as ferrotorch's."""
    if "t" in x:
        dtype = getattr(ft, x["t"])
        if x["t"] == "bool":
            arr = np.array(x["v"], dtype=bool)
        elif x["t"].startswith("complex"):
            # stored as (re, im) pairs
            pairs = np.array(x["v"], dtype=np.float64).reshape([*x["s"], 2])
            real = {"complex32": ft.float16, "complex64": ft.float32}.get(x["t"], ft.float64)
            t = ft.view_as_complex(ft.tensor(pairs).to(real).contiguous())
            if x["g"]:
                t.requires_grad_(True)
            return t
        elif x["t"].startswith("float") or x["t"] in ("half", "bfloat16", "double"):
            arr = np.array(x["v"], dtype=np.float64)
        else:
            arr = np.array(x["v"], dtype=np.int64)
        arr = arr.reshape(x["s"])
        t = ft.tensor(arr).to(dtype) if arr.ndim else ft.tensor(arr.item(), dtype=dtype)
        if x["g"]:
            t.requires_grad_(True)
        return t
    if "dtype" in x:
        return getattr(ft, x["dtype"])
    if "seq" in x:
        vals = [dec(v) for v in x["seq"]]
        return tuple(vals) if x["tuple"] else vals
    if "dict" in x:
        return {k: dec(v) for k, v in x["dict"].items()}
    return x["py"]


def expected(x):
    """A stored result as NumPy values (or plain Python ones)."""
    if "t" in x:
        shape = [*x["s"], 2] if x["t"].startswith("complex") else x["s"]
        return np.array(x["v"], dtype=np.float64).reshape(shape), x["t"]
    if "seq" in x:
        return [expected(v) for v in x["seq"]]
    if "dtype" in x:
        return ("dtype", x["dtype"])
    return ("py", x.get("py"))


def resolve(name, first, method_first):
    if name.startswith("torch."):  # torch.ops.aten.x: the same path in ferrotorch (as bench/opinfo_diff.py)
        name = name[len("torch."):]
    leaf = name.split(".")[-1]
    if method_first and isinstance(first, ft.Tensor) and hasattr(first, leaf):
        return getattr(first, leaf), True
    obj = ft
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None and callable(obj):
        return obj, False
    if "." not in name and isinstance(first, ft.Tensor) and hasattr(first, leaf):
        return getattr(first, leaf), True
    raise AssertionError(f"ferrotorch has no {name}")


def call(entry, rec):
    args, kwargs = dec(rec["args"]), dec(rec["kwargs"])
    if entry["name"].endswith("_") and isinstance(args[0], ft.Tensor):
        args = (args[0].clone(), *args[1:])
    fn, method = resolve(entry["name"], args[0] if args else None, entry["method_first"])
    if method and not callable(fn):
        return fn, args
    if method:
        return fn(*args[1:], **kwargs), args
    return fn(*args, **kwargs), args


def flat(x):
    if isinstance(x, (tuple, list)):
        out = []
        for v in x:
            out.extend(flat(v))
        return out
    return [x]


def check(want, got, where):
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], np.ndarray):
        arr, dtype = want
        assert isinstance(got, ft.Tensor), f"{where}: expected a tensor, got {type(got).__name__}"
        got = got.resolve_conj()  # a lazily conjugated result reads as its values
        want_shape = arr.shape[:-1] if dtype.startswith("complex") else arr.shape
        assert tuple(got.shape) == want_shape, f"{where}: shape {tuple(got.shape)} != {want_shape}"
        assert str(got.dtype).split(".")[-1] == dtype, f"{where}: dtype {got.dtype} != {dtype}"
        if dtype.startswith("complex"):
            # compared as (re, im) pairs, with the tolerances of the parts
            got = ft.view_as_real(got.detach())
            dtype = {"complex32": "float16", "complex64": "float32"}.get(dtype, "float64")
        if dtype == "bfloat16":  # NumPy has no bfloat16: read it as float32
            got = got.float()
        g = np.asarray(got.detach().numpy()).astype(np.float64)
        if dtype == "bool" or not dtype.startswith("float"):
            assert np.array_equal(g, arr), f"{where}: values differ"
        else:
            np.testing.assert_allclose(g, arr, rtol=RTOL.get(dtype, 1e-3), atol=ATOL.get(dtype, 1e-3),
                                       equal_nan=True, err_msg=where)
    elif isinstance(want, list):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{where}: structure"
        for i, (w, g) in enumerate(zip(want, got)):
            check(w, g, f"{where}[{i}]")
    elif want[0] == "py":
        w = want[1]
        if isinstance(w, float) and isinstance(got, (int, float)):
            assert math.isclose(got, w, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(w) and math.isnan(got))
        elif isinstance(w, (int, float, bool)) and isinstance(got, ft.Tensor):
            assert math.isclose(float(got.item()), float(w), rel_tol=1e-5, abs_tol=1e-6)
        else:
            assert got == w, f"{where}: {got!r} != {w!r}"


def test_the_fixtures_cover_most_of_op_db():
    # the committed file holds every entry the last run found passing
    # that is called by name: hundreds of ops
    assert len(ENTRIES) >= 300, len(ENTRIES)


@pytest.mark.parametrize("key", ENTRIES)
def test_opinfo_entry(key):
    entry = DATA["entries"][key]
    for i, rec in enumerate(entry["records"]):
        if "out" in rec:
            got, _ = call(entry, rec)
            try:
                check(expected(rec["out"]), got, f"{key} sample {i}")
            except AssertionError:
                # torch's float32 result is the less exact one here: its
                # float64 result (stored beside it) is the reference
                if "exact" not in rec:
                    raise
                check(expected(rec["exact"]), got, f"{key} sample {i} (float64 reference)")
        else:
            got, args = call(entry, rec)
            outs = [ft.view_as_real(o) if o.is_complex() else o
                    for o in flat(got) if isinstance(o, ft.Tensor) and o.requires_grad]
            ins = [a for a in flat(list(args)) if isinstance(a, ft.Tensor) and a.requires_grad]
            ws = dec(rec["weights"])
            assert len(outs) == len(ws), f"{key}: {len(outs)} differentiable outputs, torch has {len(ws)}"
            loss = 0
            for o, w in zip(outs, ws):
                loss = loss + (o * w.to(o.dtype)).sum()
            gs = ft.autograd.grad(loss, ins, allow_unused=True)
            gs = [ft.zeros(tuple(x.shape), dtype=x.dtype) if g is None else g for g, x in zip(gs, ins)]
            check(expected(rec["grads"]), list(gs), f"{key} gradients")
