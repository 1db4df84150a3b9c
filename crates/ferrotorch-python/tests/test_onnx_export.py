"""torch.onnx.export: an MLP, a CNN with BatchNorm and pooling, an LSTM, a
GPT block and ResNet-18 written as ONNX (opset 18, IR 10) pass
onnx.checker.check_model(full_check=True) and give ferrotorch's outputs in
onnxruntime within 1e-5 — at the traced batch size and, through the
symbolic batch dimension, at another; unmapped ops and bad arguments are
named errors. onnx and onnxruntime come from PyPI in the test venv."""

import io
import math
import os
import sys

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
from jit import resnet18  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))

    def forward(self, x):
        return F.log_softmax(self.net(x), dim=-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 16, 3, stride=2), nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.b1(self.c1(x))), 2)
        x = F.avg_pool2d(F.relu(self.b2(self.c2(x))), 1)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True)
        self.gru = nn.GRU(12, 6, bidirectional=True, batch_first=True)
        self.out = nn.Linear(12, 20)

    def forward(self, idx):
        y, (h, c) = self.lstm(self.emb(idx))
        z, hz = self.gru(y)
        return self.out(z), h, c, hz


class Block(nn.Module):
    """A GPT block: causal self-attention and an MLP, pre-norm."""

    def __init__(self, d=16, heads=2, T=6):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class SDPA(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def cases():
    torch.manual_seed(0)
    return {
        "mlp": (MLP(), lambda b: (torch.randn(b, 8),)),
        "cnn": (CNN(), lambda b: (torch.randn(b, 3, 16, 16),)),
        "lstm": (LSTMNet(), lambda b: (torch.randint(0, 20, (b, 5)),)),
        "gpt_block": (Block(), lambda b: (torch.randn(b, 6, 16),)),
        "sdpa": (SDPA(), lambda b: (torch.randn(b, 4, 8),)),
        "resnet18": (resnet18(nn), lambda b: (torch.randn(b, 3, 64, 64),)),
    }


def run(path, inputs):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: x.numpy() for i, x in zip(s.get_inputs(), inputs)})


@pytest.mark.parametrize("name", list(cases()))
def test_export_checks_and_runs_in_onnxruntime(tmp_path, name):
    model, make = cases()[name]
    model.eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):  # running stats that matter
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    path = str(tmp_path / f"{name}.onnx")
    prog = torch.onnx.export(model, make(2), path, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    assert m.ir_version == 10 and [(o.domain, o.version) for o in m.opset_import] == [("", 18)]
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert {t.name for t in m.graph.initializer} >= {n for n, _ in model.named_parameters()
                                                     if "lstm" not in n and "gru" not in n}
    assert prog.model_bytes == open(path, "rb").read()
    for b in (2, 3):
        inputs = make(b)
        with torch.no_grad():
            want = model(*inputs)
        want = want if isinstance(want, tuple) else (want,)
        got = run(path, inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            assert np.abs(g - w.numpy()).max() <= 1e-5, (name, b)


def test_export_leaves_a_training_model_in_training_mode():
    model = CNN().train()
    buf = io.BytesIO()
    torch.onnx.export(model, (torch.randn(1, 3, 16, 16),), buf)
    assert model.training and buf.getvalue()[:2] == b"\x08\x0a"  # ir_version = 10
    # tracing in eval mode did not update the running statistics
    assert torch.equal(model.b1.running_mean, torch.zeros(8))


def test_unmapped_ops_and_bad_arguments_are_named():
    class Cumsum(nn.Module):
        def forward(self, x):
            return x.cumsum(0)

    with pytest.raises(RuntimeError, match="aten::cumsum has no ONNX mapping"):
        torch.onnx.export(Cumsum(), (torch.randn(3),), io.BytesIO())
    with pytest.raises(RuntimeError, match="opset_version 12 is not supported"):
        torch.onnx.export(MLP(), (torch.randn(1, 8),), io.BytesIO(), opset_version=12)
    with pytest.raises(RuntimeError, match="dynamic axis 3 of x"):
        torch.onnx.export(MLP(), (torch.randn(1, 8),), io.BytesIO(), input_names=["x"],
                          dynamic_axes={"x": {3: "n"}})
    with pytest.raises(TypeError, match="kwargs"):
        torch.onnx.export(MLP(), (torch.randn(1, 8),), io.BytesIO(), kwargs={"y": 1})


def test_dynamic_shapes_name_the_batch_dimension(tmp_path):
    path = str(tmp_path / "mlp.onnx")
    torch.onnx.export(MLP(), (torch.randn(2, 8),), path,
                      dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    m = onnx.load(path)
    assert m.graph.input[0].name == "x"
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    out = run(path, (torch.randn(5, 8),))[0]
    assert out.shape == (5, 3)
