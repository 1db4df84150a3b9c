"""torch.jit.load of archives PyTorch wrote (Note [Loading TorchScript
archives]): the committed fixtures (crates/ferrotorch-jit/tests/fixtures/
torchscript/gen.py, torch 2.15) without torch, and, where torch is
installed, models traced by torch in the test itself."""
import io
import os
import warnings

import pytest

import ferrotorch as ft

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "ferrotorch-jit", "tests", "fixtures", "torchscript")


def _close(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == want.dtype
    assert (got.double() - want.double()).abs().max().item() <= 1e-5 * (1 + want.double().abs().max().item())


@pytest.mark.parametrize("name", ["cnn", "lstm_attention", "gpt_block", "resnet18_small", "div_v3", "full_v4"])
def test_archives_pytorch_wrote_give_its_outputs(name):
    m = ft.jit.load(os.path.join(FIX, name + ".pt"))
    io_ = ft.load(os.path.join(FIX, name + "_io.pt"))
    with ft.no_grad():
        out = m(*io_["inputs"])
    outs = list(out) if isinstance(out, tuple) else [out]
    assert len(outs) == len(io_["outputs"])
    for g, w in zip(outs, io_["outputs"]):
        _close(g, w)


def test_from_bytes_and_a_file_object():
    path = os.path.join(FIX, "cnn.pt")
    with open(path, "rb") as f:
        a = ft.jit.load(f)
    b = ft.jit.load(io.BytesIO(open(path, "rb").read()))
    x = ft.load(os.path.join(FIX, "cnn_io.pt"))["inputs"][0]
    with ft.no_grad():
        _close(a(x), b(x))


def test_a_loaded_archive_trains_and_saves_as_ours(tmp_path):
    m = ft.jit.load(os.path.join(FIX, "cnn.pt"))
    x = ft.load(os.path.join(FIX, "cnn_io.pt"))["inputs"][0]
    # its parameters require grad, as torch.jit.load gives them
    y = m(x).sum()
    y.backward()
    # and it saves in our program format, which loads back
    m.save(str(tmp_path / "again.pt"))
    m2 = ft.jit.load(str(tmp_path / "again.pt"))
    with ft.no_grad():
        _close(m2(x), m(x))


def test_a_scripted_module_is_refused_naming_the_construct():
    with pytest.raises(RuntimeError, match=r"line \d+: 'if' is control flow"):
        ft.jit.load(os.path.join(FIX, "scripted.pt"))


def test_torch_load_names_jit_load_for_an_archive():
    with pytest.raises(RuntimeError, match="load it with torch.jit.load"):
        ft.load(os.path.join(FIX, "cnn.pt"))


@pytest.mark.parametrize("which", ["resnet18", "conv_transpose", "rnns"])
def test_models_traced_by_torch_now(tmp_path, which):
    torch = pytest.importorskip("torch")
    nn = torch.nn
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    if which == "resnet18":
        tv = pytest.importorskip("torchvision")
        model, x = tv.models.resnet18().eval(), torch.randn(1, 3, 224, 224)
    elif which == "conv_transpose":
        model = nn.Sequential(nn.Conv1d(3, 4, 3, stride=2), nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1),
                              nn.Unflatten(1, (1, 2)), nn.ConvTranspose2d(1, 3, 2, groups=1), nn.Tanh()).eval()
        x = torch.randn(2, 3, 9)
    else:
        class R(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(3, 5, num_layers=2, batch_first=True)
                self.lstm = nn.LSTM(5, 4, bidirectional=True)

            def forward(self, x):
                y, h = self.gru(x)
                z, _ = self.lstm(y.transpose(0, 1))
                return z.sum(0) + h[-1].mean()
        model, x = R().eval(), torch.randn(2, 6, 3)
    with torch.no_grad():
        t = torch.jit.trace(model, x, check_trace=False)
        want = t(x)
    path = str(tmp_path / "m.pt")
    t.save(path)
    m = ft.jit.load(path)
    with ft.no_grad():
        got = m(ft.from_dlpack(x))
    diff = (torch.from_dlpack(got) - want).abs().max().item()
    assert diff <= 1e-5 * (1 + want.abs().max().item()), diff


def test_extra_files_of_an_archive_torch_wrote(tmp_path):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore")
    t = torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))
    path = str(tmp_path / "ex.pt")
    t.save(path, _extra_files={"meta.json": '{"a": 1}', "b.bin": b"\x00\x01"})
    for src in (path, io.BytesIO(open(path, "rb").read())):
        extra = {"meta.json": "", "b.bin": "", "missing": "x"}
        ft.jit.load(src, _extra_files=extra)
        assert extra == {"meta.json": b'{"a": 1}', "b.bin": b"\x00\x01", "missing": b""}
