"""nn.Module subclasses, layers, functional, init, optim and utils.data
from Python, checked against NumPy."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch import nn
from ferrotorch.nn import functional as F
from ferrotorch.utils.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler,
                                   TensorDataset)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.blocks = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        self.scale = nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("scratch", torch.zeros(1), persistent=False)
        self.register_parameter("unused", None)
        self.name = "net"

    def forward(self, x):
        return self.blocks(self.fc(x)) * self.scale


def test_attributes_register_in_order():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == [
        "scale", "fc.weight", "fc.bias", "blocks.0.weight", "blocks.0.bias"]
    assert list(m.state_dict()) == ["scale", "steps", "fc.weight", "fc.bias",
                                    "blocks.0.weight", "blocks.0.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "blocks", "blocks.0", "blocks.1"]
    assert [n for n, _ in m.named_children()] == ["fc", "blocks"]
    assert m.name == "net" and isinstance(m.scale, nn.Parameter) and m.unused is None
    m.eval()
    assert not m.blocks[1].training
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(TypeError):
        m.scale = torch.ones(1)
    assert repr(m.fc) == "Linear(in_features=3, out_features=2, bias=True)"
    assert repr(m.blocks) == "Sequential(\n  (0): Linear(in_features=2, out_features=2, bias=True)\n  (1): ReLU()\n)"


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    x = torch.randn(4, 3)
    assert a(x).tolist() == b(x).tolist()
    sd = a.state_dict()
    sd.pop("scale")
    sd["extra"] = torch.ones(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "scale"'):
        b.load_state_dict(sd)
    r = b.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["scale"] and r.unexpected_keys == ["extra"]


def test_call_runs_hooks_and_zero_grad():
    m = Net()
    seen = []
    h = m.register_forward_hook(lambda mod, args, out: seen.append(tuple(out.shape)))
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    out = m(torch.ones(5, 3))
    assert seen == [(5, 2)]
    h.remove()
    out.sum().backward()
    assert m.fc.weight.grad is not None
    m.zero_grad()
    assert m.fc.weight.grad is None


def test_linear_and_functional_match_numpy():
    lin = nn.Linear(3, 2)
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(torch.tensor(x)).detach().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    bound = 1 / math.sqrt(3)
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound)
    t = torch.tensor(x)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(F.selu(t).numpy(), scale * np.where(x > 0, x, alpha * (np.exp(x) - 1)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.relu(t).numpy(), np.maximum(x, 0))
    y = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    np.testing.assert_allclose(F.mse_loss(t, torch.tensor(y)).item(), ((x - y) ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(nn.L1Loss(reduction="sum")(t, torch.tensor(y)).item(),
                               np.abs(x - y).sum(), rtol=1e-5)
    target = np.array([0, 2, 1, 2])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    ce = -logp[np.arange(4), target].mean()
    np.testing.assert_allclose(F.cross_entropy(t, torch.tensor(target)).item(), ce, rtol=1e-5)
    np.testing.assert_allclose(nn.CrossEntropyLoss(ignore_index=2)(t, torch.tensor(target)).item(),
                               -(logp[0, 0] + logp[2, 1]) / 2, rtol=1e-5)


def test_init_functions():
    w = torch.empty(200, 300)
    nn.init.xavier_uniform_(w)
    a = math.sqrt(6 / 500)
    assert w.abs().max().item() <= a and w.abs().max().item() > 0.9 * a
    nn.init.constant_(w, 0.5)
    assert w.min().item() == w.max().item() == 0.5
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w.std().item() - math.sqrt(2 / 300)) < 0.005
    assert nn.init.calculate_gain("tanh") == 5.0 / 3


def _numpy_adam(p, grads, lr, b1, b2, eps):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return p


def test_optimizers_match_numpy():
    p0 = np.array([0.5, -1.0, 2.0])
    p = nn.Parameter(torch.tensor(p0, dtype=torch.float64))
    opt = torch.optim.Adam([p], lr=0.1)
    grads = []
    for _ in range(3):
        opt.zero_grad()
        loss = (p ** 2).sum()
        grads.append(2 * p.detach().numpy().copy())
        loss.backward()
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), _numpy_adam(p0, grads, 0.1, 0.9, 0.999, 1e-8), rtol=1e-10)

    q = nn.Parameter(torch.tensor(p0, dtype=torch.float64))
    sgd = torch.optim.SGD([q], lr=0.1, momentum=0.9)
    buf, want = None, p0.copy()
    for _ in range(3):
        sgd.zero_grad()
        (q ** 2).sum().backward()
        g = 2 * want
        buf = g if buf is None else 0.9 * buf + g
        want = want - 0.1 * buf
        sgd.step()
    np.testing.assert_allclose(q.detach().numpy(), want, rtol=1e-12)
    sd = sgd.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and "momentum_buffer" in sd["state"][0]
    with pytest.raises(ValueError):
        torch.optim.SGD([q], lr=-1)


def test_lr_schedulers():
    p = nn.Parameter(torch.ones(1))
    opt = torch.optim.SGD([p], lr=1.0)
    s = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        s.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]


def test_data_loading():
    x = torch.arange(10, dtype=torch.float32).reshape(10, 1)
    y = torch.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    torch.manual_seed(0)
    seen = sorted(i for _, b in DataLoader(ds, batch_size=3, shuffle=True) for i in b.tolist())
    assert seen == list(range(10))
    boot = list(RandomSampler(ds, True, 25))
    assert len(boot) == 25 and all(0 <= i < 10 for i in boot)
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)


def test_sequential_with_ordered_dict_and_module_list():
    s = nn.Sequential(OrderedDict([("a", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in s.named_children()] == ["a", "act"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert len(list(ml.parameters())) == 6 and isinstance(ml[-1], nn.Linear)


def test_conv_pool_and_batchnorm_modules_match_numpy():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 5, 5)).astype(np.float32)
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=True)
    w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 4, 5, 5), dtype=np.float32)
    for i in range(5):
        for j in range(5):
            want[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + 3, j:j + 3], w) + b
    np.testing.assert_allclose(conv(torch.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)
    assert repr(conv) == "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    pooled = nn.MaxPool2d(2)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(pooled, x[:, :, :4, :4].reshape(2, 3, 2, 2, 2, 2).max((3, 5)))
    bn = nn.BatchNorm2d(3)
    y = bn(torch.tensor(x)).detach().numpy()
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    np.testing.assert_allclose(y, (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-4)
    n = x.size / 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    bn.eval()
    y_eval = bn(torch.tensor(x)).detach().numpy()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    np.testing.assert_allclose(y_eval, (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-4)


def test_lstm_step_matches_numpy():
    lstm = nn.LSTM(2, 3)
    x = np.random.default_rng(4).normal(size=(1, 1, 2)).astype(np.float32)
    p = {k: v.numpy() for k, v in lstm.state_dict().items()}
    gates = x[0] @ p["weight_ih_l0"].T + p["bias_ih_l0"] + p["bias_hh_l0"]
    i, f, g, o = np.split(gates, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c = sig(i) * np.tanh(g)
    h = sig(o) * np.tanh(c)
    out, (hn, cn) = lstm(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy()[0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cn.detach().numpy()[0], c, rtol=1e-5, atol=1e-6)
    bound = 1 / math.sqrt(3)
    assert all(np.all(np.abs(v) <= bound) for v in p.values())
    assert list(p) == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]


def test_gru_cell_matches_numpy_and_gradcheck():
    cell = nn.GRUCell(3, 4)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    h = rng.normal(size=(2, 4)).astype(np.float32)
    p = {k: v.numpy() for k, v in cell.state_dict().items()}
    gi = x @ p["weight_ih"].T + p["bias_ih"]
    gh = h @ p["weight_hh"].T + p["bias_hh"]
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    r = sig(gi[:, :4] + gh[:, :4])
    z = sig(gi[:, 4:8] + gh[:, 4:8])
    n = np.tanh(gi[:, 8:] + r * gh[:, 8:])
    want = (1 - z) * n + z * h
    got = cell(torch.tensor(x), torch.tensor(h))
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert got.grad_fn.name() == "ThnnFusedGruCellBackward0"
    # float64 takes the composed path; the float32 fused gradients agree with it
    args = [torch.tensor(v.astype(np.float64), requires_grad=True)
            for v in (x, h, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])]
    assert torch.autograd.gradcheck(lambda *a: torch.gru_cell(*a), args)
    got.sum().backward()
    torch.gru_cell(*args).sum().backward()
    np.testing.assert_allclose(cell.weight_hh.grad.numpy(), args[3].grad.numpy(), rtol=1e-5, atol=1e-6)
    # one sequence step of nn.GRU with the same weights is the cell
    gru = nn.GRU(3, 4)
    gru.load_state_dict({k + "_l0": v for k, v in cell.state_dict().items()})
    out, hn = gru(torch.tensor(x)[None], torch.tensor(h)[None])
    np.testing.assert_allclose(hn.detach().numpy()[0], want, rtol=1e-5, atol=1e-6)


def test_multihead_attention_matches_numpy():
    mha = nn.MultiheadAttention(4, 2)
    x = np.random.default_rng(11).normal(size=(3, 1, 4)).astype(np.float32)  # (L, N, E)
    p = {k: v.numpy() for k, v in mha.state_dict().items()}
    qkv = x[:, 0] @ p["in_proj_weight"].T + p["in_proj_bias"]
    q, k, v = np.split(qkv, 3, axis=1)
    heads = []
    for h in range(2):
        s = slice(2 * h, 2 * h + 2)
        sc = q[:, s] @ k[:, s].T / math.sqrt(2)
        a = np.exp(sc - sc.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        heads.append(a @ v[:, s])
    want = np.concatenate(heads, 1) @ p["out_proj.weight"].T + p["out_proj.bias"]
    out, w = mha(torch.tensor(x), torch.tensor(x), torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy()[:, 0], want, rtol=1e-5, atol=1e-6)
    assert w.shape == (1, 3, 3)
    assert list(p) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]


def test_dropout_variants():
    torch.manual_seed(0)
    x = torch.ones(64, 8, 4, 4)
    y = nn.Dropout2d(0.5)(x)
    per_channel = y.reshape(64, 8, 16)
    # whole channels are either zero or scaled by 1/(1-p)
    assert all(set(row.tolist()) <= {0.0, 2.0} and len(set(row.tolist())) == 1
               for plane in per_channel for row in plane)
    kept = (per_channel[:, :, 0] != 0).to(torch.float32).mean().item()
    assert 0.4 < kept < 0.6
    assert nn.Dropout2d(0.5).eval()(x) is x
    a = torch.randn(200000)
    s = F.selu(a)
    d = nn.AlphaDropout(0.2)(s)
    # alpha dropout keeps SELU's zero mean and unit variance
    assert abs(d.mean().item()) < 0.02 and abs(d.std().item() - s.std().item()) < 0.02
    # a 2-D input warns and proceeds, as torch's (issue 49)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(torch.ones(2, 2), 0.5)
    r = nn.RMSNorm(4)(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
    np.testing.assert_allclose(r.detach().numpy(), np.array([[1, 2, 3, 4]]) / math.sqrt(7.5 + 1.1920928955078125e-07), rtol=1e-6)


def test_transformer_decoder_is_causal_under_a_causal_mask():
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    dec = nn.TransformerDecoder(layer, 2)
    assert [n for n, _ in dec.named_children()] == ["layers"]
    assert len(list(dec.parameters())) == 2 * len(list(layer.parameters()))
    tgt = torch.randn(5, 1, 8)
    mem = torch.randn(3, 1, 8)
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    out = dec(tgt, mem, tgt_mask=mask)
    changed = tgt.clone()
    changed[3:] = 10.0
    out2 = dec(changed, mem, tgt_mask=mask)
    # positions before the change see only earlier targets: unchanged
    np.testing.assert_allclose(out[:3].detach().numpy(), out2[:3].detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(out[3:].detach().numpy(), out2[3:].detach().numpy())


def test_data_loader_workers_keep_order_and_call_init():
    from ferrotorch.utils.data import Dataset, get_worker_info

    class Squares(Dataset):
        def __len__(self):
            return 23

        def __getitem__(self, i):
            info = get_worker_info()
            assert info is not None and 0 <= info.id < 3
            return torch.tensor([i * i])

    # worker processes (forked: the local class needs no pickling); the
    # init function runs in each worker (test_multiprocessing checks it)
    loader = DataLoader(Squares(), batch_size=4, num_workers=3, worker_init_fn=lambda wid: None)
    got = [b.reshape(-1).tolist() for b in loader]
    assert got == [[i * i for i in range(s, min(s + 4, 23))] for s in range(0, 23, 4)]
    assert get_worker_info() is None
    with pytest.raises(ValueError):
        DataLoader(Squares(), prefetch_factor=2)


def test_generators_reproduce_torchs_sampler_streams():
    # expected values printed by torch 2.15 for the same seeds
    g = torch.Generator().manual_seed(42)
    assert list(RandomSampler(range(10), generator=g)) == [2, 6, 1, 8, 4, 5, 0, 9, 3, 7]
    assert list(RandomSampler(range(10), True, 12, generator=g)) == [7, 6, 9, 6, 3, 1, 9, 3, 1, 9, 7, 9]
    torch.manual_seed(7)
    assert list(RandomSampler(range(6))) == [1, 0, 3, 2, 4, 5]
    g3 = torch.Generator().manual_seed(3)
    assert torch.randint(0, 100, (4,), generator=g3).tolist() == [86, 48, 37, 67]
    assert g3.initial_seed() == 3


def test_every_random_op_takes_a_generator():
    # expected values printed by torch 2.15 for the same seed and calls
    g = torch.Generator().manual_seed(3)
    assert torch.bernoulli(torch.full((8,), 0.5), generator=g).tolist() == [1, 1, 1, 1, 1, 1, 0, 0]
    assert torch.multinomial(torch.tensor([0.1, 0.2, 0.3, 0.4]), 6, True,
                             generator=g).tolist() == [3, 3, 1, 2, 2, 3]
    n = torch.empty(3, dtype=torch.float64).normal_(generator=g).tolist()
    assert n == pytest.approx([0.5220499382748476, 1.2379166964530786, -0.864635562911604], abs=1e-12)
    u = torch.empty(3, dtype=torch.float64).uniform_(2, 4, generator=g).tolist()
    assert u == pytest.approx([3.9400849272116862, 2.1740750439657717, 2.2297942789329284], abs=1e-12)
    # bernoulli(p=float) draws through MKL in torch: only check it is g's stream
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a = torch.bernoulli(torch.zeros(50), 0.5, generator=g1)
    assert torch.equal(a, torch.bernoulli(torch.zeros(50), 0.5, generator=g2))
    assert 0 < a.sum().item() < 50
    # the default generator is untouched by draws from g
    torch.manual_seed(0)
    a = torch.rand(3)
    torch.manual_seed(0)
    torch.randn(2, generator=torch.Generator())
    assert torch.equal(torch.rand(3), a)
    with pytest.raises(TypeError, match="Generator"):
        torch.randperm(3, generator=5)


def test_transformer_model_is_its_encoder_then_decoder():
    torch.manual_seed(0)
    m = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=16, dropout=0.0)
    sd = m.state_dict()
    # torch 2.15 names 34 entries, from encoder.layers.0.self_attn.in_proj_weight
    # to decoder.norm.bias
    assert len(sd) == 34
    assert list(sd)[0] == "encoder.layers.0.self_attn.in_proj_weight"
    assert list(sd)[-1] == "decoder.norm.bias"
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    inf = float("inf")
    assert mask.tolist() == [[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]]
    src, tgt = torch.randn(5, 2, 8), torch.randn(3, 2, 8)
    out = m(src, tgt, tgt_mask=mask)
    assert out.shape == (3, 2, 8)
    assert torch.equal(out, m.decoder(tgt, m.encoder(src), tgt_mask=mask))
    with pytest.raises(RuntimeError, match="batch number"):
        m(src, torch.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="d_model"):
        m(torch.randn(5, 2, 6), torch.randn(3, 2, 6))


def test_conv_transpose_output_size_picks_the_output_padding():
    torch.manual_seed(0)
    c = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = torch.randn(1, 2, 5, 5)
    # (5 - 1) * 2 - 2 * 1 + 1 * (3 - 1) + 1 = 9: sizes 9 and 10 are reachable
    assert c(x).shape == (1, 3, 9, 9)
    y = c(x, output_size=(1, 3, 10, 10))
    assert y.shape == (1, 3, 10, 10)
    ref = F.conv_transpose2d(x, c.weight, c.bias, stride=2, padding=1, output_padding=1)
    assert torch.equal(y, ref)
    with pytest.raises(ValueError, match=r"valid sizes range from \[9, 9\] to \[10, 10\]"):
        c(x, output_size=[12, 12])


def test_attention_with_separate_key_value_sizes_and_extra_keys():
    torch.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True)
    names = [n for n, _ in m.named_parameters()]
    # torch 2.15's order for these options
    assert names == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                     "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"]
    assert m.in_proj_weight is None and tuple(m.k_proj_weight.shape) == (8, 6)
    q, k, v = torch.randn(4, 2, 8), torch.randn(3, 2, 6), torch.randn(3, 2, 5)
    out, w = m(q, k, v)
    assert out.shape == (4, 2, 8)
    # 3 keys + the learned one + the zero one
    assert w.shape == (2, 4, 5)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4), atol=1e-6)
    # masking every real key leaves the learned key and the zero key
    out, w = m(q, k, v, key_padding_mask=torch.ones(2, 3, dtype=torch.bool))
    assert w[..., :3].abs().max().item() == 0
    assert torch.allclose(w[..., 3:].sum(-1), torch.ones(2, 4), atol=1e-6)


def test_lstm_projection_matches_a_numpy_step():
    torch.manual_seed(0)
    m = nn.LSTM(3, 5, proj_size=2)
    assert [n for n, _ in m.named_parameters()] == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert tuple(m.weight_hh_l0.shape) == (20, 2) and tuple(m.weight_hr_l0.shape) == (2, 5)
    assert repr(m) == "LSTM(3, 5, proj_size=2)"
    x = torch.randn(1, 4, 3)
    out, (h, c) = m(x)
    assert out.shape == (1, 4, 2) and h.shape == (1, 4, 2) and c.shape == (1, 4, 5)
    p = {n: t.detach().numpy().astype(np.float64) for n, t in m.named_parameters()}
    xs = x.numpy()[0].astype(np.float64)
    gates = xs @ p["weight_ih_l0"].T + p["bias_ih_l0"] + p["bias_hh_l0"]  # h0 = 0
    i, f, g, o = np.split(gates, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))
    c_ref = sig(i) * np.tanh(g)
    h_ref = (sig(o) * np.tanh(c_ref)) @ p["weight_hr_l0"].T
    np.testing.assert_allclose(c.detach().numpy()[0], c_ref, atol=1e-6)
    np.testing.assert_allclose(h.detach().numpy()[0], h_ref, atol=1e-6)
    np.testing.assert_allclose(out.detach().numpy()[0], h_ref, atol=1e-6)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(3, 5, proj_size=5)
    with pytest.raises(ValueError, match="positive integer or zero"):
        nn.LSTM(3, 5, proj_size=-1)


# values printed by torch 2.15 (float64) for x = [-3, -1, -0.25, 0, 0.5, 2, 4]
_ACTIVATIONS = {
    "hardtanh": [-1.5, -1.0, -0.25, 0.0, 0.5, 2.0, 2.5],
    "hardsigmoid": [0.0, 0.333333333333, 0.458333333333, 0.5, 0.583333333333, 0.833333333333, 1.0],
    "hardswish": [-0.0, -0.333333333333, -0.114583333333, 0.0, 0.291666666667, 1.666666666667, 4.0],
    "logsigmoid": [-3.048587351574, -1.313261687518, -0.825939419879, -0.69314718056,
                   -0.47407698418, -0.126928011043, -0.018149927918],
    "softsign": [-0.75, -0.5, -0.2, 0.0, 0.333333333333, 0.666666666667, 0.8],
    "threshold": [20.0, 20.0, 20.0, 20.0, 0.5, 2.0, 4.0],
    "softplus": [0.001237842569, 0.063464005521, 0.23703849209, 0.34657359028, 0.656630843759,
                 2.0, 4.0],
    "mish": [-0.145647461276, -0.303401461374, -0.129926963679, 0.0, 0.375245211305,
             1.943958959534, 3.997412806976],
    "selu": [-1.670568728767, -1.111330737813, -0.388890197478, 0.0, 0.525350493678,
             2.101401974711, 4.202803949422],
    "celu": [-0.498760623912, -0.432332358382, -0.196734670144, 0.0, 0.5, 2.0, 4.0],
    "leaky_relu": [-0.6, -0.2, -0.05, 0.0, 0.5, 2.0, 4.0],
    "relu6": [0.0, 0.0, 0.0, 0.0, 0.5, 2.0, 4.0],
}
_ARGS = {"hardtanh": (-1.5, 2.5), "threshold": (0.1, 20.0), "softplus": (2.0, 3.0),
         "celu": (0.5,), "leaky_relu": (0.2,)}


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_functional_activations_match_torch(name):
    x = torch.tensor([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 4.0], dtype=torch.float64)
    got = getattr(F, name)(x, *_ARGS.get(name, ()))
    np.testing.assert_allclose(got.numpy(), _ACTIVATIONS[name], atol=1e-11)


def test_more_activation_modules_match_torch():
    y = torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 1.0, 2.0]], dtype=torch.float64)
    np.testing.assert_allclose(nn.GLU(1)(y).numpy(), [[0.9525741268224334, 1.964027580075817],
                                                      [-0.7310585786300049, 0.0]], atol=1e-12)
    row = [0.6439142598879724, 0.23688281808991016, 0.08714431874203257, 0.03205860328008499]
    np.testing.assert_allclose(nn.Softmin(1)(y).numpy(), [row, row], atol=1e-12)
    p = nn.PReLU(2, dtype=torch.float64)
    with torch.no_grad():
        p.weight.copy_(torch.tensor([0.5, 0.1], dtype=torch.float64))
    z = torch.tensor([[-1.0, 2.0], [3.0, -4.0]], dtype=torch.float64).reshape(2, 2, 1)
    np.testing.assert_allclose(p(z).detach().numpy(), [[[-0.5], [2.0]], [[3.0], [-0.4]]])
    reprs = [repr(m) for m in [nn.Hardtanh(-2, 3), nn.Hardsigmoid(), nn.Hardswish(True),
                               nn.LogSigmoid(), nn.Softsign(), nn.Threshold(0.1, 20), nn.GLU(),
                               nn.Softmin(1), nn.PReLU(3)]]
    assert reprs == ["Hardtanh(min_val=-2, max_val=3)", "Hardsigmoid()", "Hardswish()",
                     "LogSigmoid()", "Softsign()", "Threshold(threshold=0.1, value=20)",
                     "GLU(dim=-1)", "Softmin(dim=1)", "PReLU(num_parameters=3)"]
    assert nn.PReLU(3).weight.tolist() == pytest.approx([0.25] * 3)


def _numpy_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
               maximize=False):
    """torch.optim.SGD's documented update, step by step."""
    p, buf = p.copy(), None
    for g in grads:
        d = -g if maximize else g
        d = d + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("kw", [
    dict(),
    dict(momentum=0.9),
    dict(momentum=0.9, dampening=0.3, weight_decay=0.05),
    dict(momentum=0.8, nesterov=True, weight_decay=0.01),
    dict(momentum=0.5, maximize=True),
], ids=str)
def test_sgd_matches_its_formulas(dtype, kw):
    # real parameters take the fused native update, complex ones the
    # tensor-op formulas: both against NumPy
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) for _ in range(4)]
    if dtype == "complex128":
        p0 = p0 + 1j * rng.standard_normal((3, 4))
        grads = [g + 1j * rng.standard_normal((3, 4)) for g in grads]
    p0 = p0.astype(dtype)
    # a transposed parameter: the fused update keeps its layout
    p = nn.Parameter(torch.tensor(p0.T.copy()).t())
    opt = torch.optim.SGD([p], lr=0.1, **kw)
    for g in grads:
        p.grad = torch.tensor(g.astype(dtype))
        opt.step()
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(p.detach().numpy(), _numpy_sgd(p0, [g.astype(dtype) for g in grads], 0.1, **kw),
                               rtol=tol, atol=tol)
    assert p.stride() == (1, 3)
    if kw.get("momentum"):
        assert "momentum_buffer" in opt.state_dict()["state"][0]


def test_sgd_momentum_switched_on_later_and_a_loaded_buffer():
    p0, g = np.array([1.0, -2.0]), np.array([0.5, 0.25])
    p = nn.Parameter(torch.tensor(p0))
    opt = torch.optim.SGD([p], lr=0.1)
    p.grad = torch.tensor(g)
    opt.step()  # no momentum: no buffer
    assert not opt.state_dict()["state"]
    opt.param_groups[0]["momentum"] = 0.9
    opt.step()  # the buffer starts as the gradient
    opt.step()
    want = p0 - 0.1 * g - 0.1 * g - 0.1 * (0.9 * g + g)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12)

    q = nn.Parameter(torch.tensor(p0))
    opt2 = torch.optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict({"state": {0: {"momentum_buffer": torch.tensor([1.0, 1.0])}},
                          "param_groups": [dict(opt2.state_dict()["param_groups"][0])]})
    # torch casts loaded state to a floating-point parameter's dtype
    assert opt2.state[q]["momentum_buffer"].dtype == torch.float64
    q.grad = torch.tensor(g)
    opt2.step()
    np.testing.assert_allclose(q.detach().numpy(), p0 - 0.1 * (0.9 * 1.0 + g), rtol=1e-12)


def test_fused_sgd_step_counts_as_an_in_place_write():
    # torch: a step between forward and backward makes backward raise
    p = nn.Parameter(torch.ones(3))
    y = (p * p).sum()
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = torch.ones(3)
    v0 = p._version
    opt.step()
    assert p._version == v0 + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
