"""Whole objects in torch.save files (Note [Allow-listed classes]): modules
and allow-listed classes rebuilt by pickle's protocol, nothing else a file
names ever called."""
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import ferrotorch as ft

PT = os.path.join(os.path.dirname(__file__), "fixtures", "torch_pt")
WHOLE = os.path.join(PT, "whole_module.pt")


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def test_a_module_torch_saved_is_refused_unless_allowed():
    assert ft.serialization.get_unsafe_globals_in_checkpoint(WHOLE) == ["torch.nn.modules.linear.Linear"]
    with pytest.raises(RuntimeError, match=r"add_safe_globals\(\[Linear\]\)"):
        ft.load(WHOLE)
    with ft.serialization.safe_globals([ft.nn.Linear]):
        m = ft.load(WHOLE)
    assert type(m) is ft.nn.Linear and m.weight.shape == (2, 2) and m.weight.requires_grad
    # the block's allow-list ends with it
    with pytest.raises(RuntimeError, match="torch.nn.modules.linear.Linear"):
        ft.load(WHOLE)
    # weights_only=False rebuilds ferrotorch's own nn classes
    m2 = ft.load(WHOLE, weights_only=False)
    assert ft.equal(m2.weight, m.weight) and ft.equal(m2.bias, m.bias)
    assert m2(ft.ones(1, 2)).shape == (1, 2)


def test_add_safe_globals_and_clear():
    try:
        ft.serialization.add_safe_globals([ft.nn.Linear])
        assert ft.nn.Linear in ft.serialization.get_safe_globals()
        assert isinstance(ft.load(WHOLE), ft.nn.Linear)
    finally:
        ft.serialization.clear_safe_globals()
    assert ft.serialization.get_safe_globals() == []
    with pytest.raises(TypeError):
        ft.serialization.add_safe_globals([3])


def test_an_allow_listed_class_of_ours_round_trips(tmp_path):
    p = str(tmp_path / "pt.pt")
    ft.save({"p": Point(1, [2.5, ft.arange(3)])}, p)
    with pytest.raises(RuntimeError, match=f"{__name__}.Point"):
        ft.load(p)
    # weights_only=False is no escape hatch: the class is still not allowed
    with pytest.raises(RuntimeError, match="never calls anything else"):
        ft.load(p, weights_only=False)
    with ft.serialization.safe_globals([Point]):
        got = ft.load(p)["p"]
    assert type(got) is Point and got.x == 1 and got.y[0] == 2.5 and got.y[1].tolist() == [0, 1, 2]


def test_a_file_naming_a_callable_is_refused_even_with_weights_only_false(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    import zipfile

    p = str(tmp_path / "evil.pt")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("evil/data.pkl", pickle.dumps(Evil(), protocol=2))
        z.writestr("evil/byteorder", "little")
    for wo in (True, False):
        with pytest.raises(RuntimeError, match="names the global (posix|os).system"):
            ft.load(p, weights_only=wo)
    assert not os.path.exists(tmp_path / "pwned")


def test_a_whole_model_saved_in_one_program_loads_in_another(tmp_path):
    (tmp_path / "netdef.py").write_text(textwrap.dedent("""
        import ferrotorch as torch
        import ferrotorch.nn as nn

        class CharModel(nn.Module):
            def __init__(self, vocab=7, d=8):
                super().__init__()
                self.emb = nn.Embedding(vocab, d)
                self.gru = nn.GRU(d, d, batch_first=True)
                self.head = nn.Linear(d, vocab)

            def forward(self, idx):
                y, _ = self.gru(self.emb(idx))
                return self.head(y)
    """))
    save = textwrap.dedent(f"""
        import ferrotorch as torch, netdef
        torch.manual_seed(0)
        m = netdef.CharModel()
        torch.save(m, {str(tmp_path / 'model.pt')!r})
        torch.save(m(torch.tensor([[1, 2, 3]])), {str(tmp_path / 'out.pt')!r})
    """)
    load = textwrap.dedent(f"""
        import ferrotorch as torch, netdef
        from ferrotorch import nn
        with torch.serialization.safe_globals([netdef.CharModel, nn.Embedding, nn.GRU, nn.Linear]):
            m = torch.load({str(tmp_path / 'model.pt')!r})
        want = torch.load({str(tmp_path / 'out.pt')!r})
        got = m(torch.tensor([[1, 2, 3]]))
        assert type(m).__name__ == "CharModel"
        assert torch.allclose(got, want), (got, want)
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    for src in (save, load):
        r = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_whole_modules_cross_to_torch_and_back(tmp_path):
    torch = pytest.importorskip("torch")
    ft.manual_seed(0)
    m = ft.nn.Sequential(ft.nn.Conv2d(1, 2, 3), ft.nn.BatchNorm2d(2), ft.nn.ReLU(), ft.nn.Flatten(),
                         ft.nn.Linear(8, 3)).eval()
    x = ft.randn(2, 1, 4, 4)
    p = str(tmp_path / "ours.pt")
    ft.save(m, p)
    t = torch.load(p, weights_only=False)
    assert type(t) is torch.nn.Sequential and type(t[1]) is torch.nn.BatchNorm2d
    with torch.no_grad():
        want = t.eval()(torch.from_dlpack(x.contiguous()))
    with ft.no_grad():
        got = m(x)
    assert (torch.from_dlpack(got) - want).abs().max().item() < 1e-6
    # torch's weights_only loader takes it with torch's own allow-list
    with torch.serialization.safe_globals([torch.nn.Sequential, torch.nn.Conv2d, torch.nn.BatchNorm2d,
                                           torch.nn.ReLU, torch.nn.Flatten, torch.nn.Linear]):
        assert type(torch.load(p)) is torch.nn.Sequential
    # and a module torch saved whole loads here
    q = str(tmp_path / "torch.pt")
    torch.save(t, q)
    back = ft.load(q, weights_only=False)
    assert type(back) is ft.nn.Sequential and type(back[4]) is ft.nn.Linear
    with ft.no_grad():
        assert (back.eval()(x) - got).abs().max().item() < 1e-6


def test_load_options_ferrotorch_cannot_honour_are_errors_not_ignored():
    import mmap

    s = ft.serialization
    s.set_default_load_endianness(s.LoadEndianness.LITTLE)
    assert s.get_default_load_endianness() is s.LoadEndianness.LITTLE
    s.set_default_load_endianness(None)
    with pytest.raises(RuntimeError, match="BIG is not supported"):
        s.set_default_load_endianness(s.LoadEndianness.BIG)
    with s.set_default_mmap_options(mmap.MAP_PRIVATE):
        assert s.get_default_mmap_options() == mmap.MAP_PRIVATE
    assert s.get_default_mmap_options() is None
    with pytest.raises(RuntimeError, match="MAP_PRIVATE only"):
        s.set_default_mmap_options(mmap.MAP_SHARED)


def test_get_unsafe_globals_of_a_path_and_a_file_object():
    with open(WHOLE, "rb") as f:
        assert ft.serialization.get_unsafe_globals_in_checkpoint(f) == ["torch.nn.modules.linear.Linear"]
