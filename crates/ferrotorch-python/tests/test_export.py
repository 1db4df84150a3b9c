"""torch.export: ExportedProgram from ferrotorch's export (graph of ATen
ops, signature, state_dict, module(), run_decompositions), .pt2 archives
both ways — PyTorch's files (fixtures/export, written by gen.py with torch
2.15) load and give torch's outputs, ferrotorch's files load in torch
(live where torch is installed, and through ours_expected.json, torch's
outputs of a committed file ferrotorch wrote) — seeds/004's TensorQueue
programs, and the errors."""

import io
import json
import os
import zipfile

import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F
from ferrotorch.utils import _pytree as pytree

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "export")
EXPECTED = json.load(open(os.path.join(HERE, "expected.json")))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        y = F.adaptive_avg_pool2d(y, (2, 2)).flatten(1)
        return self.fc(y)


class BNTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("c", torch.ones(4))

    def forward(self, x):
        return torch.relu(self.bn(self.l(x))) + self.c


def targets(ep):
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and "getitem" not in str(n.target)]


def same_op(a, b):
    # torch names add_(t, 1) by its Tensor overload, the dispatcher by Scalar
    return a == b or a.rsplit(".", 1)[0] == b.rsplit(".", 1)[0] and {a, b} & {"aten.add_.Tensor"}


def close(a, b, tol=1e-5):
    return (a - b).abs().max().item() <= tol


def torch_cnn():
    """The fixture's CNN with the weights PyTorch exported."""
    ep = torch.export.load(os.path.join(HERE, "cnn.pt2"))
    m = CNN()
    m.load_state_dict(ep.state_dict)
    return m.eval()


# ---- PyTorch's files in ----

@pytest.mark.parametrize("name", ["cnn", "cnn_core", "bn_train"])
def test_pytorch_pt2_loads_and_gives_torchs_outputs(name):
    rec = EXPECTED[name]
    ep = torch.export.load(os.path.join(HERE, f"{name}.pt2"))
    got = targets(ep)
    assert len(got) == len(rec["targets"]) and all(same_op(a, b) for a, b in zip(got, rec["targets"]))
    x = torch.tensor(rec["input"])
    (ex,), kw = ep.example_inputs
    assert kw == {} and close(ex, x, 0)
    m = ep.module()
    y = m(x)
    assert close(y, torch.tensor(rec["output"]))
    if name == "bn_train":
        # the in-place update of the buffers ran, as in torch's module()
        assert int(m.bn.num_batches_tracked) == rec["num_batches_tracked"] == 1
        assert close(m.bn.running_mean, torch.tensor(rec["running_mean"]))


def test_pytorch_pt2_signature_and_state_dict():
    ep = torch.export.load(os.path.join(HERE, "cnn.pt2"))
    sig = ep.graph_signature
    assert sig.parameters == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"]
    assert sig.buffers == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert sig.user_inputs == ["x"] and sig.inputs_to_parameters["p_conv_weight"] == "conv.weight"
    assert isinstance(ep.state_dict["conv.weight"], nn.Parameter)
    assert ep.state_dict["bn.num_batches_tracked"].dtype == torch.int64
    assert sorted(dict(ep.module().named_parameters())) == sorted(sig.parameters)
    assert "torch.ops.aten.conv2d.default(x, p_conv_weight, p_conv_bias" in ep.graph_module.code


def test_run_decompositions_of_pytorchs_program_matches_torchs():
    ep = torch.export.load(os.path.join(HERE, "cnn.pt2"))
    core = ep.run_decompositions()
    assert targets(core) == EXPECTED["cnn_core"]["targets"]
    x = torch.tensor(EXPECTED["cnn"]["input"])
    assert close(core.module()(x), torch.tensor(EXPECTED["cnn_core"]["output"]))


# ---- ferrotorch's export ----

def test_export_names_the_ops_torch_names():
    m = torch_cnn()
    x = torch.tensor(EXPECTED["cnn"]["input"])
    ep = torch.export.export(m, (x,))
    assert targets(ep) == EXPECTED["cnn"]["targets"]
    assert [n.name for n in ep.graph.nodes if n.op == "placeholder"][:2] == ["p_conv_weight", "p_conv_bias"]
    assert close(ep.module()(x), torch.tensor(EXPECTED["cnn"]["output"]))
    core = ep.run_decompositions()
    assert targets(core) == EXPECTED["cnn_core"]["targets"]
    assert close(core.module()(x), torch.tensor(EXPECTED["cnn"]["output"]))


def test_export_in_train_mode_keeps_the_buffer_update_and_functionalises_it():
    rec = EXPECTED["bn_train"]
    m = BNTrain()
    ref = torch.export.load(os.path.join(HERE, "bn_train.pt2"))
    m.load_state_dict(ref.state_dict)
    x = torch.tensor(rec["input"])
    ep = torch.export.export(m, (x,))
    assert all(same_op(a, b) for a, b in zip(targets(ep), rec["targets"]))
    assert len(targets(ep)) == len(rec["targets"])
    # export ran the module but left its buffers as they were
    assert int(m.bn.num_batches_tracked) == 0
    core = ep.run_decompositions()
    kinds = [(s.kind.name, s.target) for s in core.graph_signature.output_specs]
    assert kinds == [("BUFFER_MUTATION", "bn.running_mean"), ("BUFFER_MUTATION", "bn.running_var"),
                     ("BUFFER_MUTATION", "bn.num_batches_tracked"), ("USER_OUTPUT", None)]
    assert "_native_batch_norm_legit_functional" in core.graph_module.code
    mm = core.module()
    assert close(mm(x), torch.tensor(rec["output"]))
    assert int(mm.bn.num_batches_tracked) == 1
    assert close(mm.bn.running_mean, torch.tensor(rec["running_mean"]))


def test_export_leaves_the_callers_inputs_alone():
    class AddInPlace(nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2

    x = torch.zeros(3)
    ep = torch.export.export(AddInPlace(), (x,))
    assert torch.equal(x, torch.zeros(3))
    assert "torch.ops.aten.add_" in ep.graph_module.code
    core = ep.run_decompositions()
    assert [s.kind.name for s in core.graph_signature.output_specs] == ["USER_INPUT_MUTATION", "USER_OUTPUT"]
    y = core.module()(x)
    assert torch.equal(x, torch.ones(3)) and torch.equal(y, torch.full((3,), 2.0))


def test_nested_inputs_kwargs_and_outputs():
    class M(nn.Module):
        def forward(self, pair, scale, *, bias):
            a, b = pair
            return {"sum": a + b * scale, "parts": [a.relu(), bias.exp()]}

    a, b, bias = torch.randn(3), torch.randn(3), torch.randn(2)
    ep = torch.export.export(M(), ((a, b), 2.0), {"bias": bias})
    names = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert names == ["pair_0", "pair_1", "scale", "bias"]
    out = ep.module()((a, b), 2.0, bias=bias)
    assert close(out["sum"], a + b * 2.0) and close(out["parts"][1], bias.exp())
    with pytest.raises(ValueError, match="tree spec"):
        ep.module()(a, 2.0, bias=bias)


def test_save_and_load_round_trip_keeps_ties_and_outputs(tmp_path):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.out = nn.Linear(4, 7, bias=False)
            self.out.weight = self.emb.weight

        def forward(self, idx):
            return F.log_softmax(self.out(self.emb(idx)), -1)

    m = Tied()
    idx = torch.tensor([[1, 2, 3]])
    ep = torch.export.export(m, (idx,))
    p = tmp_path / "tied.pt2"
    torch.export.save(ep, str(p))
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
    assert "tied/archive_format" in names and "tied/models/model.json" in names
    assert sum(n.startswith("tied/data/weights/weight_") for n in names) == 1  # one tied storage
    back = torch.export.load(str(p))
    assert close(back.module()(idx), m(idx))
    buf = io.BytesIO()
    torch.export.save(back.run_decompositions(), buf)
    buf.seek(0)
    core = torch.export.load(buf)
    assert "torch.ops.aten.mm.default" in core.graph_module.code or "addmm" in core.graph_module.code
    assert close(core.module()(idx), m(idx))


def test_ferrotorchs_pt2_is_what_pytorch_reads():
    """ours_cnn.pt2 was written by this suite's export of torch_cnn();
    gen.py --check-ours ran it in torch.export.load and recorded torch's
    outputs (ours_expected.json)."""
    rec = json.load(open(os.path.join(HERE, "ours_expected.json")))
    x = torch.tensor(rec["input"])
    m = torch_cnn()
    assert close(m(x), torch.tensor(rec["output"]))
    assert close(m(x), torch.tensor(rec["core_output"]))
    assert rec["targets"] == EXPECTED["cnn"]["targets"]
    ours = torch.export.load(os.path.join(HERE, "ours_cnn.pt2"))
    assert close(ours.module()(x), torch.tensor(rec["output"]))


def test_pytorch_loads_what_ferrotorch_saves_live(tmp_path):
    real = pytest.importorskip("torch")
    if not hasattr(real, "export") or real is torch:
        pytest.skip("PyTorch is not installed")
    m = torch_cnn()
    x = torch.tensor(EXPECTED["cnn"]["input"])
    for prog in (torch.export.export(m, (x,)), torch.export.export(m, (x,)).run_decompositions()):
        p = str(tmp_path / "live.pt2")
        torch.export.save(prog, p)
        ep = real.export.load(p)
        y = ep.module()(real.tensor(EXPECTED["cnn"]["input"]))
        assert (y - real.tensor(m(x).tolist())).abs().max().item() <= 1e-5


# ---- seeds/004 ----

def empty_tensor_queue():
    torch._C._register_tensor_queue()
    return torch.classes.MyCustomClass.TensorQueue(torch.empty(0).fill_(-1))


def test_the_seeds_mod_with_a_tensor_queue_exports():
    class Mod(nn.Module):
        def forward(self, tq, x):
            tq.push(x.sin())
            tq.push(x.cos())
            poped_t = tq.pop()
            assert torch.allclose(poped_t, x.sin())
            return tq, poped_t

    tq = empty_tensor_queue()
    ep = torch.export.export(Mod(), (tq, torch.randn(2, 3),), strict=False)
    assert tq.size() == 0  # export ran on a copy
    assert "torch.ops.higher_order.call_torchbind(tq, 'push', sin)" in ep.graph_module.code
    x = torch.randn(2, 3)
    out_tq, popped = ep.module()(tq, x)
    assert out_tq is tq and tq.size() == 1 and close(popped, x.sin()) and close(tq.top(), x.cos())
    core = ep.run_decompositions()
    code = core.graph_module.code
    assert code.splitlines()[3].strip() == "def forward(self, token, tq, x):"
    assert "torch.ops.higher_order.with_effects(token, torch.ops.higher_order.call_torchbind, tq, 'push', sin)" in code
    assert [s.kind.name for s in core.graph_signature.output_specs] == ["TOKEN", "USER_OUTPUT", "USER_OUTPUT"]
    out_tq, popped = core.module()(tq, x)
    assert tq.size() == 2 and close(popped, x.cos())


def test_the_seeds_for_each_add_exports():
    class ForEachAdd(nn.Module):
        def forward(self, tq, a):
            torch.ops.MyCustomClass.for_each_add_(tq, a)
            return tq

    tq = empty_tensor_queue()
    for _ in range(10):
        tq.push(torch.zeros(1))
    ep = torch.export.export(ForEachAdd(), (tq, torch.ones(1)), strict=False)
    core = ep.run_decompositions()
    assert [ln.strip() for ln in core.graph_module.code.strip().splitlines()[1:]] == [
        "with_effects = torch.ops.higher_order.with_effects(token, torch.ops.MyCustomClass.for_each_add_.default, tq, a)",
        "getitem = with_effects[0]",
        "return (getitem, tq)"]
    output_tq = ep.module()(tq, torch.ones(1))
    assert output_tq.size() == 10 and torch.equal(output_tq.top(), torch.ones(1))
    with pytest.raises(RuntimeError, match="custom class objects cannot be saved"):
        torch.export.save(core, io.BytesIO())


# ---- pytree ----

def test_treespec_json_is_torchs():
    x = torch.ones(1)
    _, spec = pytree.tree_flatten(((x, [x, x]), {"k": x}))
    assert pytree.treespec_dumps(spec) == (
        '[1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", '
        '"context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, '
        '{"type": "builtins.list", "context": "null", "children_spec": [{"type": null, "context": null, '
        '"children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]}, {"type": '
        '"builtins.dict", "context": "[\\"k\\"]", "children_spec": [{"type": null, "context": null, '
        '"children_spec": []}]}]}]')
    assert pytree.treespec_loads(pytree.treespec_dumps(spec)) == spec
    with pytest.raises(ValueError, match="unsupported container type 'os.system'"):
        pytree.treespec_loads('[1, {"type": "os.system", "context": "null", "children_spec": []}]')


# ---- errors ----

def test_export_errors_name_the_problem():
    m = CNN()
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(ValueError, match="instance of `torch.nn.Module`"):
        torch.export.export(lambda x: x, (x,))
    with pytest.raises(ValueError, match="tuple of example positional inputs"):
        torch.export.export(m, x)
    with pytest.raises(RuntimeError, match="strict=False"):
        torch.export.export(m, (x,), strict=True)
    with pytest.raises(ValueError, match="sizes 0 and 1 are specialised"):
        torch.export.export(m, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    with pytest.raises(ValueError, match="not inputs"):
        torch.export.export(m, (x,), dynamic_shapes={"y": {0: torch.export.Dim("batch")}})
    with pytest.raises(RuntimeError, match="use `exported_program.module\\(\\)`"):
        torch.export.export(m, (x,))(x)


class Attention(nn.Module):
    def __init__(self, d=8, heads=2):
        super().__init__()
        self.h, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = (q @ k.transpose(-2, -1)).softmax(-1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y).view(B * T, C)


def test_dynamic_shapes_follow_batch_and_sequence():
    m = Attention().eval()
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq")
    ep = torch.export.export(m, (torch.randn(3, 5, 8),), dynamic_shapes={"x": {0: batch, 1: seq}})
    code = ep.graph_module.code
    assert "sym_size_int = torch.ops.aten.sym_size.int(x, 0)" in code
    assert "mul = sym_size_int * sym_size_int_1" in code
    assert {k: (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {"batch": (2, 64), "seq": (2, None)}
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    assert [str(d) for d in out.meta["val"].shape] == ["batch*seq", "8"]
    mm, core = ep.module(), ep.run_decompositions().module()
    for shape in [(3, 5, 8), (7, 2, 8), (2, 9, 8)]:
        x = torch.randn(*shape)
        assert close(mm(x), m(x)) and close(core(x), m(x))
    with pytest.raises(RuntimeError, match="x.shape\\[2\\] to be equal to 8, but got 9"):
        mm(torch.randn(2, 3, 9))
    with pytest.raises(RuntimeError, match="to be in VR\\[2, 64\\]"):
        mm(torch.randn(65, 3, 8))
    with pytest.raises(RuntimeError, match="dynamic shapes cannot be saved yet"):
        torch.export.save(ep, io.BytesIO())


def test_dynamic_shapes_refuse_sizes_turned_into_python_numbers():
    class M(nn.Module):
        def forward(self, x):
            return x.reshape(-1) * float(x.shape[0])

    with pytest.raises(RuntimeError, match="computes a Python number from a size"):
        torch.export.export(M(), (torch.randn(3, 2),), dynamic_shapes=({0: torch.export.Dim.AUTO},))


def test_write_through_a_view_is_refused_by_run_decompositions():
    class M(nn.Module):
        def forward(self, x):
            y = x.view(-1)
            y.mul_(2)
            return x + 1

    ep = torch.export.export(M(), (torch.ones(2, 2),))
    with pytest.raises(RuntimeError, match="writes a view .*aten::view"):
        ep.run_decompositions()


def _rewrite(src, dst, name, fn):
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = z.read(info)
            if info.filename.endswith(name):
                data = fn(data)
            out.writestr(info.filename, data)


@pytest.mark.parametrize("entry,change,message", [
    ("models/model.json", lambda b: b.replace(b"torch.ops.aten.relu.default", b"os.system"),
     "calls 'os.system'"),
    ("models/model.json", lambda b: b.replace(b"torch.ops.aten.relu.default", b"torch.ops.aten.no_such_op.default"),
     "ferrotorch does not have"),
    ("models/model.json", lambda b: b.replace(b'"major": 8', b'"major": 99'), "schema version 99"),
    ("models/model.json", lambda b: b[:100], "not valid JSON"),
    ("model_weights_config.json", lambda b: b.replace(b'"use_pickle": false', b'"use_pickle": true', 1),
     "stored pickled"),
    ("model_weights_config.json", lambda b: b.replace(b'{"as_int": 4}', b'{"as_int": 4000}', 1),
     "out of bounds"),
    ("data/weights/weight_0", lambda b: b[:-1], "not a whole number"),
    ("archive_format", lambda b: b"zip", "archive_format"),
    # a name becomes a variable of generated code: never code itself
    ("models/model.json", lambda b: b.replace(b'"outputs": [{"as_tensor": {"name": "relu"}}]',
                                              b'"outputs": [{"as_tensor": {"name": "relu = __import__(\'os\')"}}]'),
     "not a fresh Python identifier"),
    ("models/model.json", lambda b: b.replace(b'"forward_arg_names": ["x"]', b'"forward_arg_names": ["x=print(1)"]'),
     "forward_arg_names"),
])
def test_malformed_pt2_files_are_refused(tmp_path, entry, change, message):
    bad = tmp_path / "bad.pt2"
    _rewrite(os.path.join(HERE, "cnn.pt2"), bad, entry, change)
    with pytest.raises(RuntimeError, match=message):
        torch.export.load(str(bad))
    with pytest.raises(RuntimeError, match="not a .pt2 archive"):
        torch.export.load(io.BytesIO(b"not a zip"))
