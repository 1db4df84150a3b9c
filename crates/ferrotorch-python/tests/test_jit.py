"""torch.jit.trace: graphs recorded through the dispatcher from Python
code (operators, methods, functions, nn modules), run by the interpreter
with the same values and gradients as eager, with torch's warnings and
trace checking."""

import warnings

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch import nn
from ferrotorch.nn import functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x))) * 2 + x.sum()


def test_traced_module_matches_eager_values_and_gradients():
    torch.manual_seed(0)
    net = Net()
    m = torch.jit.trace(net, torch.randn(2, 3))
    def kinds(g):
        return [line.split(" = ")[1].split("(")[0].split("[")[0]
                for line in str(g).splitlines() if " = aten::" in line or "CallMethod" in line]

    # submodule calls are kept as calls; inlined, the ops of both
    assert kinds(m.graph) == ["prim::CallMethod", "aten::tanh", "prim::CallMethod", "aten::mul",
                              "aten::sum", "aten::add"]
    assert 'prim::GetAttr[name="fc1"](%self)' in str(m.graph)
    assert kinds(m.inlined_graph) == ["aten::linear", "aten::tanh", "aten::linear", "aten::mul",
                                      "aten::sum", "aten::add"]
    assert 'prim::GetAttr[name="fc1.weight"](%self)' in str(m.inlined_graph)
    assert "(fc1).forward(x)" in m.code
    x = torch.randn(5, 3)
    out, want = m(x), net(x)
    assert np.array_equal(out.detach().numpy(), want.detach().numpy())
    # the traced module reads (and so trains) the module's own parameters
    gm = torch.autograd.grad(out.pow(2).sum(), list(net.parameters()))
    ge = torch.autograd.grad(want.pow(2).sum(), list(net.parameters()))
    for a, b in zip(gm, ge):
        assert np.array_equal(a.numpy(), b.numpy())
    with torch.no_grad():
        net.fc2.bias.add_(1.0)
    assert np.array_equal(m(x).detach().numpy(), net(x).detach().numpy())


def test_traced_function_records_views_lists_and_inplace_ops():
    def f(x, y):
        a, b = x.split(2, dim=1)
        z = torch.cat([b, a], 0).t().contiguous()
        z.mul_(y[0, 0])
        return z + 1, F.softmax(y, dim=-1)

    x, y = torch.randn(3, 4), torch.randn(2, 5)
    m = torch.jit.trace(f, (x, y))
    for kind in ["aten::split", "prim::ListUnpack", "aten::cat", "aten::t", "aten::contiguous",
                 "aten::select", "aten::mul_", "aten::softmax"]:
        assert kind in str(m.graph), kind
    x2, y2 = torch.randn(3, 4), torch.randn(2, 5)
    for a, b in zip(m(x2, y2), f(x2, y2)):
        assert np.array_equal(a.numpy(), b.numpy())


def test_traced_cnn_in_eval_mode_matches_eager():
    torch.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    net.eval()
    m = torch.jit.trace(net, torch.randn(2, 2, 8, 8))
    flat = str(m.inlined_graph)
    assert "aten::conv2d" in flat and "aten::batch_norm" in flat
    # ReLU(inplace=True) is one aten::relu_, as in torch (not relu + copy_)
    assert "aten::relu_" in flat and "aten::copy_" not in flat
    x = torch.randn(3, 2, 8, 8)
    assert np.array_equal(m(x).detach().numpy(), net(x).detach().numpy())


def test_tracer_warnings_check_trace_and_is_tracing():
    seen = []

    def f(x):
        seen.append(torch.jit.is_tracing())
        if x.sum() > 0:  # data-dependent control flow: only one path is recorded
            return x * 2
        return x * 3

    with pytest.warns(torch.jit.TracerWarning, match="Python boolean"):
        m = torch.jit.trace(f, torch.ones(3), check_trace=False)
    assert seen == [True] and not torch.jit.is_tracing()
    assert m(-torch.ones(3)).tolist() == [-2.0, -2.0, -2.0]  # the recorded path
    with pytest.raises(torch.jit.TracingCheckError, match="Output nr 1"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.jit.trace(f, torch.ones(3), check_inputs=[(-torch.ones(3),)])
    # a tensor made from Python values during the trace is a constant: warned

    def g(x):
        return x + torch.tensor(x.tolist()) * 2

    with pytest.warns(torch.jit.TracerWarning, match="made during the trace"):
        torch.jit.trace(g, torch.ones(3), check_trace=False)


class Head(nn.Module):
    """Reshapes by its input's sizes, as real models do."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        b, c, h = x.shape
        y = self.fc(x.reshape(b, c * h))
        return y.view(x.size(0), 2, 1) * h


def test_sizes_are_traced_so_graphs_follow_the_batch_size(tmp_path):
    torch.manual_seed(3)
    net = Head()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no TracerWarning: sizes stay in the graph
        m = torch.jit.trace(net, torch.randn(2, 3, 4))
    g = str(m.graph)
    # torch's nodes: aten::size, prim::NumToTensor, aten::Int into a list
    for kind in ["aten::size", "prim::NumToTensor", "aten::Int", "prim::ListConstruct",
                 "aten::reshape", "aten::view"]:
        assert kind in g, kind
    assert "int(" in m.code and "ops.prim.NumToTensor(" in m.code
    # each size read is a node (three from the unpacking, one from size(0))
    assert g.count("aten::size") == 4
    path = str(tmp_path / "head.pt")
    m.save(path)
    loaded = torch.jit.load(path)
    for n in [1, 5, 9]:  # other batch sizes than the traced one
        x = torch.randn(n, 3, 4)
        want = net(x)
        assert tuple(want.shape) == (n, 2, 1)
        for mod in (m, loaded):
            out = mod(x)
            assert tuple(out.shape) == (n, 2, 1)
            assert np.array_equal(out.detach().numpy(), want.detach().numpy())
    # traced sizes also feed numbers and creation ops
    def positions(x):
        n = x.size(0)
        return x.sum(1) + torch.arange(n) + torch.zeros(n, 3).sum(1)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = torch.jit.trace(positions, torch.randn(4, 3))
    x = torch.randn(7, 3)
    assert np.array_equal(p(x).numpy(), positions(x).numpy())
    # a 0-dim integer tensor stands for an int in sizes outside tracing too,
    # and any 0-dim tensor for a number
    assert tuple(torch.ones(6).view(torch.tensor(2), -1).shape) == (2, 3)
    assert torch.arange(torch.tensor(3)).tolist() == [0, 1, 2]
    assert torch.full((2,), torch.tensor(1.5)).tolist() == [1.5, 1.5]
    # a float 0-dim tensor where an op takes a number: aten::ScalarImplicit
    def centred(x):
        m = x.mean().detach()
        return torch.full((3,), m) + x.clamp(min=m)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = torch.jit.trace(centred, torch.randn(3))
    assert "aten::ScalarImplicit" in str(c.graph)
    x = torch.randn(3)
    assert np.array_equal(c(x).numpy(), centred(x).numpy())
    # one that requires grad is not a number: it keeps its gradient
    t = torch.tensor(0.1, requires_grad=True)
    torch.tensor([0.0, 1.0]).clamp(min=t).sum().backward()
    assert t.grad.item() == 1.0
    assert not torch.jit.is_tracing() and type(torch.ones(2).size(0)) is int


def test_trace_errors_are_clear():
    with pytest.raises(ValueError, match="boom"):
        torch.jit.trace(lambda x: (_ for _ in ()).throw(ValueError("boom")), torch.ones(2))
    assert not torch.jit.is_tracing()
    with pytest.raises(TypeError, match="must return a tensor"):
        torch.jit.trace(lambda x: 3, torch.ones(2))
    m = torch.jit.trace(lambda x: x.exp(), torch.ones(2))
    with pytest.raises(RuntimeError, match="expected 1 inputs, got 2"):
        m(torch.ones(2), torch.ones(2))


def test_saved_programs_round_trip_and_refuse_bad_files(tmp_path):
    import io

    torch.manual_seed(2)
    net = Net()
    m = torch.jit.trace(net, torch.randn(2, 3))
    path = tmp_path / "net.ftjit"
    torch.jit.save(m, path)
    buf = io.BytesIO()
    m.save(buf)
    x = torch.randn(4, 3)
    for loaded in (torch.jit.load(path), torch.jit.load(io.BytesIO(buf.getvalue()))):
        # saved programs hold the inlined graph
        assert str(loaded.graph) == str(m.inlined_graph)
        assert np.array_equal(loaded(x).detach().numpy(), net(x).detach().numpy())
    # a BytesIO is read in place from its position, left at its end and
    # still writable (no buffer export outlives the load)
    framed = io.BytesIO(b"head" + buf.getvalue())
    framed.seek(4)
    assert np.array_equal(torch.jit.load(framed)(x).detach().numpy(), net(x).detach().numpy())
    assert framed.tell() == 4 + len(buf.getvalue())
    framed.write(b"tail")
    # a loaded program trains: its saved parameters are leaves
    loaded = torch.jit.load(path)
    names = [n for n, _ in loaded.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    opt = torch.optim.SGD(loaded.parameters(), lr=1e-3)
    before = loaded(x).pow(2).sum().item()
    for _ in range(3):
        opt.zero_grad()
        loaded(x).pow(2).sum().backward()
        opt.step()
    assert loaded(x).pow(2).sum().item() < before
    # a zip archive, as torch's programs are: any zip reader lists it
    import zipfile
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["archive/version", "archive/graph.json",
                                "archive/data.safetensors"]
        assert z.read("archive/version") == b"2\n" and z.testzip() is None
    # a truncated or corrupted file, a file of another kind: clear errors
    (tmp_path / "cut.ftjit").write_bytes(path.read_bytes()[:100])
    with pytest.raises(RuntimeError, match="no end record"):
        torch.jit.load(tmp_path / "cut.ftjit")
    flipped = bytearray(path.read_bytes())
    flipped[len(flipped) // 2] ^= 1
    (tmp_path / "flip.ftjit").write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match="corrupted"):
        torch.jit.load(tmp_path / "flip.ftjit")
    with pytest.raises(RuntimeError, match="saved program"):
        torch.load(path)
    torch.save({"w": torch.ones(2)}, tmp_path / "state.pt")
    with pytest.raises(RuntimeError, match="not a ferrotorch program|safetensors"):
        torch.jit.load(tmp_path / "state.pt")
    with pytest.raises(TypeError, match="traced ScriptModule"):
        torch.jit.save(net, tmp_path / "x.ftjit")


def test_saving_into_file_objects_keeps_write_semantics():
    # an empty BytesIO adopts the program's bytes without a copy (Note
    # [Handing bytes to a BytesIO]); every other case is f.write: what the
    # object holds afterwards, and where its position is, must be the same
    import io

    torch.manual_seed(3)
    net = Net()
    m = torch.jit.trace(net, torch.randn(2, 3))
    x = torch.randn(4, 3)
    want = net(x).detach().numpy()
    plain = io.BytesIO()
    m.save(plain)
    blob = plain.getvalue()
    assert plain.tell() == len(blob) and blob[:2] == b"PK"

    class Sub(io.BytesIO):
        pass

    # empty, non-empty at its start, non-empty at its end, a subclass
    cases = [(io.BytesIO(), b""), (io.BytesIO(b"head"), b""), (Sub(), b"")]
    at_end = io.BytesIO(b"head")
    at_end.seek(0, io.SEEK_END)
    cases.append((at_end, b"head"))
    for f, before in cases:
        start = f.tell()
        torch.jit.save(m, f)
        assert f.tell() == start + len(blob)
        assert f.getvalue()[: len(before)] == before
        assert f.getvalue()[start:] == blob
        f.write(b"tail")  # still writable after
        assert f.getvalue() == before + blob + b"tail"
        f.seek(start)
        assert np.array_equal(torch.jit.load(f)(x).detach().numpy(), want)
        assert f.tell() == start + len(blob) + 4
    # a write into the adopted buffer does not change a program saved
    # before it, nor one loaded from it
    g = io.BytesIO()
    torch.jit.save(m, g)
    loaded = torch.jit.load(io.BytesIO(g.getvalue()))
    g.seek(0)
    g.write(b"\0" * 64)
    assert g.getvalue()[64:] == blob[64:] and blob[:2] == b"PK"
    assert np.array_equal(loaded(x).detach().numpy(), want)
    # the adoption itself: no copy either way
    from ferrotorch import _files

    data = bytes(range(256)) * 64
    h = io.BytesIO()
    assert _files.write_bytes(h, data) == len(data) and h.tell() == len(data)
    assert h.getvalue() is data
    h.seek(10)
    rest = _files.read_rest(h)
    assert rest.obj is data and rest.tobytes() == data[10:] and h.tell() == len(data)
    # a closed BytesIO is refused as f.write refuses it
    c = io.BytesIO()
    c.close()
    with pytest.raises(ValueError):
        torch.jit.save(m, c)


def test_freeze_and_optimize_for_inference():
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    m = torch.jit.trace(net, torch.randn(2, 3))
    with pytest.raises(RuntimeError, match="eval mode"):
        torch.jit.freeze(m)
    net.eval()
    x = torch.randn(5, 3)
    frozen = (torch.jit.freeze(m), torch.jit.optimize_for_inference(m))
    want = net(x).detach().numpy()
    for opt in frozen:
        assert "prim::GetAttr" not in str(opt.graph)
        assert np.array_equal(opt(x).numpy(), want)
    # torch.jit.freeze's constants share the module's parameters (checked
    # against PyTorch 2.15): an in-place update reaches the frozen program
    with torch.no_grad():
        net[0].weight.mul_(3)
    assert not np.array_equal(net(x).detach().numpy(), want)
    assert np.array_equal(frozen[0](x).numpy(), net(x).detach().numpy())
    def f(x):
        return (x * 1 + 0).t().t().tanh() + (x * 1 + 0).t().t().tanh()
    g = torch.jit.trace(f, torch.randn(2, 2))
    simple = torch.jit._run_pass(torch.jit._run_pass(g, "peephole"), "cse")
    ops = [line for line in str(simple.graph).splitlines() if "aten::" in line]
    assert [o.split(" = ")[1].split("(")[0] for o in ops] == ["aten::tanh", "aten::add"]
    assert np.array_equal(simple(x[:2, :2]).numpy(), f(x[:2, :2]).numpy())


def test_graph_passes_rewrite_the_module_graph_in_place():
    torch.manual_seed(5)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
    for _ in range(2):
        net(torch.randn(3, 2, 5, 5) * 2 + 1)  # running statistics off 0 and 1
    net.eval()
    m = torch.jit.trace(net, torch.randn(1, 2, 5, 5))
    assert m.graph.node_kinds().count("prim::CallMethod") == 3
    torch._C._jit_pass_inline(m.graph)
    assert "prim::CallMethod" not in str(m.graph)
    assert "aten::batch_norm" in str(m.graph)
    x = torch.randn(2, 2, 5, 5)
    assert np.array_equal(m(x).detach().numpy(), net(x).detach().numpy())
    # freezing folds the batch norm into the convolution
    frozen = torch.jit.freeze(m)
    assert "aten::batch_norm" not in str(frozen.graph)
    np.testing.assert_allclose(frozen(x).numpy(), net(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    # shapes re-propagated for another batch size
    torch._C._jit_pass_complete_shape_analysis(m.graph, (torch.randn(6, 2, 5, 5),), False)
    assert "Float(6, 4, 5, 5" in str(m.graph)
    # fusion groups, then dce and cse in place
    def f(x):
        y = (x * 2 + 1).relu()
        return y.sigmoid() * y + (x * 2)

    g = torch.jit.trace(f, torch.randn(3))
    torch._C._jit_pass_fuse(g.graph)
    assert "prim::FusionGroup_0" in str(g.graph) and "with prim::FusionGroup_0 = graph(" in str(g.graph)
    xs = torch.randn(4)
    assert np.array_equal(g(xs).numpy(), f(xs).numpy())
    h = torch.jit.trace(f, torch.randn(3))
    assert torch._C._jit_pass_cse(h.graph) is True
    assert [k for k in h.graph.node_kinds() if k.startswith("aten::")].count("aten::mul") == 2
    assert np.array_equal(h(xs).numpy(), f(xs).numpy())
