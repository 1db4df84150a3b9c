"""``ferrotorch.utils.tensorboard.SummaryWriter`` as a training script uses
it, read back with TensorBoard's own ``EventAccumulator``. scripts/test.sh
installs tensorboard into the test venv; without it these skip, except the
ImportError check."""

import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import ferrotorch as torch

tb = pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from ferrotorch.utils.tensorboard import SummaryWriter  # noqa: E402


def load(path):
    acc = EventAccumulator(str(path), size_guidance={"images": 0, "histograms": 0, "scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def png_pixels(data):
    """Decode an 8-bit RGB(A) PNG whose rows use filter 0 (what an encoder
    without filtering writes): an independent check of the image bytes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = header[:4]
    assert depth == 8
    channels = {2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * channels)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, channels)


def test_training_loop_scalars_histograms_text(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    losses = []
    with SummaryWriter(log_dir=tmp_path) as writer:
        for step in range(5):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            writer.add_scalar("Loss/train", loss.item(), step)
            writer.add_scalar("Loss/tensor", loss, step)  # a 0-dim tensor
        writer.add_histogram("fc.weight", model.weight, 4)
        writer.add_text("notes", "lr = **0.1**", 0)
    acc = load(tmp_path)
    got = [(e.step, e.value) for e in acc.Scalars("Loss/train")]
    assert [s for s, _ in got] == list(range(5))
    np.testing.assert_allclose([v for _, v in got], losses, rtol=1e-6)
    np.testing.assert_allclose([e.value for e in acc.Scalars("Loss/tensor")], losses, rtol=1e-6)

    h = acc.Histograms("fc.weight")[0].histogram_value
    w = model.weight.detach().numpy().astype(np.float64).reshape(-1)
    assert h.num == 4 and h.min == w.min() and h.max == w.max()
    np.testing.assert_allclose([h.sum, h.sum_squares], [w.sum(), (w * w).sum()])
    # counts over TensorFlow's buckets, checked against numpy.histogram
    assert sum(h.bucket) == 4
    edges = np.array(list(h.bucket_limit))
    for limit, count in zip(edges[1:], h.bucket[1:]):
        assert count == ((w < limit) & (w >= edges[edges < limit].max())).sum()

    text = acc.Tensors("notes/text_summary")[0].tensor_proto.string_val[0].decode()
    assert text == "lr = **0.1**"
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"


def test_images_chw_hwc_and_batches(tmp_path):
    img = torch.zeros(3, 2, 4)
    img[0, 0, :] = 1.0  # top row red
    img[2, 1, 1] = 0.5  # one half-blue pixel
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", img, 0)
        w.add_image("hwc", img.permute(1, 2, 0), 0, dataformats="HWC")
        w.add_image("gray_u8", (torch.arange(8, dtype=torch.uint8) * 30).reshape(2, 4), 0, dataformats="HW")
        w.add_images("batch", torch.stack([img, 1 - img]), 0)
    acc = load(tmp_path)
    expect = np.zeros((2, 4, 3), np.uint8)
    expect[0, :, 0] = 255
    expect[1, 1, 2] = 127
    for tag in ("chw", "hwc"):
        ev = acc.Images(tag)[0]
        assert (ev.height, ev.width) == (2, 4)
        np.testing.assert_array_equal(png_pixels(ev.encoded_image_string), expect)
    gray = png_pixels(acc.Images("gray_u8")[0].encoded_image_string)
    np.testing.assert_array_equal(gray[..., 0], (np.arange(8) * 30).reshape(2, 4))
    batch = png_pixels(acc.Images("batch")[0].encoded_image_string)
    assert batch.shape == (2, 8, 3)  # two images side by side
    np.testing.assert_array_equal(batch[:, :4], expect)
    np.testing.assert_array_equal(batch[:, 4:], 255 - expect - (expect == 127))


def test_add_scalars_and_hparams_write_runs(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run", {"sin": np.sin(step), "cos": np.cos(step)}, step)
        w.add_hparams({"lr": 0.1, "bsize": 4, "opt": "sgd"}, {"hparam/accuracy": 0.9}, run_name="trial")
    for name, fn in (("run_sin", np.sin), ("run_cos", np.cos)):
        acc = load(tmp_path / name)
        np.testing.assert_allclose([e.value for e in acc.Scalars("run")], fn(np.arange(3)), rtol=1e-6)
    trial = load(tmp_path / "trial")
    assert trial.Scalars("hparam/accuracy")[0].value == pytest.approx(0.9)
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = trial.SummaryMetadata("_hparams_/session_start_info").plugin_data.content
    start = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert start.hparams["lr"].number_value == 0.1
    assert start.hparams["bsize"].number_value == 4
    assert start.hparams["opt"].string_value == "sgd"


def test_default_log_dir_and_reopen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_lr0.1")
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.add_scalar("a", 2.0, 1)  # a closed writer opens a new file, as torch's
    w.close()
    files = os.listdir(w.get_logdir())
    assert len(files) == 2 and all(f.startswith("events.out.tfevents.") for f in files)
    assert [e.value for e in load(w.get_logdir()).Scalars("a")] == [1.0, 2.0]


def test_bad_values_are_errors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AssertionError, match="one element"):
            w.add_scalar("s", torch.ones(3), 0)
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("h", torch.zeros(0), 0)
        with pytest.raises(AssertionError, match="size of input tensor and input format are different"):
            w.add_image("i", torch.zeros(2, 2), 0)
        with pytest.raises(TypeError):
            w.add_hparams([1], {})


def test_import_error_names_the_package():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import ferrotorch.utils.tensorboard\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install tensorboard" in out.stdout


def test_add_graph_of_a_traced_module(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, torch.randn(2, 4))
    g = load(tmp_path).Graph()
    ops = [n.op for n in g.node]
    assert ops.count("aten::linear") == 2 and ops.count("aten::relu") == 1
    by_name = {n.name: n for n in g.node}
    inputs = [n for n in g.node if n.name.startswith("input/")]
    assert len(inputs) == 1
    assert [d.size for d in inputs[0].attr["_output_shapes"].list.shape[0].dim] == [2, 4]
    relu = next(n for n in g.node if n.op == "aten::relu")
    assert [d.size for d in relu.attr["_output_shapes"].list.shape[0].dim] == [2, 16]
    # edges: relu reads the first linear, the output reads the second
    assert by_name[relu.input[0]].op == "aten::linear"
    out = next(n for n in g.node if n.name.startswith("output/"))
    assert by_name[out.input[0]].op == "aten::linear"
