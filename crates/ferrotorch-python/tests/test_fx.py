"""torch.fx: symbolic tracing, graph editing and code generation, and
seeds/000's walk-through: a function of floats → fx graph → native code
(and WebAssembly, run by Node when it is installed)."""

import math
import operator
import shutil
import subprocess

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch import fx, nn
from conftest import needs_torch


def scalar_fn(x, y):
    return x * math.sin(y) + math.exp(-x) / 2.0 - (x - y) ** 2


def test_symbolic_trace_of_floats_gives_torch_fx_node_kinds():
    gm = fx.symbolic_trace(scalar_fn)
    ops = [(n.op, n.name) for n in gm.graph.nodes]
    assert ops[:2] == [("placeholder", "x"), ("placeholder", "y")]
    assert ops[-1] == ("output", "output")
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert math.sin in targets and operator.mul in targets and operator.pow in targets
    assert gm(1.5, -0.25) == pytest.approx(scalar_fn(1.5, -0.25), rel=1e-15)
    assert "def forward(self, x, y):" in gm.code
    assert "math.sin(y)" in gm.code


def test_print_tabular(capsys):
    fx.symbolic_trace(lambda a: a + 1.0).graph.print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert out[2].split()[:3] == ["placeholder", "a", "a"]
    assert out[3].split()[:3] == ["call_function", "add", "operator.add"]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.scale = nn.Parameter(torch.ones(3) * 2)

    def forward(self, x):
        return torch.relu(self.lin(x) * self.scale).sum(dim=-1)


def test_module_trace_has_call_module_get_attr_and_call_method():
    torch.manual_seed(0)
    m = Block()
    gm = fx.symbolic_trace(m)
    kinds = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_module", "lin") in kinds
    assert ("get_attr", "scale") in kinds
    assert ("call_method", "sum") in kinds
    x = torch.randn(5, 4)
    np.testing.assert_allclose(gm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    assert gm.lin is m.lin   # submodules are shared


def test_graph_editing_and_recompile():
    gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1.0)
    g = gm.graph
    relu = next(n for n in g.nodes if n.op == "call_function" and n.target is torch.relu)
    with g.inserting_after(relu):
        neg = g.call_function(operator.neg, (relu,))
    relu.replace_all_uses_with(neg)
    neg.args = (relu,)          # the new node still reads relu
    g.lint()
    gm.recompile()
    x = torch.tensor([-1.0, 2.0])
    assert gm(x).tolist() == [1.0, -1.0]
    # erase: a node with users refuses, an unused one goes
    with pytest.raises(RuntimeError, match="still had"):
        g.erase_node(relu)
    with g.inserting_before(neg):
        dead = g.call_function(torch.exp, (relu,))
    assert g.eliminate_dead_code()
    assert dead not in g.nodes
    with pytest.raises(fx.TraceError, match="control flow"):
        fx.symbolic_trace(lambda x: x if x > 0 else -x)


def test_compile_fx_runs_native_code_for_floats():
    gm = fx.symbolic_trace(scalar_fn)
    native = torch.jit.compile_fx(gm)
    assert native.compile_time < 0.5
    for x, y in [(1.5, -0.25), (-2.0, 3.0), (0.0, 0.0), (10.0, -10.0)]:
        assert native(x, y) == pytest.approx(scalar_fn(x, y), rel=1e-14, abs=1e-14)
    with pytest.raises(TypeError):
        native("a", 1.0)
    two = torch.jit.compile_fx(fx.symbolic_trace(lambda a: (a * 2.0, math.tanh(a))))
    assert two(0.5) == pytest.approx((1.0, math.tanh(0.5)))


def test_compile_fx_with_tensors_uses_the_fused_kernels():
    gm = fx.symbolic_trace(lambda t: torch.sigmoid(t) * t + 0.5)
    f = torch.jit.compile_fx(gm)
    x = torch.randn(33)
    f(x)  # the first call is the trace's own run
    runs = torch._C._fusion_stats()[0]
    np.testing.assert_allclose(f(x).numpy(), (torch.sigmoid(x) * x + 0.5).numpy(), rtol=1e-6)
    assert torch._C._fusion_stats()[0] > runs


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_fx_to_wasm_runs_in_node(tmp_path):
    gm = fx.symbolic_trace(lambda x, y: x * math.sin(y) + math.exp(-x) / 2.0)
    path = tmp_path / "f.wasm"
    path.write_bytes(torch.jit.fx_to_wasm(gm))
    js = (f"const fs=require('fs');const m=new WebAssembly.Module(fs.readFileSync({str(path)!r}));"
          "const env={exp:Math.exp,sin:Math.sin};"
          "const f=new WebAssembly.Instance(m,{env}).exports.forward;"
          "console.log(JSON.stringify([f(1.5,-0.25),f(-2,3)]));")
    out = subprocess.run(["node", "-e", js], capture_output=True, text=True, check=True).stdout
    got = [float(v) for v in out.strip()[1:-1].split(",")]
    want = [1.5 * math.sin(-0.25) + math.exp(-1.5) / 2, -2 * math.sin(3) + math.exp(2) / 2]
    assert got == pytest.approx(want, rel=1e-14)


@needs_torch
def test_same_graph_as_torch_fx():
    import torch as real

    def f(x):
        return real.relu(x * 2 + 1).sum(dim=0)

    def g(x):
        return torch.relu(x * 2 + 1).sum(dim=0)

    want = [(n.op, n.name) for n in real.fx.symbolic_trace(f).graph.nodes]
    got = [(n.op, n.name) for n in fx.symbolic_trace(g).graph.nodes]
    assert got == want


def test_malformed_native_expressions_are_errors():
    C = torch._C
    with pytest.raises(ValueError, match="does not precede"):
        C._jit_compile_scalar(1, [("input", 0), ("unary", "exp", 5)], [1])
    with pytest.raises(ValueError, match="at most"):
        C._jit_compile_scalar(10 ** 9, [("input", 0)], [0])
    with pytest.raises(ValueError, match="unknown function"):
        C._jit_compile_scalar(1, [("input", 0), ("unary", "nope", 0)], [1])
    f = C._jit_compile_scalar(2, [("input", 0), ("input", 1), ("binary", "add", 0, 1)], [2])
    assert f(1.5, 2.0) == 3.5
    with pytest.raises(TypeError):
        f(1.0)
