"""``ferrotorch.profiler`` as PyTorch users call it: a profiled training
step, ``key_averages().table()``, a Chrome trace, ``schedule`` and
``record_function``; and tqdm over a DataLoader."""

import json

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def step(model, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


def test_profile_records_ops_shapes_ranges_and_backward(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("train_step"):
            step(model, x, y)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["aten::relu"].count == 1
    assert rows["aten::linear"].count == 2
    assert rows["aten::mse_loss"].count == 1
    assert any(k.startswith("autograd::engine::evaluate_function: ") for k in rows)
    outer = rows["train_step"]
    assert outer.count == 1
    # the range holds every op: its total is at least theirs, its self
    # time is what is left
    inner = sum(r.cpu_time_total for k, r in rows.items() if k.startswith("aten::") and r.key != "train_step")
    assert outer.cpu_time_total >= outer.self_cpu_time_total >= 0
    assert outer.cpu_time_total + 1e-6 >= outer.self_cpu_time_total + min(inner, outer.cpu_time_total)

    by_shape = {(r.key, str(r.input_shapes)) for r in prof.key_averages(group_by_input_shape=True)}
    assert ("aten::linear", str([[4, 8], [16, 8], [16]])) in by_shape
    assert ("aten::linear", str([[4, 16], [1, 16], [1]])) in by_shape

    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU",
                                "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert len(lines) == 3 + 5 + 2 and lines[-1].startswith("Self CPU time total: ")
    assert lines[3].split()[0] == "train_step"  # the outermost range is the largest total

    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    names = [e["name"] for e in trace]
    assert "train_step" in names and "aten::relu" in names
    relu = next(e for e in trace if e["name"] == "aten::relu")
    assert relu["ph"] == "X" and relu["dur"] >= 0 and relu["args"]["Input Dims"] == [[4, 16]]
    span = next(e for e in trace if e["name"] == "train_step")
    assert span["ts"] <= relu["ts"] and relu["ts"] + relu["dur"] <= span["ts"] + span["dur"] + 1e-3


def test_nothing_is_recorded_outside_a_profile():
    a = torch.ones(3)
    with profile() as prof:
        (a + a).sum()
    a * a  # after the profile: not recorded
    keys = [r.key for r in prof.key_averages()]
    assert keys == ["aten::add", "aten::sum"]
    assert not torch._C._profiler_enabled()


def test_one_profile_at_a_time():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
    with profile() as p:  # and the first one's end freed the slot
        torch.ones(1).neg()
    assert [r.key for r in p.key_averages()] == ["aten::ones", "aten::neg"]


def test_schedule_actions_follow_torch():
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=1)
    got = [s(i) for i in range(7)]
    A = ProfilerAction
    assert got == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    s = schedule(wait=2, warmup=1, active=1, skip_first_wait=1)
    assert [s(i) for i in range(6)] == [A.WARMUP, A.RECORD_AND_SAVE, A.NONE, A.NONE, A.WARMUP, A.RECORD_AND_SAVE]


def test_scheduled_profile_saves_each_cycle(tmp_path):
    saved = []

    def on_ready(p):
        saved.append(sorted({r.key for r in p.key_averages()}))

    x = torch.ones(2)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=on_ready) as prof:
        for i in range(10):
            (x * float(i)).sum()
            prof.step()
    # two cycles of (wait, warmup, active, active): steps 2-3 and 6-7 recorded
    assert saved == [["ProfilerStep#2", "ProfilerStep#3", "aten::mul", "aten::sum"],
                     ["ProfilerStep#6", "ProfilerStep#7", "aten::mul", "aten::sum"]]


def test_trace_handler_writes_files(tmp_path):
    from ferrotorch.profiler import tensorboard_trace_handler

    with profile(schedule=schedule(wait=0, warmup=1, active=1), on_trace_ready=tensorboard_trace_handler(str(tmp_path), "w0")) as p:
        for _ in range(4):
            torch.ones(2).exp()
            p.step()
    files = sorted(f.name for f in tmp_path.iterdir())
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)
    assert "aten::exp" in {e["name"] for e in json.loads((tmp_path / files[0]).read_text())["traceEvents"]}


def test_autograd_profiler_and_decorator():
    @record_function("helper")
    def helper(t):
        return t.tanh()

    x = torch.ones(3)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        helper(x)
    keys = [e.name for e in prof.function_events]
    assert keys == ["aten::tanh", "helper"]  # in the order they ended
    assert "helper" in prof.table()


def test_tqdm_over_a_dataloader():
    tqdm = pytest.importorskip("tqdm").tqdm
    import io

    ds = torch.utils.data.TensorDataset(torch.arange(10.0).reshape(10, 1), torch.arange(10))
    loader = torch.utils.data.DataLoader(ds, batch_size=4)
    out = io.StringIO()
    seen = []
    for xb, yb in tqdm(loader, file=out, desc="epoch 0"):
        seen.extend(yb.tolist())
    assert seen == list(range(10))
    assert "epoch 0" in out.getvalue() and "3/3" in out.getvalue()  # tqdm read len(loader)
    np.testing.assert_array_equal(xb.numpy().reshape(-1), [8.0, 9.0])
