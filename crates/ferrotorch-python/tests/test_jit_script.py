"""torch.jit.script and the TorchScript helpers in eager use, as torch's
(Note [Scripting runs Python]): scripted functions and modules compute
what the Python code does (data-dependent branches included) and train,
saving a scripted object points at jit.trace; ignore/unused/export,
annotate, jit.isinstance over typing generics, fork/wait and Futures, the
fusion switches, and the traced-module classes. The expected values are
what torch 2.15 gives for the same calls."""

from typing import Dict, List, Optional, Tuple

import pytest

import ferrotorch as torch


def test_a_scripted_function_keeps_its_branches():
    with pytest.warns(FutureWarning, match="torch.jit.script` is deprecated"):
        @torch.jit.script
        def f(x):
            if x.sum() > 0:
                return x * 2
            return x - 1

    assert isinstance(f, torch.jit.ScriptFunction)
    assert f(torch.ones(2)).tolist() == [2.0, 2.0] and f(-torch.ones(2)).tolist() == [-2.0, -2.0]
    with pytest.raises(RuntimeError, match="torch.jit.trace"):
        f.graph
    with pytest.raises(RuntimeError, match="no graph to save"):
        f.save("nowhere.pt")


def test_a_scripted_module_is_the_module():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    with pytest.warns(FutureWarning):
        m = torch.jit.script(lin)
    assert isinstance(m, torch.jit.ScriptModule) and isinstance(m, torch.jit.RecursiveScriptModule)
    assert isinstance(m, torch.ScriptModule)
    x = torch.randn(4, 3)
    assert torch.equal(m(x), lin(x)) and m.weight is lin.weight
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    w0 = lin.weight.detach().clone()
    m(x).sum().backward()
    opt.step()
    assert not torch.equal(lin.weight.detach(), w0)
    m.eval()
    assert not lin.training
    traced = torch.jit.trace(lin, x)
    assert type(traced) is torch.jit.TopLevelTracedModule and isinstance(traced, torch.jit.TracedModule)


def test_decorators_annotate_and_isinstance():
    @torch.jit.ignore
    def a(x):
        return x + 1

    @torch.jit.ignore(drop=True)
    def b(x):
        return x + 2

    @torch.jit.unused
    def c(x):
        return x + 3

    assert (a(1), b(1), c(1)) == (2, 3, 4)
    assert a._torchscript_modifier.startswith("ignore") and b._torchscript_modifier.startswith("unused")
    assert torch.jit.export(a) is a and a._torchscript_modifier.startswith("export")
    assert torch.jit.annotate(List[int], []) == []
    check = torch.jit.isinstance
    assert check([1, 2], List[int]) and not check([1, "a"], List[int])
    assert check({"a": torch.ones(1)}, Dict[str, torch.Tensor]) and check((1, "a"), Tuple[int, str])
    assert check(None, Optional[int]) and not check("s", Optional[int])
    with pytest.raises(RuntimeError, match="without a contained type"):
        check(1, list)

    @torch.jit.interface
    class Iface:
        def forward(self, x):
            pass

    assert Iface.__torch_script_interface__


def test_fork_wait_and_futures():
    with pytest.warns(FutureWarning, match="jit.fork"):
        fut = torch.jit.fork(lambda x: x + 1, torch.ones(1))
    assert fut.done()
    with pytest.warns(FutureWarning, match="jit.wait"):
        assert torch.jit.wait(fut).tolist() == [2.0]
    chained = fut.then(lambda f: f.wait() * 3)
    assert chained.wait().tolist() == [6.0]
    with pytest.warns(FutureWarning):
        bad = torch.jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bad.wait()
    both = torch.futures.collect_all([fut, chained])
    assert [f.wait().tolist() for f in both.wait()] == [[2.0], [6.0]]
    assert torch.futures.wait_all([fut])[0].tolist() == [2.0]


def test_fusion_switches_keep_torchs_contracts():
    with torch.jit.fuser("fuser1"):
        pass
    with pytest.raises(Exception, match=r"unrecognized fuser option \(name: nope\)"):
        with torch.jit.fuser("nope"):
            pass
    assert torch.jit.set_fusion_strategy([("STATIC", 3)]) == [("STATIC", 2), ("DYNAMIC", 10)]
    assert torch.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)]) == [("STATIC", 3)]
    assert torch.jit.onednn_fusion_enabled() is False
    with torch.jit.optimized_execution(False), torch.jit.strict_fusion():
        pass
    traced = torch.jit.trace(lambda x: x.relu() + 1, torch.ones(2))
    traced(torch.ones(2))
    assert "aten::relu" in str(torch.jit.last_executed_optimized_graph())
    assert "aten::relu" in torch.jit.export_opnames(traced)
