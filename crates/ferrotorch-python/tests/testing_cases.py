"""torch.testing cases run the same way under torch (fixtures/gen_testing.py)
and ferrotorch (test_testing.py): only torch's API, the library an argument."""

import math

ASSERT_CLOSE = [
    ("float mismatch", lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.5, 3.0])), {}),
    ("int mismatch 2-D", lambda L: (L.tensor([[1, 2], [3, 4]]), L.tensor([[1, 2], [3, 5]])), {}),
    ("dtype", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64)), {}),
    ("dtype unchecked", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64)),
     {"check_dtype": False}),
    ("shape", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0, 3.0])), {}),
    ("nan", lambda L: (L.tensor([1.0, math.nan]), L.tensor([1.0, math.nan])), {}),
    ("nan equal", lambda L: (L.tensor([1.0, math.nan]), L.tensor([1.0, math.nan])), {"equal_nan": True}),
    ("inf", lambda L: (L.tensor([math.inf, 1.0]), L.tensor([math.inf, 1.0])), {}),
    ("python floats", lambda L: (1.0, 1.5), {}),
    ("python ints equal", lambda L: (3, 3), {}),
    ("list of 0-dim", lambda L: ([L.tensor(1.0)], [L.tensor(2.0)]), {}),
    ("dict", lambda L: ({"a": L.tensor(1.0)}, {"a": L.tensor(1.5)}), {}),
    ("dict keys", lambda L: ({"a": L.tensor(1.0)}, {"b": L.tensor(1.0)}), {}),
    ("bool tensors", lambda L: (L.tensor([True, False]), L.tensor([True, True])), {}),
    ("tensor vs float", lambda L: (L.tensor(1.0), 1.0), {}),
    ("custom msg", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.1])), {"msg": "custom"}),
    ("rtol without atol", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.1])), {"rtol": 0.1}),
    ("tolerances given", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.1])), {"rtol": 0.1, "atol": 0.0}),
    ("within float32 default", lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.000001])), {}),
    ("float64 tighter", lambda L: (L.tensor([1.0], dtype=L.float64), L.tensor([1.000001], dtype=L.float64)), {}),
    ("sequence length", lambda L: ([L.tensor(1.0)], [L.tensor(1.0), L.tensor(2.0)]), {}),
    ("nested", lambda L: ([(L.tensor([1.0]), {"x": L.tensor([2.0, 3.0])})],
                          [(L.tensor([1.0]), {"x": L.tensor([2.0, 3.5])})]), {}),
]

MAKE_TENSOR = [
    ("float32 default", lambda L: L.testing.make_tensor(3, 4, dtype=L.float32, device="cpu")),
    ("float64 low high", lambda L: L.testing.make_tensor((5,), dtype=L.float64, device="cpu", low=-1, high=2)),
    ("int64", lambda L: L.testing.make_tensor((2, 3), dtype=L.int64, device="cpu", low=0, high=5)),
    ("int8 default", lambda L: L.testing.make_tensor(6, dtype=L.int8, device="cpu")),
    ("bool", lambda L: L.testing.make_tensor(7, dtype=L.bool, device="cpu")),
    ("noncontiguous", lambda L: L.testing.make_tensor(2, 3, dtype=L.float32, device="cpu", noncontiguous=True)),
    ("exclude_zero int", lambda L: L.testing.make_tensor(20, dtype=L.int32, device="cpu", low=-1, high=2,
                                                         exclude_zero=True)),
    ("complex64", lambda L: L.testing.make_tensor(3, dtype=L.complex64, device="cpu")),
]


def run_assert_close(L, make, kwargs):
    """'ok', or the exception's type name and message."""
    actual, expected = make(L)
    try:
        L.testing.assert_close(actual, expected, **kwargs)
        return "ok"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


def run_make_tensor(L, make):
    L.manual_seed(0)
    t = make(L)
    info = {"shape": list(t.shape), "stride": list(t.stride()), "dtype": str(t.dtype).replace("torch.", "")}
    if t.is_complex():
        info["values"] = [[v.real, v.imag] for v in t.reshape(-1).tolist()]
    else:
        info["values"] = t.reshape(-1).tolist()
    return info
