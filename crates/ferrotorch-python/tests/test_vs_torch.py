"""Side-by-side checks against PyTorch itself (skipped without torch):
the same inputs through both libraries give the same values and reprs."""

import warnings

import numpy as np
import pytest

import ferrotorch as ft
from conftest import HAVE_TORCH

pytestmark = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")

if HAVE_TORCH:
    import torch


def both(a):
    return ft.tensor(a), torch.tensor(a)


def same(f, t, tol=1e-5):
    np.testing.assert_allclose(np.asarray(f.detach()), t.detach().numpy(), rtol=tol, atol=tol)


def test_losses_match_torch():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 4)).astype(np.float32)
    y = np.array([0, 3, 1, 1, 2, 3])
    w = np.array([1.0, 2.0, 0.5, 1.5], dtype=np.float32)
    fx, tx = both(x)
    fy, ty = both(y)
    fw, tw = both(w)
    for kw in [{}, {"label_smoothing": 0.1}, {"ignore_index": 1}, {"reduction": "sum"}]:
        same(ft.nn.functional.cross_entropy(fx, fy, **kw), torch.nn.functional.cross_entropy(tx, ty, **kw))
        same(ft.nn.functional.cross_entropy(fx, fy, weight=fw, **kw),
             torch.nn.functional.cross_entropy(tx, ty, weight=tw, **kw))
    p = 1 / (1 + np.exp(-x))
    fp, tp = both(p)
    fq, tq = both((x > 0).astype(np.float32))
    same(ft.nn.functional.binary_cross_entropy(fp, fq), torch.nn.functional.binary_cross_entropy(tp, tq))
    same(ft.nn.functional.binary_cross_entropy_with_logits(fx, fq),
         torch.nn.functional.binary_cross_entropy_with_logits(tx, tq))
    same(ft.nn.functional.smooth_l1_loss(fx, fp), torch.nn.functional.smooth_l1_loss(tx, tp))


def test_activations_and_layers_match_torch():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 3, 6, 6)).astype(np.float32)
    fx, tx = both(x)
    for name in ["relu", "selu", "elu", "silu", "gelu", "softplus", "leaky_relu", "mish", "relu6"]:
        same(getattr(ft.nn.functional, name)(fx), getattr(torch.nn.functional, name)(tx))
    same(ft.nn.functional.log_softmax(fx, 1), torch.nn.functional.log_softmax(tx, 1))
    same(ft.nn.functional.avg_pool2d(fx, 2), torch.nn.functional.avg_pool2d(tx, 2))
    same(ft.nn.functional.layer_norm(fx, [6, 6]), torch.nn.functional.layer_norm(tx, [6, 6]))
    conv_f = ft.nn.Conv2d(3, 5, 3, stride=2, padding=1)
    conv_t = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1)
    conv_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in conv_f.state_dict().items()})
    same(conv_f(fx), conv_t(tx), 1e-4)
    assert repr(conv_f) == repr(conv_t)
    bn_f, bn_t = ft.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    same(bn_f(fx), bn_t(tx), 1e-4)
    same(bn_f.running_var, bn_t.running_var)
    assert repr(bn_f) == repr(bn_t)


def test_reprs_match_torch():
    cases = [[1.0, 2.5], [[1, 2], [3, 4]], [1e-8, 1.0], [True, False], [1e10, 1.0]]
    for c in cases:
        assert repr(ft.tensor(c)) == repr(torch.tensor(c))
    assert repr(ft.tensor([1.0], dtype=ft.float64)) == repr(torch.tensor([1.0], dtype=torch.float64))
    assert repr(ft.zeros(2, 3).shape) == repr(torch.zeros(2, 3).shape)
    for m_f, m_t in [(ft.nn.Linear(2, 3), torch.nn.Linear(2, 3)),
                     (ft.nn.Sequential(ft.nn.Linear(1, 2), ft.nn.SELU()),
                      torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.SELU())),
                     (ft.nn.LayerNorm(4), torch.nn.LayerNorm(4)),
                     (ft.nn.Dropout(0.2), torch.nn.Dropout(0.2)),
                     (ft.nn.Embedding(5, 3, padding_idx=0), torch.nn.Embedding(5, 3, padding_idx=0))]:
        assert repr(m_f) == repr(m_t)


def test_adam_trajectory_matches_torch():
    w0 = np.random.default_rng(7).normal(size=(3, 2))
    pf = ft.nn.Parameter(ft.tensor(w0))
    pt = torch.nn.Parameter(torch.tensor(w0))
    of = ft.optim.AdamW([pf], lr=0.05, weight_decay=0.1, amsgrad=True)
    ot = torch.optim.AdamW([pt], lr=0.05, weight_decay=0.1, amsgrad=True)
    for _ in range(5):
        for p, o, lib in [(pf, of, ft), (pt, ot, torch)]:
            o.zero_grad()
            ((p * p).sum() + p.sin().sum()).backward()
            o.step()
    np.testing.assert_allclose(pf.detach().numpy(), pt.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,kw", [
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.05, "maximize": True}),
])
def test_optimizer_trajectories_match_torch(name, kw):
    w0 = np.random.default_rng(8).normal(size=(4,))
    pf = ft.nn.Parameter(ft.tensor(w0))
    pt = torch.nn.Parameter(torch.tensor(w0))
    of = getattr(ft.optim, name)([pf], **kw)
    ot = getattr(torch.optim, name)([pt], **kw)
    for _ in range(6):
        for p, o in [(pf, of), (pt, ot)]:
            o.zero_grad()
            (p.exp().sum() + (p * p).sum()).backward()
            o.step()
    np.testing.assert_allclose(pf.detach().numpy(), pt.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_schedulers_match_torch():
    def lrs(lib, make, opt_name, steps=12, metric=None):
        p = lib.nn.Parameter(lib.ones(1))
        opt = getattr(lib.optim, opt_name)([p], lr=0.1, **({"momentum": 0.9} if opt_name == "SGD" else {}))
        sched = make(lib, opt)
        out = []
        for i in range(steps):
            opt.step()
            if metric is None:
                sched.step()
            else:
                sched.step(metric[i])
            out.append(round(opt.param_groups[0]["lr"], 12))
            if opt_name == "SGD":
                out.append(round(opt.param_groups[0]["momentum"], 12))
        return out

    makers = [
        (lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=13), "SGD"),
        (lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=13,
                                                          anneal_strategy="linear", three_phase=True), "SGD"),
        (lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.01), "SGD"),
        (lambda lib, o: lib.optim.lr_scheduler.MultiStepLR(o, [2, 5], gamma=0.5), "SGD"),
        (lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4), "SGD"),
    ]
    for make, opt_name in makers:
        assert lrs(ft, make, opt_name) == lrs(torch, make, opt_name)
    plateau = lambda lib, o: lib.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, cooldown=1)  # noqa: E731
    metric = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.9, 0.9, 0.9, 0.9, 0.9]
    assert lrs(ft, plateau, "SGD", metric=metric) == lrs(torch, plateau, "SGD", metric=metric)


@pytest.mark.parametrize("name,kw", [
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"num_layers": 2}),
    ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
    ("LSTM", {"bias": False}),
])
def test_recurrent_layers_match_torch(name, kw):
    mf = getattr(ft.nn, name)(3, 4, **kw)
    mt = getattr(torch.nn, name)(3, 4, **kw)
    assert list(mf.state_dict()) == list(mt.state_dict())
    assert repr(mf) == repr(mt)
    mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mf.state_dict().items()})
    x = np.random.default_rng(9).normal(size=(2, 5, 3)).astype(np.float32)
    fx, tx = both(x)
    yf, hf = mf(fx)
    yt, ht = mt(tx)
    same(yf, yt, 1e-5)
    for a, b in zip(hf if isinstance(hf, tuple) else (hf,), ht if isinstance(ht, tuple) else (ht,)):
        same(a, b, 1e-5)
    yf.sum().backward()
    yt.sum().backward()
    for (n, pf), (_, pt) in zip(mf.named_parameters(), mt.named_parameters()):
        same(pf.grad, pt.grad, 1e-4)
    # unbatched input
    same(mf(fx[0])[0], mt(tx[0])[0], 1e-5)


def test_attention_and_transformer_match_torch():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 5, 8)).astype(np.float32)
    fx, tx = both(x)
    mf = ft.nn.MultiheadAttention(8, 2, batch_first=True)
    mt = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    assert list(mf.state_dict()) == list(mt.state_dict())
    mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mf.state_dict().items()})
    mask = np.zeros((2, 5), dtype=bool)
    mask[1, 3:] = True
    fm, tm = both(mask)
    of, wf = mf(fx, fx, fx, key_padding_mask=fm)
    ot, wt = mt(tx, tx, tx, key_padding_mask=tm)
    same(of, ot, 1e-5)
    same(wf, wt, 1e-5)
    same(mf(fx, fx, fx, is_causal=False, attn_mask=ft.ones(5, 5, dtype=ft.bool).triu(1))[0],
         mt(tx, tx, tx, attn_mask=torch.ones(5, 5, dtype=torch.bool).triu(1))[0], 1e-5)
    lf = ft.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    lt = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    ef, et = ft.nn.TransformerEncoder(lf, 2), torch.nn.TransformerEncoder(lt, 2, enable_nested_tensor=False)
    assert list(ef.state_dict()) == list(et.state_dict())
    et.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ef.state_dict().items()})
    same(ef(fx), et(tx), 1e-4)
    ef(fx).sum().backward()
    assert all(p.grad is not None for p in ef.parameters())


def test_named_results_match_torch():
    fx, tx = both([[1.0, 4.0, 2.0], [3.0, 2.0, 5.0]])
    for f, t in [(fx.max(1), tx.max(1)), (fx.min(0), tx.min(0)), (fx.sort(1), tx.sort(1)),
                 (fx.topk(2), tx.topk(2))]:
        assert repr(f) == repr(t)


def test_more_layers_match_torch():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(2, 3, 5, 5)).astype(np.float32)
    fx, tx = both(x)
    pairs = [
        (ft.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
         torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (fx,), (tx,)),
        (ft.nn.RMSNorm([5, 5]), torch.nn.RMSNorm([5, 5]), (fx,), (tx,)),
        (ft.nn.AdaptiveMaxPool2d(2), torch.nn.AdaptiveMaxPool2d(2), (fx,), (tx,)),
        (ft.nn.MaxPool1d(2), torch.nn.MaxPool1d(2), (fx[0],), (tx[0],)),
        (ft.nn.Bilinear(5, 5, 2), torch.nn.Bilinear(5, 5, 2), (fx[0, 0], fx[0, 1]), (tx[0, 0], tx[0, 1])),
        (ft.nn.Dropout2d(0.3), torch.nn.Dropout2d(0.3), None, None),
    ]
    for mf, mt, af, at in pairs:
        assert repr(mf) == repr(mt)
        assert list(mf.state_dict()) == list(mt.state_dict())
        if af is None:
            continue
        mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mf.state_dict().items()})
        same(mf(*af), mt(*at), 1e-4)


def test_transformer_decoder_matches_torch():
    rng = np.random.default_rng(13)
    tgt = rng.normal(size=(4, 2, 8)).astype(np.float32)
    mem = rng.normal(size=(6, 2, 8)).astype(np.float32)
    ft_t, tt_t = both(tgt)
    ft_m, tt_m = both(mem)
    lf = ft.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=True)
    lt = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=True)
    df, dt = ft.nn.TransformerDecoder(lf, 2, ft.nn.LayerNorm(8)), torch.nn.TransformerDecoder(lt, 2, torch.nn.LayerNorm(8))
    assert list(df.state_dict()) == list(dt.state_dict())
    dt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in df.state_dict().items()})
    causal_f = ft.ones(4, 4, dtype=ft.bool).triu(1)
    causal_t = torch.ones(4, 4, dtype=torch.bool).triu(1)
    same(df(ft_t, ft_m, tgt_mask=causal_f), dt(tt_t, tt_m, tgt_mask=causal_t), 1e-4)


def test_transformer_model_and_output_size_match_torch():
    rng = np.random.default_rng(17)
    src, tgt = rng.normal(size=(5, 2, 8)).astype(np.float32), rng.normal(size=(4, 2, 8)).astype(np.float32)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
              dropout=0.0)
    mf, mt = ft.nn.Transformer(**kw), torch.nn.Transformer(**kw)
    assert list(mf.state_dict()) == list(mt.state_dict())
    mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mf.state_dict().items()})
    mask_f = ft.nn.Transformer.generate_square_subsequent_mask(4)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4)
    same(mask_f, mask_t, 0)
    (sf, st), (tf, tt) = both(src), both(tgt)
    same(mf(sf, tf, tgt_mask=mask_f), mt(st, tt, tgt_mask=mask_t), 1e-4)
    cf = ft.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    ct = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    ct.load_state_dict({k: torch.tensor(v.numpy()) for k, v in cf.state_dict().items()})
    x = rng.normal(size=(1, 2, 5, 5)).astype(np.float32)
    xf, xt = both(x)
    same(cf(xf, output_size=[10, 10]), ct(xt, output_size=[10, 10]), 1e-5)
    with pytest.raises(ValueError) as ef:
        cf(xf, output_size=[12, 12])
    with pytest.raises(ValueError) as et:
        ct(xt, output_size=[12, 12])
    assert str(ef.value).split(" (for")[0] == str(et.value).split(" (for")[0]


@pytest.mark.parametrize("kw", [dict(kdim=6, vdim=5), dict(add_bias_kv=True),
                                dict(add_zero_attn=True), dict(kdim=6, vdim=5, add_bias_kv=True,
                                                               add_zero_attn=True, bias=False)])
def test_attention_options_match_torch(kw):
    rng = np.random.default_rng(23)
    q = rng.normal(size=(4, 2, 8)).astype(np.float32)
    k = rng.normal(size=(3, 2, kw.get("kdim", 8))).astype(np.float32)
    v = rng.normal(size=(3, 2, kw.get("vdim", 8))).astype(np.float32)
    kpm = np.array([[False, False, True], [False, False, False]])
    mf, mt = ft.nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)
    assert list(mf.state_dict()) == list(mt.state_dict())
    mt.load_state_dict({k_: torch.tensor(v_.numpy()) for k_, v_ in mf.state_dict().items()})
    (qf, qt), (kf, kt), (vf, vt), (pf, pt) = both(q), both(k), both(v), both(kpm)
    of, wf = mf(qf, kf, vf, key_padding_mask=pf)
    ot, wt = mt(qt, kt, vt, key_padding_mask=pt)
    same(of, ot, 1e-5)
    same(wf, wt, 1e-5)


def test_projected_lstm_matches_torch():
    rng = np.random.default_rng(29)
    x = rng.normal(size=(5, 3, 4)).astype(np.float32)
    kw = dict(num_layers=2, bidirectional=True, proj_size=3)
    mf, mt = ft.nn.LSTM(4, 6, **kw), torch.nn.LSTM(4, 6, **kw)
    assert list(mf.state_dict()) == list(mt.state_dict())
    assert repr(mf) == repr(mt)
    mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mf.state_dict().items()})
    (xf, xt) = both(x)
    of, (hf, cf) = mf(xf)
    ot, (ht, ct) = mt(xt)
    same(of, ot, 1e-5)
    same(hf, ht, 1e-5)
    same(cf, ct, 1e-5)


def test_random_streams_and_samplers_match_torch():
    from ferrotorch.utils import data as fd
    from torch.utils import data as td

    for lib in (ft, torch):
        lib.manual_seed(0)
    ds_f, ds_t = list(range(37)), list(range(37))
    assert list(fd.RandomSampler(ds_f)) == list(td.RandomSampler(ds_t))
    assert list(fd.RandomSampler(ds_f, True, 70)) == list(td.RandomSampler(ds_t, True, 70))
    gf, gt = ft.Generator().manual_seed(42), torch.Generator().manual_seed(42)
    assert list(fd.RandomSampler(ds_f, generator=gf)) == list(td.RandomSampler(ds_t, generator=gt))
    assert list(fd.SubsetRandomSampler([3, 5, 7, 9], generator=gf)) == \
        list(td.SubsetRandomSampler([3, 5, 7, 9], generator=gt))
    assert ft.randint(0, 10, (5,), generator=gf).tolist() == torch.randint(0, 10, (5,), generator=gt).tolist()
    same(ft.rand(3, generator=gf), torch.rand(3, generator=gt), 0)
    same(ft.randn(2, 2, generator=gf), torch.randn(2, 2, generator=gt), 1e-6)
    assert [s.indices for s in fd.random_split(ds_f, [0.5, 0.5])] == \
        [s.indices for s in td.random_split(ds_t, [0.5, 0.5])]
    xf = ft.arange(10)
    xt = torch.arange(10)
    bf = [b[0].tolist() for b in fd.DataLoader(fd.TensorDataset(xf), batch_size=4, shuffle=True)]
    bt = [b[0].tolist() for b in td.DataLoader(td.TensorDataset(xt), batch_size=4, shuffle=True)]
    assert bf == bt


@pytest.mark.parametrize("name,kw", [
    ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}),
    ("GRUCell", {}), ("LSTMCell", {}),
])
def test_recurrent_cells_match_torch(name, kw):
    mf, mt = getattr(ft.nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    assert list(mf.state_dict()) == list(mt.state_dict())
    assert repr(mf) == repr(mt)
    mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mf.state_dict().items()})
    x = np.random.default_rng(11).normal(size=(2, 3)).astype(np.float32)
    fx, tx = both(x)
    of, ot = mf(fx), mt(tx)
    for a, b in zip(of if isinstance(of, tuple) else (of,), ot if isinstance(ot, tuple) else (ot,)):
        same(a, b, 1e-5)
    (of[0] if isinstance(of, tuple) else of).sum().backward()
    (ot[0] if isinstance(ot, tuple) else ot).sum().backward()
    for (n, pf), (_, pt) in zip(mf.named_parameters(), mt.named_parameters()):
        same(pf.grad, pt.grad, 1e-5)
    # unbatched, with a given state
    h = np.random.default_rng(12).normal(size=(4,)).astype(np.float32)
    hf, ht = both(h)
    sf, st = ((hf, hf), (ht, ht)) if name == "LSTMCell" else (hf, ht)
    of, ot = mf(fx[0], sf), mt(tx[0], st)
    same(of[0] if isinstance(of, tuple) else of, ot[0] if isinstance(ot, tuple) else ot, 1e-5)


def test_traced_graph_ops_match_torch_jit_trace():
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = lib.nn.Linear(3, 4)
                self.fc2 = lib.nn.Linear(4, 2)

            def forward(self, x):
                a, b = self.fc1(x).split(2, dim=1)
                y = lib.cat([lib.tanh(a), b.relu()], 1).t().contiguous().t()
                return lib.nn.functional.log_softmax(self.fc2(y) * 2 + x.sum(), dim=-1)
        return Net()

    def kinds(graph):
        return [n.split(" = ")[1].split("(")[0].split("[")[0] for n in str(graph).splitlines()
                if " = aten::" in n]

    mf = ft.jit.trace(build(ft), ft.randn(2, 3))
    mt = torch.jit.trace(build(torch), torch.randn(2, 3))
    assert kinds(mf.inlined_graph) == kinds(mt.inlined_graph)
    # the module graph keeps submodule calls, as torch's does

    def calls(graph):
        return [n.split(" = ")[1].split("(")[0].split("[")[0] for n in str(graph).splitlines()
                if " = aten::" in n or "prim::CallMethod" in n]
    assert calls(mf.graph) == calls(mt.graph)


def test_traced_sizes_match_torch_jit_trace():
    """``x.shape`` / ``x.size(0)`` trace as torch's aten::size,
    prim::NumToTensor and aten::Int nodes (torch places each aten::Int
    right after its NumToTensor, we at the use: the same nodes)."""
    import collections

    def build(lib):
        class Head(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(12, 2)

            def forward(self, x):
                b, c, h = x.shape
                y = self.fc(x.reshape(b, c * h))
                return y.view(x.size(0), 2, 1) * h
        return Head()

    def kinds(graph):
        return collections.Counter(
            n.split(" = ")[1].split("(")[0].split("[")[0] for n in str(graph).splitlines()
            if " = aten::" in n or " = prim::NumToTensor" in n or " = prim::ListConstruct" in n)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mf = ft.jit.trace(build(ft), ft.randn(2, 3, 4))
        mt = torch.jit.trace(build(torch), torch.randn(2, 3, 4))
    assert kinds(mf.inlined_graph) == kinds(mt.inlined_graph)
    assert tuple(mf(ft.randn(6, 3, 4)).shape) == tuple(mt(torch.randn(6, 3, 4)).shape) == (6, 2, 1)
