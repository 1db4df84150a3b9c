"""What stopped real programs in issue 49, run the same way under torch
(fixtures/gen_user_edges.py) and ferrotorch (test_user_edges.py):
indexing with a Python ``range``, and the channel dropouts on every rank
(torch warns and proceeds where it once raised, and draws the same
masks)."""

import warnings


def range_indexing(L):
    x = L.zeros(4, 3)
    y = L.tensor([2, 0, 1, 2])
    x[range(4), y] = 1.0
    z = L.arange(12.0).reshape(4, 3)
    return {"set": x.tolist(), "get_rows": z[range(1, 3)].tolist(), "pairs": z[range(4), y].tolist(),
            "empty": list(z[range(0)].shape), "step": z[range(3, 0, -2), 1].tolist()}


def _drop(L, fn, shape, **kw):
    L.manual_seed(0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn(L.ones(*shape), 0.5, **kw)
    return {"y": out.reshape(-1).tolist(), "shape": list(out.shape),
            "warned": [str(m.message).split(":")[0] + ":" + str(m.message).split(":")[1][:40] for m in w]}


def channel_dropouts(L):
    F = L.nn.functional
    out = {}
    for name, fn, shapes in [("d1", F.dropout1d, [(3, 4), (2, 3, 4)]),
                             ("d2", F.dropout2d, [(3, 4), (2, 3, 4), (2, 3, 2, 2), (1, 2, 3, 2, 2)]),
                             ("d3", F.dropout3d, [(2, 2, 2), (3, 2, 2, 2), (2, 3, 2, 2, 2)])]:
        for s in shapes:
            out[f"{name}_{len(s)}"] = _drop(L, fn, s)
    L.manual_seed(1)
    m = L.nn.Dropout2d(0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["module_2d"] = m(L.ones(4, 5)).tolist()
    x = L.ones(2, 3, 4)
    L.manual_seed(2)
    F.dropout1d(x, 0.5, inplace=True)
    out["inplace_1d"] = x.tolist()
    try:
        F.dropout1d(L.ones(2, 3, 4, 5), 0.5)
        out["d1_4"] = None
    except RuntimeError as e:
        out["d1_4"] = str(e)
    return out


def packed_dropout(L):
    """Stacked recurrent layers with dropout over a PackedSequence draw
    torch's dropout masks (over the packed data between layers)."""
    rnn = L.nn.utils.rnn
    out = {}
    for mode in ("LSTM", "GRU"):
        L.manual_seed(0)
        net = getattr(L.nn, mode)(4, 5, num_layers=3, dropout=0.4, bidirectional=mode == "GRU", batch_first=True)
        x = L.randn(3, 6, 4, requires_grad=True)
        p = rnn.pack_padded_sequence(x, L.tensor([6, 2, 4]), batch_first=True, enforce_sorted=False)
        L.manual_seed(5)
        y, h = net(p)
        padded, _ = rnn.pad_packed_sequence(y, batch_first=True)
        (padded.sum() + (h[0] if mode == "LSTM" else h).sum()).backward()
        out[mode] = {"y": [round(v, 5) for v in padded.reshape(-1).tolist()],
                     "h": [round(v, 5) for v in (h[0] if mode == "LSTM" else h).reshape(-1).tolist()],
                     "gx": [round(v, 5) for v in x.grad.reshape(-1).tolist()]}
    return out


def conv_weight_grads(L):
    """conv2d's weight gradient (one GEMM over the batch's im2col, Note
    [Convolution weight gradient]) over strides, padding and dilation."""
    out = []
    for (n, c, h, w, o, k, s, p, d) in [(3, 2, 9, 8, 4, 3, 1, 0, 1), (2, 3, 11, 10, 5, 3, 2, 1, 1),
                                        (2, 1, 12, 12, 3, 2, 1, 2, 2), (2, 4, 13, 9, 3, (3, 2), (2, 1), 1, 1)]:
        L.manual_seed(len(out))
        x = L.randn(n, c, h, w)
        wt = L.randn(o, c, *(k if isinstance(k, tuple) else (k, k)), requires_grad=True)
        y = L.nn.functional.conv2d(x, wt, stride=s, padding=p, dilation=d)
        y.backward(L.randn(*y.shape))
        out.append([round(v, 4) for v in wt.grad.reshape(-1).tolist()])
    return out


def pool_nan_indices(L):
    """Max pooling's indices where windows hold NaN: torch's kernels take
    the window's last NaN (argmax would take the first)."""
    F = L.nn.functional
    L.manual_seed(0)
    x = L.randn(2, 3, 6, 8)
    x[L.rand(2, 3, 6, 8) < 0.3] = float("nan")
    v = L.randn(1, 2, 4, 4, 4)
    v[v > 0.5] = float("nan")
    return {"mp2": F.max_pool2d(x, 2, return_indices=True)[1].reshape(-1).tolist(),
            "mp3s2": F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)[1].reshape(-1).tolist(),
            "ad2": F.adaptive_max_pool2d(x, (3, 3), return_indices=True)[1].reshape(-1).tolist(),
            "ad1": F.adaptive_max_pool1d(x[0], 3, return_indices=True)[1].reshape(-1).tolist(),
            "mp1": F.max_pool1d(x[0], 3, return_indices=True)[1].reshape(-1).tolist(),
            "mp3d": F.max_pool3d(v, 2, return_indices=True)[1].reshape(-1).tolist(),
            "ad3d": F.adaptive_max_pool3d(v, 2, return_indices=True)[1].reshape(-1).tolist()}


CASES = {f.__name__: f for f in [range_indexing, channel_dropouts, packed_dropout, conv_weight_grads,
                                 pool_nan_indices]}


def run(L, name):
    return CASES[name](L)
