"""ferrotorch.load of files torch.save wrote (Note [Reading torch.save
files], Note [A pickle reader without callables]): the committed
fixtures (fixtures/gen_torch_pt.py) load with torch's values, dtypes,
strides, offsets and shared storages; crafted files that would run code,
or are truncated, corrupted or inconsistent, are refused by name."""

import io
import json
import os
import re
import pickle
import time
import zipfile

import pytest

import ferrotorch as ft
from fixture_compare import load

HERE = os.path.dirname(os.path.abspath(__file__))
PT = os.path.join(HERE, "fixtures", "torch_pt")
CASES = load("torch_pt")


def _check(got, want, path):
    if isinstance(want, dict) and "tensor" in want:
        assert isinstance(got, ft.Tensor) and not isinstance(got, ft.nn.Parameter), path
        assert str(got.dtype) == "torch." + want["tensor"], path
        assert list(got.shape) == want["shape"] and list(got.stride()) == want["stride"], path
        assert got.storage_offset() == want["offset"] and got.requires_grad == want["requires_grad"], path
        vals = got.detach()
        if vals.is_complex():
            vals = ft.view_as_real(vals)
        if vals.dtype in (ft.float16, ft.bfloat16):
            vals = vals.float()
        assert vals.tolist() == want["values"], path
    elif isinstance(want, dict) and "parameter" in want:
        assert isinstance(got, ft.nn.Parameter) and got.requires_grad == want["requires_grad"], path
        _check(got.data, want["parameter"], path)
    elif isinstance(want, dict) and "dict" in want:
        assert type(got).__name__ == want["dict"], path
        assert len(got) == len(want["items"]), path
        for (gk, gv), (wk, wv) in zip(got.items(), want["items"]):
            _check(gk, wk, path + ".key")
            _check(gv, wv, f"{path}[{gk!r}]")
    elif isinstance(want, dict) and ("list" in want or "tuple" in want):
        kind = "list" if "list" in want else "tuple"
        assert type(got).__name__ == kind and len(got) == len(want[kind]), path
        for i, (g, w) in enumerate(zip(got, want[kind])):
            _check(g, w, f"{path}[{i}]")
    elif isinstance(want, dict) and "size" in want:
        assert isinstance(got, ft.Size) and list(got) == want["size"], path
    elif isinstance(want, dict) and "dtype" in want:
        assert str(got) == want["dtype"], path
    elif isinstance(want, dict) and "device" in want:
        assert str(got) == want["device"], path
    elif isinstance(want, dict) and "bytes" in want:
        assert got == bytes(want["bytes"]), path
    elif isinstance(want, dict) and "bigint" in want:
        assert got == int(want["bigint"]), path
    else:
        assert got == want and type(got) is type(want), path


@pytest.mark.parametrize("name", list(CASES))
def test_files_torch_wrote_load_as_torch_loads_them(name):
    got = ft.load(os.path.join(PT, name + ".pt"))
    _check(got, CASES[name]["value"], name)
    for group in CASES[name]["shares"]:
        ptrs = {got[k].untyped_storage().data_ptr() for k in group}
        assert len(ptrs) == 1, group  # views of one storage stay views of one storage
    if "metadata" in CASES[name]:
        assert dict(got._metadata) == CASES[name]["metadata"]


def test_a_loaded_state_dict_restores_the_model():
    ft.manual_seed(1)
    mlp = ft.nn.Sequential(ft.nn.Linear(3, 4), ft.nn.BatchNorm1d(4), ft.nn.Linear(4, 2))
    mlp.load_state_dict(ft.load(os.path.join(PT, "state_dict.pt")))
    want = CASES["state_dict"]["value"]["items"]
    assert mlp[0].weight.tolist() == want[0][1]["values"]
    ck = ft.load(os.path.join(PT, "checkpoint.pt"))
    opt = ft.optim.Adam(mlp.parameters(), lr=0.5)
    opt.load_state_dict(ck["optimizer"])
    assert opt.param_groups[0]["lr"] == 0.01 and ck["epoch"] == 7


@pytest.mark.parametrize("name,message", [
    ("float8", "dtype torch.float8_e4m3fn, which ferrotorch does not have"),
    ("quantized", "torch._utils._rebuild_qtensor"),
    ("whole_module", "torch.nn.modules.linear.Linear"),
    ("traced", "TorchScript archive (torch.jit.save; it has traced/code/"),
])
def test_what_ferrotorch_cannot_hold_is_refused_by_name(name, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ft.load(os.path.join(PT, name + ".pt"))


# ---- crafted files: nothing in them runs, each is refused by name ----

def _zip(pkl, extra=(), name="archive"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}/data.pkl", pkl)
        z.writestr(f"{name}/byteorder", b"little")
        for n, d in extra:
            z.writestr(f"{name}/{n}", d)
    return buf.getvalue()


def _load_bytes(b):
    return ft.load(io.BytesIO(b))


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/ft_pwned",))


@pytest.mark.parametrize("pkl,name", [
    (pickle.dumps(_Evil(), protocol=2), "posix.system"),
    (b"\x80\x02cbuiltins\neval\nX\x04\x00\x00\x001+1\x85R.", "builtins.eval"),
    (b"\x80\x02cbuiltins\ngetattr\n.", "builtins.getattr"),
    # a nested pickle and a torch.load inside the pickle (picklescan bypasses)
    (b"\x80\x02c_pickle\nloads\nC\x01.\x85R.", "_pickle.loads"),
    (b"\x80\x02ctorch.serialization\nload\nX\x01\x00\x00\x00x\x85R.", "torch.serialization.load"),
    (b"\x80\x02ctorch.jit\nload\n.", "torch.jit.load"),
    # a subclass global, and STACK_GLOBAL spelling
    (b"\x80\x04\x8c\x02os\x8c\x06system\x93.", "os.system"),
    (b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\nctorch\nfloat32\nctorch\nTensor\n)}t.", None),
])
def test_globals_outside_the_table_are_refused(pkl, name):
    with pytest.raises(RuntimeError) as e:
        _load_bytes(_zip(pkl))
    if name is not None:
        assert name in str(e.value) and "add_safe_globals" in str(e.value)
    assert not os.path.exists("/tmp/ft_pwned")


def test_opcodes_that_instantiate_are_refused():
    # INST / OBJ (protocol 0 and 1 instantiation), NEWOBJ_EX
    for pkl in (b"(ios\nsystem\nS'x'\n.", b"\x80\x04cbuiltins\nobject\n)}\x92."):
        with pytest.raises(RuntimeError, match="pickle opcode|names the global"):
            _load_bytes(_zip(pkl))


def test_damaged_files_are_errors_naming_the_damage():
    good = open(os.path.join(PT, "views.pt"), "rb").read()
    with pytest.raises(RuntimeError, match="not a complete zip archive"):
        _load_bytes(good[: len(good) // 2])
    # one byte of tensor data flipped: its CRC no longer matches
    z = zipfile.ZipFile(io.BytesIO(good))
    info = next(i for i in z.infolist() if i.filename.endswith("data/0"))
    nlen, elen = int.from_bytes(good[info.header_offset + 26:][:2], "little"), \
        int.from_bytes(good[info.header_offset + 28:][:2], "little")  # the local header's own lengths
    at = info.header_offset + 30 + nlen + elen + 3
    bad = bytearray(good)
    bad[at] ^= 0xFF
    with pytest.raises(RuntimeError, match="is corrupted"):
        _load_bytes(bytes(bad))
    # a storage larger than its entry, and a tensor past its storage
    storage = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK%stQK%s%s%s\x89ctorch\nSize\n)RtR."
    pkl = storage % (b"\x10", b"\x00", b"K\x04\x85", b"K\x01\x85")
    with pytest.raises(RuntimeError, match="should hold 16 elements"):
        _load_bytes(_zip(pkl, [("data/0", b"\x00" * 16)]))
    pkl = storage % (b"\x04", b"\x02", b"K\x04\x85", b"K\x01\x85")
    with pytest.raises(RuntimeError, match="reaches element 5 of a storage of 4"):
        _load_bytes(_zip(pkl, [("data/0", b"\x00" * 16)]))
    with pytest.raises(RuntimeError, match="truncated"):
        _load_bytes(_zip(b"\x80\x02X\xff\xff\x00\x00ab"))
    with pytest.raises(RuntimeError, match="memo entry 7 read before it was written"):
        _load_bytes(_zip(b"\x80\x02h\x07."))


def test_a_memo_bomb_loads_as_shared_objects_in_no_time():
    # 60 levels of lists, each holding the previous one twice: 2**60 leaves
    # if copied; the reader and the loader share them
    ops = [b"\x80\x02]q\x00"]
    for i in range(1, 61):
        ops.append(b"]" + b"q" + bytes([i]) + b"(h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"e")
    pkl = b"".join(ops) + b"."
    t = time.perf_counter()
    got = _load_bytes(_zip(pkl))
    assert time.perf_counter() - t < 2.0
    assert got[0] is got[1] and len(got) == 2


def test_a_dtype_ferrotorch_lacks_is_a_named_error_even_as_a_value():
    # found by the pickle fuzz target: it was an AttributeError from the loader
    with pytest.raises(RuntimeError, match="the dtype torch.float8_e4m3fn, which ferrotorch does not have"):
        _load_bytes(_zip(b"\x80\x02ctorch\nfloat8_e4m3fn\n."))


def test_damaged_legacy_streams_are_errors_naming_the_damage():
    good = open(os.path.join(PT, "legacy_views.pt"), "rb").read()
    assert ft.load(io.BytesIO(good))["col"].tolist() == [2.0, 8.0, 14.0, 20.0]
    for cut, message in ((len(good) - 3, "more than the file holds"), (len(good) // 3, "truncated|ends before"),
                         (20, "truncated|ends before")):
        with pytest.raises(RuntimeError, match=message):
            _load_bytes(good[:cut])
    bad = bytearray(good)
    bad[4] ^= 0xFF  # the magic number
    with pytest.raises(RuntimeError, match="magic number is not torch's"):
        _load_bytes(bytes(bad))


def _mapped_ranges(path):
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith(os.path.realpath(path)):
                lo, hi = line.split()[0].split("-")
                out.append((int(lo, 16), int(hi, 16)))
    return out


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's /proc/self/maps")
def test_mmap_maps_the_storages_and_keeps_writes_private(tmp_path):
    path = tmp_path / "views.pt"
    path.write_bytes(open(os.path.join(PT, "views.pt"), "rb").read())
    sd = ft.load(path, mmap=True)
    ranges = _mapped_ranges(path)
    assert ranges and all(any(lo <= t.data_ptr() < hi for lo, hi in ranges) for t in sd.values() if t.numel())
    _check(sd, CASES["views"]["value"], "views")
    before = path.read_bytes()
    sd["base"][0, 0] = 100.0
    assert sd["t"][0, 0].item() == 100.0 and path.read_bytes() == before  # copy-on-write
    del sd
    import gc
    gc.collect()
    assert _mapped_ranges(path) == []  # unmapped with the last tensor
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        ft.load(os.path.join(PT, "legacy_views.pt"), mmap=True)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        ft.load(io.BytesIO(before), mmap=True)


# ---- the tar layout before 0.4 (fixtures/gen_torch_tar.py) ----

def test_the_legacy_tar_layout_loads_as_torch_loads_it():
    with open(os.path.join(os.path.dirname(__file__), "fixtures", "torch_tar.json")) as f:
        want = json.load(f)["legacy_tar"]
    got = ft.load(os.path.join(PT, "legacy_tar.pt"))
    assert got["epoch"] == 3
    for k, w in want.items():
        assert got[k].tolist() == w["values"] and list(got[k].shape) == w["shape"]
        assert list(got[k].stride()) == w["stride"], k
    # views of one storage stay views of it
    assert got["t"].data_ptr() == got["m"].data_ptr()
    got["m"][0, 1] = 100.0
    assert got["t"][1, 0].item() == 100.0


def test_the_cve_2025_32434_proof_of_concept_is_refused(tmp_path):
    # a tar-layout file whose pickle calls os.system: torch < 2.6 ran it
    # even with weights_only=True
    marker = "/tmp/ferrotorch_cve_poc"
    if os.path.exists(marker):
        os.remove(marker)
    for wo in (True, False):
        with pytest.raises(RuntimeError, match=r"names the global (posix|os)\.system"):
            ft.load(os.path.join(PT, "cve_2025_32434.pt"), weights_only=wo)
    assert not os.path.exists(marker)


def test_damaged_tar_files_are_errors():
    data = open(os.path.join(PT, "legacy_tar.pt"), "rb").read()
    # every cut before the end marker (tar pads the file with zero blocks
    # past it, which a cut may drop harmlessly)
    end = 4096  # the storages member's data ends in the block before it
    for n in range(512, end + 512, 97):
        with pytest.raises(RuntimeError):
            ft.load(io.BytesIO(data[:n]))
    bad = bytearray(data)
    bad[1024 + 5] ^= 0xFF  # the pickle member's header: its checksum fails
    with pytest.raises(RuntimeError):
        ft.load(io.BytesIO(bytes(bad)))
