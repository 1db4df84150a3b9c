"""Top-level torch functions (creation, norms, view copies, layer entry
points, settings) run the same way under torch (fixtures/gen_compositions.py)
and ferrotorch (test_compositions.py)."""

import warnings

import numpy as np

X = np.arange(12.0).reshape(3, 4) / 7


def _v(t):
    if isinstance(t, (list, tuple)):
        return [_v(x) for x in t]
    return [round(float(v), 8) for v in t.detach().double().reshape(-1).tolist()]


def run(L):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = L.tensor(X)
        out = {
            "range": _v(L.range(1, 2.5, 0.5)), "vander": _v(L.vander(L.tensor([1.0, 2.0, 3.0]), N=4)),
            "vander_inc": _v(L.vander(L.tensor([2, 3]), increasing=True)),
            "frob": _v(L.frobenius_norm(x, (0, 1))), "nuc": _v(L.nuclear_norm(x)),
            "nexcept": _v(L.norm_except_dim(x, 2, 1)), "select_copy": _v(L.select_copy(x, 1, 2)),
            "slice_copy": _v(L.slice_copy(x, 1, 1, 4, 2)), "split_copy": _v(L.split_copy(x, 2, 0)),
            "unsafe_split": _v(L.unsafe_split_with_sizes(x, [1, 3], 1)),
            "conv_tbc": _v(L.conv_tbc(L.tensor(X[:, :2]).reshape(3, 1, 2).repeat(1, 2, 1),
                                      L.tensor(np.arange(12.0).reshape(2, 2, 3) / 5), L.tensor([0.1, 0.2, 0.3]), 1)),
            "convolution": _v(L.convolution(x.reshape(1, 1, 3, 4), L.ones(2, 1, 2, 2, dtype=L.float64), None, [1, 1],
                                            [0, 1], [1, 1], False, [0, 0], 1)),
            "convolution_t": _v(L.convolution(x.reshape(1, 1, 3, 4), L.ones(1, 2, 2, 2, dtype=L.float64), None, [2, 1],
                                              [0, 0], [1, 1], True, [1, 0], 1)),
            "ctc": _v(L.ctc_loss(L.tensor(np.log(np.full((5, 2, 4), 0.25))), L.tensor([[1, 2], [3, 1]]), [5, 5], [2, 2],
                                 0, 0, False)),
            "embag": _v(list(L.embedding_bag(L.tensor(X), L.tensor([0, 2, 1, 1]), L.tensor([0, 3]), False, 1))[:3]),
            "typename": [L.typename(x), L.typename(L.ones(1, dtype=L.int64)), L.typename(3)],
            "strided": repr(L.strided), "layout": repr(x.layout),
            "det": [L.are_deterministic_algorithms_enabled(), L.get_deterministic_debug_mode(),
                    L.get_float32_matmul_precision()],
        }
        L.use_deterministic_algorithms(True, warn_only=True)
        out["det2"] = [L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                       L.get_deterministic_debug_mode()]
        L.use_deterministic_algorithms(False)
        buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
        fb = L.frombuffer(buf, dtype=L.float32, count=2, offset=4)
        fb[0] = 9.0
        out["frombuffer"] = [_v(fb), list(np.frombuffer(bytes(buf), dtype=np.float32))]
        out["asarray"] = _v(L.asarray([[1, 2], [3, 4]], dtype=L.float32))
    return out
