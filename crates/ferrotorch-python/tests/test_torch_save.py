"""ferrotorch.save writes PyTorch's zip format (Note [Writing torch.save
files]): what it writes loads back as it was (sharing, strides,
parameters, a state dict's _metadata), is a standard protocol-2 pickle
naming torch's own rebuild functions and storage classes (read here with
Python's pickle and stand-ins for them), and torch.load(weights_only=True)
reads it when torch is installed."""

import collections
import io
import pickle
import zipfile

import pytest

import ferrotorch as ft


def _obj():
    ft.manual_seed(0)
    m = ft.nn.Sequential(ft.nn.Linear(3, 4), ft.nn.BatchNorm1d(4))
    base = ft.arange(12.0).reshape(3, 4)
    views = [base, base.t(), base[:, 1], base[1:, 2:]]
    obj = {"model": m.state_dict(), "views": views, "again": None, "epoch": 3, "lr": 0.5, "name": "run",
           "big": 2 ** 70, "neg": -5, "raw": b"a\x00\xff", "set": {1, 2}, "frozen": frozenset({3}), "z": 1 - 2j,
           "size": ft.Size([2, 3]), "dtype": ft.float16, "device": ft.device("cpu"),
           "param": ft.nn.Parameter(ft.ones(2)), "still": ft.nn.Parameter(ft.zeros(1), requires_grad=False),
           "dtypes": [ft.ones(2, dtype=d) for d in (ft.bool, ft.uint8, ft.int8, ft.int16, ft.int32, ft.int64,
                                                       ft.float16, ft.bfloat16, ft.float32, ft.float64,
                                                       ft.complex64, ft.complex128)],
           "grad": ft.ones(2).requires_grad_(), "empty": ft.empty(0, 2), "scalar": ft.tensor(1.5),
           "tuple": (1, (2.0, "x"), [None])}
    obj["again"] = obj["views"]
    return obj


def test_what_save_writes_loads_back_as_it_was(tmp_path):
    obj = _obj()
    ft.save(obj, tmp_path / "ck.pt")
    back = ft.load(tmp_path / "ck.pt")
    assert back["again"] is back["views"]
    b, t, col, sub = back["views"]
    assert t.stride() == (1, 4) and col.storage_offset() == 1 and sub.storage_offset() == 6
    assert {v.untyped_storage().data_ptr() for v in back["views"]} == {b.untyped_storage().data_ptr()}
    assert sub.tolist() == [[6.0, 7.0], [10.0, 11.0]]
    assert list(back["model"].keys()) == list(obj["model"].keys())
    assert back["model"]._metadata == obj["model"]._metadata
    for k in obj["model"]:
        assert ft.equal(back["model"][k], obj["model"][k])
    assert isinstance(back["param"], ft.nn.Parameter) and back["param"].requires_grad
    assert not back["still"].requires_grad and back["grad"].requires_grad
    for a, e in zip(back["dtypes"], obj["dtypes"]):
        assert a.dtype == e.dtype and ft.equal(a, e)
    for k in ("epoch", "lr", "name", "big", "neg", "raw", "set", "frozen", "z", "size", "dtype", "tuple"):
        assert back[k] == obj[k] and type(back[k]) is type(obj[k]), k
    assert back["device"] == obj["device"] and back["empty"].shape == (0, 2) and back["scalar"].item() == 1.5


class _Stand:
    """What Python's own unpickler gives for torch's globals here."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args):
        return (self.name, args)


def test_the_file_is_a_standard_pickle_naming_torchs_functions(tmp_path):
    ft.save({"w": ft.arange(6.0).reshape(2, 3)[:, 1:], "sd": collections.OrderedDict(a=ft.ones(1))},
            tmp_path / "model.pt")
    z = zipfile.ZipFile(tmp_path / "model.pt")
    names = z.namelist()
    assert names[0] == "model/data.pkl" and "model/byteorder" in names and "model/data/0" in names
    assert z.read("model/byteorder") == b"little" and z.read("model/version") == b"3\n"
    for i in z.infolist():  # stored, data on 64-byte boundaries, as torch writes
        assert i.compress_type == zipfile.ZIP_STORED

    class Reader(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "collections" and name == "OrderedDict":
                return collections.OrderedDict
            assert (module, name) in {("torch._utils", "_rebuild_tensor_v2"), ("torch", "FloatStorage")}, (module, name)
            return _Stand(f"{module}.{name}")

        def persistent_load(self, pid):
            return pid

    got = Reader(io.BytesIO(z.read("model/data.pkl"))).load()
    name, (pid, offset, size, stride, rg, hooks) = got["w"]
    assert name == "torch._utils._rebuild_tensor_v2" and pid[0] == "storage" and pid[1].name == "torch.FloatStorage"
    assert (pid[3], pid[4], offset, size, stride, rg) == ("cpu", 6, 1, (2, 2), (3, 1), False)
    assert z.read(f"model/data/{pid[2]}") == ft.arange(6.0).numpy().tobytes()


def test_torch_loads_what_save_wrote(tmp_path):
    torch = pytest.importorskip("torch")
    obj = _obj()
    del obj["frozen"]  # torch's weights_only loader refuses frozenset, even its own
    ft.save(obj, tmp_path / "ck.pt")
    got = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert got["again"] is got["views"]
    assert got["views"][1].stride() == (1, 4) and got["views"][3].storage_offset() == 6
    assert got["views"][0].untyped_storage().data_ptr() == got["views"][2].untyped_storage().data_ptr()
    assert got["model"]._metadata == obj["model"]._metadata
    for k, v in obj["model"].items():
        assert got["model"][k].tolist() == v.tolist()
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    m.load_state_dict(got["model"])
    assert isinstance(got["param"], torch.nn.Parameter) and not got["still"].requires_grad
    assert [str(t.dtype) for t in got["dtypes"]] == [str(t.dtype) for t in obj["dtypes"]]
    for k in ("epoch", "lr", "name", "big", "neg", "raw", "set", "z", "tuple"):
        assert got[k] == obj[k], k
    assert list(got["size"]) == [2, 3] and got["dtype"] is torch.float16 and str(got["device"]) == "cpu"


def test_what_the_format_cannot_hold_is_an_error_naming_it(tmp_path):
    # a whole module saves (test_torch_whole_objects.py); a function, an
    # object of a class defined in a function, do not
    with pytest.raises(TypeError, match="cannot save an object of type"):
        ft.save({"f": open}, tmp_path / "m.pt")

    class Local:
        pass

    with pytest.raises(TypeError, match="cannot save an object of type .*Local"):
        ft.save([Local()], tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()  # nothing half-written

