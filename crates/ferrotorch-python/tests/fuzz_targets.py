"""Fuzz and property targets for issue 18, run by ``test_fuzz_targets.py``
in a child process each (a crash fails the test instead of killing the
suite) on a fixed time budget, and by hand for longer:

    PYTHONPATH=crates/ferrotorch-python/python \\
        python crates/ferrotorch-python/tests/fuzz_targets.py TARGET SECONDS [SEED]

Every target draws from ``random.Random(seed)``, so a failure names the
seed and iteration that reproduce it. What each checks:

- ``load``: ``ferrotorch.load`` and the safetensors reader on mutated files
- ``torchscript``: ``ferrotorch.jit.load`` of TorchScript archives torch
  wrote, their code and pickles mutated, then a forward
- ``pickle``: ``ferrotorch.load`` of torch.save files (torch's fixtures and
  ours) whose pickle and storages are mutated and re-zipped with valid CRCs
  (bit flips, cut, spliced and rewritten headers, hostile layout metadata)
  return or raise an ordinary exception; never crash, hang or allocate
  without bound.
- ``foreign``: ``from_numpy``/``as_tensor``/``tensor`` on NumPy arrays of
  random dtypes, shapes, strides, offsets and flags agree with NumPy or
  refuse; objects with arbitrary ``__array_interface__`` fields are never
  read; DLPack capsules built field by field with ctypes (ndim, shape,
  strides, dtype, offset, alignment) are imported correctly or refused.
- ``views``: ``as_strided``, ``view``, ``reshape``, ``expand``, slicing with
  steps, ``narrow``, ``select``, ``permute``, ``transpose``, ``unfold``,
  chained, agree with a naive walk over the storage (or refuse exactly
  when the layout would leave the storage).
- ``indexing``: ``t[idx]`` and ``t[idx] = v`` with ints, slices, None,
  Ellipsis, int lists/tensors (negative and out of range), bool masks
  (right and wrong shapes) and bools agree with NumPy, errors included,
  where torch agrees with NumPy: torch selects ints before advanced
  indices (NumPy broadcasts them together) and refuses a mask with an
  empty dim of the wrong size (NumPy accepts it); those cases follow torch.
"""

import ctypes
import io
import os
import json
import random
import struct
import zipfile
import sys
import time

import numpy as np

import ferrotorch as torch

OK_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, KeyError, OverflowError,
             NotImplementedError, BufferError, OSError)


def _check_clean(e):
    """An ordinary error, not a Rust panic caught at the boundary."""
    assert "internal error" not in str(e), f"a panic reached Python: {e}"


# ---------------------------------------------------------------- load


def _sample_objects(rng):
    t = torch.arange(12.0).reshape(3, 4)
    objs = [
        {"w": torch.randn(4, 3), "b": torch.zeros(3)},
        [t, t[1:], (t.t(), "s", 3, None)],
        {"a.b": torch.ones(2, dtype=torch.int64), "a": {"b": torch.tensor([True])}},
        {(1, "x"): torch.tensor(2.5, dtype=torch.float64), 7: torch.ones(0, 3)},
        torch.arange(5, dtype=torch.int16),
    ]
    return [rng.choice(objs)]


def _mutate(rng, blob):
    b = bytearray(blob)
    kind = rng.randrange(8)
    if kind == 0 and b:  # bit flips
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # cut
        b = b[:rng.randrange(len(b) + 1)]
    elif kind == 2 and b:  # insert or delete bytes
        i = rng.randrange(len(b))
        if rng.random() < 0.5:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        else:
            del b[i:i + rng.randint(1, 16)]
    elif kind == 3 and len(b) >= 8:  # header length
        n = rng.choice([0, 1, 7, 2**31, 2**63, 2**64 - 1, len(b), len(b) - 8, rng.randrange(2**20)])
        b[:8] = struct.pack("<Q", n % 2**64)
    elif kind in (4, 5, 6) and len(b) >= 8:  # rewrite the JSON header
        n = struct.unpack("<Q", bytes(b[:8]))[0]
        try:
            head = json.loads(bytes(b[8:8 + n]))
        except ValueError:
            return bytes(b)
        body = bytes(b[8 + n:])
        _mutate_header(rng, head, kind)
        text = json.dumps(head).encode()
        b = bytearray(struct.pack("<Q", len(text)) + text + body)
    else:  # replace with a random prefix of another format
        b = bytearray(rng.choice([b"PK\x03\x04", b"\x80\x02", b"\x93NUMPY", b"{}", b""]) + bytes(b[4:]))
    return bytes(b)


def _hostile_value(rng):
    return rng.choice([-1, 0, 1, 2**31, 2**63, 2**64, -2**63, 1e308, None, "x", [], {}, [1, 2],
                       [[0, 1]], "F64", "BOOL", "X9", [2**40, 2**40], True, 3.5])


def _mutate_header(rng, head, kind):
    names = [k for k in head if k != "__metadata__"]
    if kind == 4 and names:  # a tensor's dtype, shape or offsets
        entry = head[rng.choice(names)]
        if isinstance(entry, dict):
            field = rng.choice(["dtype", "shape", "data_offsets"])
            if rng.random() < 0.5 and isinstance(entry.get(field), list) and entry[field]:
                entry[field][rng.randrange(len(entry[field]))] = _hostile_value(rng)
            else:
                entry[field] = _hostile_value(rng)
    elif kind == 5:  # the layout metadata
        meta = head.get("__metadata__")
        if isinstance(meta, dict) and "ferrotorch.layout" in meta:
            layout = meta["ferrotorch.layout"]
            choice = rng.randrange(5)
            if choice == 0:
                layout = layout.replace(rng.choice(['"t"', '"d"', '"l"', '"u"', '"v"', '"s"']),
                                        rng.choice(['"t"', '"d"', '"x"', '"s"', '"o"']), 1)
            elif choice == 1:
                layout = "[" * 5000 + "]" * 5000
            elif choice == 2:
                layout = json.dumps({"s": rng.choice(names) if names else "x",
                                     "shape": [rng.choice([0, 1, 3, 2**40, -1])],
                                     "stride": [rng.choice([0, 1, 2**40, -1])],
                                     "offset": rng.choice([0, 5, 2**62, -1])})
            elif choice == 3:
                layout = json.dumps({"t": _hostile_value(rng)})
            else:
                layout = layout[:rng.randrange(len(layout) + 1)]
            meta["ferrotorch.layout"] = layout
        else:
            head["__metadata__"] = _hostile_value(rng)
    elif names:  # duplicate, drop or rename entries
        k = rng.choice(names)
        if rng.random() < 0.5:
            head[k + "2"] = head[k]
        else:
            del head[k]


def fuzz_load(rng):
    obj = _sample_objects(rng)[0]
    if rng.random() < 0.5:  # ferrotorch's own safetensors layout
        from ferrotorch import _serialization
        blob = _serialization._save_safetensors(obj)
    else:
        buf = io.BytesIO()
        torch.save(obj, buf)
        blob = buf.getvalue()
    for _ in range(rng.randint(1, 3)):
        blob = _mutate(rng, blob)
    for fn in (lambda: torch.load(io.BytesIO(blob)), lambda: torch._C._safetensors_load(blob)):
        try:
            fn()
        except OK_ERRORS as e:
            _check_clean(e)


# ---------------------------------------------------------------- pickle

_PT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "torch_pt")
_OPS = [b"(", b")", b"]", b"}", b"t", b"e", b"u", b"s", b"a", b"R", b"b", b"Q", b"h\x00", b"q\x00", b"N",
        b"\x85", b"\x86", b"\x87", b"\x81", b"\x93", b"0", b"1", b"2", b".", b"\x94", b"\x8c\x05torch",
        b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch\nFloatStorage\n", b"ccollections\nOrderedDict\n",
        b"cos\nsystem\n", b"K\xff", b"J\xff\xff\xff\x7f", b"X\xff\xff\xff\x7f", b"\x8a\x08" + b"\xff" * 8]


def _pt_seed(rng):
    """A torch.save file (one torch wrote, or ours) as its entries."""
    if rng.random() < 0.5:
        names = sorted(n for n in os.listdir(_PT) if n.endswith(".pt") and _is_zip(os.path.join(_PT, n)))
        with open(os.path.join(_PT, rng.choice(names)), "rb") as f:
            blob = f.read()
    else:
        buf = io.BytesIO()
        torch.save(_sample_objects(rng)[0], buf)
        blob = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def _is_zip(path):
    with open(path, "rb") as f:
        return f.read(4) == b"PK\x03\x04"


def _fuzz_tar(rng):
    """The tar layout (legacy_tar.pt, the CVE proof of concept) with
    bytes flipped, inserted, cut: a value or an ordinary error."""
    name = rng.choice(["legacy_tar.pt", "cve_2025_32434.pt"])
    with open(os.path.join(_PT, name), "rb") as f:
        b = bytearray(f.read())
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(min(len(b), 4608) + 1)
        kind = rng.randrange(3)
        if kind == 0 and i < len(b):
            b[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            b[i:i] = rng.choice(_OPS)
        else:
            del b[i:i + rng.randint(1, 16)]
    try:
        torch.load(io.BytesIO(bytes(b)))
    except OK_ERRORS as e:
        _check_clean(e)


def fuzz_pickle(rng):
    """ferrotorch.load of torch.save files whose pickle (and storages) are
    mutated and re-zipped with valid CRCs, so the mutations reach the
    pickle reader: every outcome is a value or an ordinary error. One case
    in seven mutates a tar-layout file instead."""
    if rng.random() < 1 / 7:
        return _fuzz_tar(rng)
    entries = _pt_seed(rng)
    out = []
    for name, data in entries:
        b = bytearray(data)
        if name.endswith("data.pkl"):
            for _ in range(rng.randint(1, 4)):
                kind = rng.randrange(5)
                i = rng.randrange(len(b) + 1)
                if kind == 0 and b:
                    b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
                elif kind == 1:
                    b[i:i] = rng.choice(_OPS)
                elif kind == 2:
                    del b[i:i + rng.randint(1, 8)]
                elif kind == 3:
                    b = b[:i]
                else:
                    b[i:i] = b[rng.randrange(len(b) + 1):][:rng.randint(1, 64)]
        elif name.split("/")[-2:-1] == ["data"] and rng.random() < 0.2:
            b = b[:rng.randrange(len(b) + 1)]  # a storage shorter than declared
        out.append((name, bytes(b)))
    if rng.random() < 0.1:
        rng.shuffle(out)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in out:
            z.writestr(name, data)
    try:
        torch.load(io.BytesIO(buf.getvalue()))
    except OK_ERRORS as e:
        _check_clean(e)


# --------------------------------------------------------- torchscript

_TS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ferrotorch-jit", "tests", "fixtures",
                   "torchscript")
_TS_TOKENS = [b"(", b")", b"[", b"]", b",", b".", b"=", b"-", b":", b"\n", b"  ", b"if x:", b"torch.", b"ops.prim.",
              b"self.", b"CONSTANTS.c0", b"annotate(List[int], [])", b"getattr(self, \"0\")", b"int(", b"\"",
              b"9223372036854775807", b"1e308", b"(conv).forward(x, )", b"return ", b"_0, _1, = "]


def fuzz_torchscript(rng):
    """ferrotorch.jit.load of archives PyTorch wrote whose code, pickles
    and version are mutated and re-zipped (Note [Loading TorchScript
    archives]): a module that runs or an ordinary error."""
    name = rng.choice(["cnn", "lstm_attention", "gpt_block", "div_v3"])
    with zipfile.ZipFile(os.path.join(_TS, name + ".pt")) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    out = []
    for n, data in entries:
        b = bytearray(data)
        if (n.endswith(".py") and rng.random() < 0.7) or (n.endswith(".pkl") and rng.random() < 0.2) \
                or (n.endswith("version") and rng.random() < 0.05):
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(b) + 1)
                kind = rng.randrange(4)
                if kind == 0 and b:
                    b[min(i, len(b) - 1)] ^= 1 << rng.randrange(7)
                elif kind == 1:
                    b[i:i] = rng.choice(_TS_TOKENS)
                elif kind == 2:
                    del b[i:i + rng.randint(1, 12)]
                else:
                    b[i:i] = b[rng.randrange(len(b) + 1):][:rng.randint(1, 40)]
        out.append((n, bytes(b)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])) as z:
        for n, data in out:
            z.writestr(n, data)
    try:
        m = torch.jit.load(io.BytesIO(buf.getvalue()))
        x = torch.randn(2, 3, 8, 8) if name == "cnn" else torch.randn(2, 5, 4)
        if name == "gpt_block":
            x = torch.randint(0, 11, (2, 8))
        args = (torch.tensor([7, -7, 9]), torch.tensor([2, 2, 4])) if name == "div_v3" else (x,)
        with torch.no_grad():
            m(*args)
    except OK_ERRORS as e:
        _check_clean(e)


# ------------------------------------------------------------- foreign


NP_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
             np.uint8, np.bool_, np.uint16, np.complex64, ">f8", ">i4"]


def _random_array(rng):
    shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(0, 4)))
    dt = np.dtype(rng.choice(NP_DTYPES))
    n = int(np.prod(shape)) if shape else 1
    if rng.random() < 0.3:  # from a buffer at a random offset
        off = rng.randrange(dt.itemsize + 1)
        raw = bytearray(rng.randrange(256) for _ in range(off + n * dt.itemsize))
        a = np.frombuffer(raw if rng.random() < 0.5 else bytes(raw), dt, count=n, offset=off)
        a = a.reshape(shape)
    else:
        a = (np.arange(n) % 7).astype(dt).reshape(shape)
    if a.ndim >= 2 and rng.random() < 0.4:
        a = a.T
    if a.ndim >= 1 and rng.random() < 0.4:
        a = a[::rng.choice([1, 2, -1])]
    if rng.random() < 0.2 and a.flags.writeable:
        a.flags.writeable = False
    return a


def _same(t, a):
    want = a.astype(np.float64) if a.dtype != np.bool_ else a
    got = t.numpy()
    return got.shape == a.shape and np.array_equal(got.astype(want.dtype), want, equal_nan=True)


def _check_array(rng, a):
    supported = a.dtype.isnative and a.dtype in [np.dtype(d) for d in NP_DTYPES[:9]]
    for name, fn in (("from_numpy", torch.from_numpy), ("as_tensor", torch.as_tensor),
                     ("tensor", torch.tensor)):
        try:
            t = fn(a)
        except OK_ERRORS as e:
            _check_clean(e)
            if name == "tensor" and supported and all(s >= 0 for s in a.strides):
                raise AssertionError(f"tensor() refused a supported array {a.dtype} {a.strides}")
            continue
        assert _same(t, a), (name, a.dtype, a.shape, a.strides)
        if name == "from_numpy" and t.numel():
            assert t.untyped_storage().data_ptr() <= a.ctypes.data
            if not a.flags.writeable:
                try:
                    t.add_(1)
                    raise AssertionError("wrote into a read-only array")
                except RuntimeError:
                    pass


class _Described:
    def __init__(self, iface):
        self.__array_interface__ = iface


def _check_fake_interface(rng):
    iface = {"shape": rng.choice([(4,), (2, 2), (), (2**40,), (-1,), "x"]),
             "typestr": rng.choice(["<f8", "|u1", "<i8", "zz", 5]),
             "data": rng.choice([(8, False), (0, True), (2**63, False), None, "x", (1,)]),
             "version": rng.choice([3, 2, "3"])}
    if rng.random() < 0.5:
        iface["strides"] = rng.choice([(8,), (-8,), (2**62,), None, (3,)])
    fake = _Described(iface)
    for fn in (torch.from_numpy, torch.as_tensor, torch.tensor, lambda o: torch.ones(4) + o,
               lambda o: torch.ones(4)[o]):
        try:
            fn(fake)
        except OK_ERRORS as e:
            _check_clean(e)
        else:
            raise AssertionError(f"accepted an object that only describes memory: {iface}")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_KEEP = []  # the buffers behind capsules (no deleter is set)


def _check_dlpack(rng):
    """A legacy capsule over a real buffer with fields drawn at random:
    imported values must match a naive read, or the import must refuse."""
    buf = (ctypes.c_double * 64)(*range(64))
    ndim = rng.choice([0, 1, 2, 3, -1, 200])
    shape_vals = [rng.choice([0, 1, 2, 3, -1, 2**40]) for _ in range(max(ndim, 0) if ndim < 10 else 3)]
    stride_vals = [rng.choice([0, 1, 2, 4, -1, 2**62]) for _ in shape_vals]
    shape = (ctypes.c_int64 * max(len(shape_vals), 1))(*shape_vals)
    strides = (ctypes.c_int64 * max(len(stride_vals), 1))(*stride_vals)
    m = _DLManaged()
    m.dl_tensor.data = ctypes.addressof(buf)
    m.dl_tensor.device = _DLDevice(rng.choice([1, 1, 1, 2]), 0)
    m.dl_tensor.ndim = ndim
    m.dl_tensor.dtype = _DLDataType(*rng.choice([(2, 64, 1), (2, 32, 1), (0, 64, 1), (2, 64, 2),
                                                 (5, 8, 1), (2, 16, 1)]))
    m.dl_tensor.shape = shape if rng.random() < 0.9 else None
    m.dl_tensor.strides = strides if rng.random() < 0.7 else None
    m.dl_tensor.byte_offset = rng.choice([0, 0, 8, 4, 2**63])
    _KEEP.append((buf, shape, strides, m))
    del _KEEP[:-64]
    # keep every read in bounds: skip layouts a naive read would leave the buffer with
    reach = 0
    if ndim >= 0 and m.dl_tensor.shape and all(s > 0 for s in shape_vals) and ndim < 10:
        st = stride_vals if m.dl_tensor.strides else None
        if st is None:
            st, acc = [], 1
            for s in reversed(shape_vals):
                st.insert(0, acc)
                acc *= s
        if any(s < 0 for s in st):
            reach = -1
        else:
            reach = sum((n - 1) * s for n, s in zip(shape_vals, st)) + 1
    elem = m.dl_tensor.dtype.bits // 8 or 1
    end = ctypes.addressof(buf) + m.dl_tensor.byte_offset + reach * elem
    in_bounds = 0 <= reach and (m.dl_tensor.byte_offset + reach * elem <= 64 * 8)
    must_refuse = end >= 2**63  # the extent overflows: no memory can be that large
    if not in_bounds and not must_refuse:
        return  # an honest producer never hands out such memory; not a test of ours
    cap = _PyCapsule_New(ctypes.addressof(m), b"dltensor", None)
    try:
        t = torch.from_dlpack(cap)
    except OK_ERRORS as e:
        _check_clean(e)
        return
    assert not must_refuse or t.numel() == 0 or not m.dl_tensor.shape, ("accepted an overflowing "
                                                                       "layout", shape_vals,
                                                                       stride_vals)
    if m.dl_tensor.dtype.code == 2 and m.dl_tensor.dtype.bits == 64 and t.numel():
        flat = np.frombuffer(buf, np.float64)
        off = m.dl_tensor.byte_offset // 8
        st = t.stride()
        for _ in range(min(t.numel(), 20)):
            idx = tuple(rng.randrange(s) for s in t.shape)
            want = flat[off + sum(i * s for i, s in zip(idx, st))]
            assert t[idx].item() == want, (idx, st, off)


def fuzz_foreign(rng):
    kind = rng.randrange(3)
    if kind == 0:
        _check_array(rng, _random_array(rng))
    elif kind == 1:
        _check_fake_interface(rng)
    else:
        _check_dlpack(rng)


# --------------------------------------------------------------- views


def _naive(storage, shape, stride, offset):
    out = np.empty(shape, dtype=storage.dtype)
    for idx in np.ndindex(*shape):
        out[idx] = storage[offset + sum(i * s for i, s in zip(idx, stride))]
    return out


def fuzz_views(rng):
    n = rng.randint(0, 40)
    t = torch.arange(float(n))
    store = np.arange(float(n))  # the storage `t` views, as NumPy sees it
    vals = store.copy()  # what `t` must hold, by NumPy's semantics of each op
    trail = [n]
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(10)
        trail.append(op)
        ptr = t.untyped_storage().data_ptr()
        try:
            if op == 0:
                size = [rng.randint(0, 5) for _ in range(rng.randint(0, 3))]
                stride = [rng.randint(0, 6) for _ in size]
                off = rng.randint(0, len(store) + 2)
                reach = off + sum((a - 1) * b for a, b in zip(size, stride))
                fits = 0 in size or reach < len(store)  # an empty view may sit anywhere
                trail.append((size, stride, off))
                try:
                    t = t.as_strided(size, stride, off)
                except OK_ERRORS as e:
                    _check_clean(e)
                    assert not fits, ("as_strided refused", trail)
                    return
                assert fits, ("as_strided accepted out of bounds", trail)
                want = _naive(store, tuple(size), stride, off)
            elif op == 1:
                t = t.view(*rng.choice([[-1], [t.numel()], [1, -1], [-1, 2], [2, -1, 1]]))
                want = vals.reshape(tuple(t.shape))
            elif op == 2:
                t = t.reshape(rng.choice([[-1], [1, -1], [-1, 3], [3, -1]]))
                want = vals.reshape(tuple(t.shape))
            elif op == 3 and t.dim() >= 1:
                d = rng.randrange(t.dim())
                a, b, st = rng.randint(-6, 6), rng.randint(-6, 8), rng.randint(1, 3)
                idx = [slice(None)] * t.dim()
                idx[d] = slice(a, b, st)
                t = t[tuple(idx)]
                want = vals[tuple(idx)]
            elif op == 4 and t.dim() >= 1:
                d, a, ln = rng.randrange(t.dim()), rng.randint(0, 3), rng.randint(0, 3)
                t = t.narrow(d, a, ln)
                want = vals[(slice(None),) * d + (slice(a, a + ln),)]
                assert want.shape[d] == ln, ("narrow past the end accepted", trail)
            elif op == 5 and t.dim() >= 1:
                d, i = rng.randrange(t.dim()), rng.randint(-3, 3)
                t = t.select(d, i)
                want = np.take(vals, i, axis=d)
            elif op == 6 and t.dim() >= 2:
                t = t.transpose(0, t.dim() - 1)
                want = np.swapaxes(vals, 0, vals.ndim - 1)
            elif op == 7 and t.dim() >= 1:
                perm = list(range(t.dim()))
                rng.shuffle(perm)
                t = t.permute(*perm)
                want = np.transpose(vals, perm)
            elif op == 8:
                new = [rng.choice([s, -1] if s != 1 else [rng.randint(0, 3), -1]) for s in t.shape]
                t = t.expand(*([rng.randint(1, 2)] * rng.randint(0, 1) + new))
                want = np.broadcast_to(vals, tuple(t.shape))
            elif op == 9 and t.dim() >= 1:
                d, size, step = rng.randrange(t.dim()), rng.randint(1, 3), rng.randint(1, 2)
                t = t.unfold(d, size, step)
                win = np.lib.stride_tricks.sliding_window_view(vals, size, axis=d)
                want = win[(slice(None),) * d + (slice(None, None, step),)]
            else:
                continue
        except OK_ERRORS as e:
            _check_clean(e)
            continue
        trail.append((tuple(t.shape), t.stride(), t.storage_offset()))
        assert tuple(t.shape) == want.shape, ("shape", trail, want.shape)
        if t.untyped_storage().data_ptr() != ptr and t.numel():
            # a copy (reshape of a layout no view can express): fresh storage
            store = t.contiguous().numpy().ravel().copy()
        else:
            reach = t.storage_offset() + sum((a - 1) * b for a, b in zip(t.shape, t.stride()))
            assert t.numel() == 0 or reach < len(store), ("a view leaves its storage", trail)
            walked = _naive(store, tuple(t.shape), t.stride(), t.storage_offset())
            assert np.array_equal(walked, want), ("the strides do not give the op's values", trail)
        got = t.contiguous().numpy()  # our own strided copy kernel
        assert np.array_equal(got, want), ("contiguous() differs", trail)
        vals = np.array(want)


# ------------------------------------------------------------ indexing


def _index_item(rng, shape, dim):
    size = shape[dim] if dim < len(shape) else 0
    k = rng.randrange(9)
    if k == 0:
        return rng.randint(-size - 1, size)
    if k == 1:
        return slice(rng.choice([None, rng.randint(-5, 5)]), rng.choice([None, rng.randint(-5, 6)]),
                     rng.choice([None, 1, 2, 3]))
    if k == 2:
        return None
    if k == 3:
        return Ellipsis
    if k == 4:
        return [rng.randint(-size - 1, size) for _ in range(rng.randint(0, 3))]
    if k == 5:
        return np.array([rng.randint(-size, max(size - 1, 0)) for _ in range(rng.randint(1, 3))])
    if k == 6:
        n = size if rng.random() < 0.8 else size + 1
        return np.array([rng.random() < 0.5 for _ in range(n)], dtype=bool)
    if k == 7 and dim + 1 < len(shape):
        return np.ones((shape[dim], shape[dim + 1]), dtype=bool)
    return rng.choice([True, False])


def _as_torch(i):
    if isinstance(i, np.ndarray):
        return torch.tensor(i)
    return i


def fuzz_indexing(rng):
    shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(0, 4)))
    a = np.arange(int(np.prod(shape)) if shape else 1, dtype=np.float64).reshape(shape)
    t = torch.tensor(a)
    items = []
    dim = 0
    for _ in range(rng.randint(1, 3)):
        it = _index_item(rng, shape, dim)
        items.append(it)
        if it is not None and it is not Ellipsis and not isinstance(it, bool):
            dim += it.ndim if isinstance(it, np.ndarray) and it.dtype == bool else 1
    if sum(i is Ellipsis for i in items) > 1:
        return
    if any(isinstance(i, int) and not isinstance(i, bool) for i in items) and \
            any(isinstance(i, (list, np.ndarray, bool)) for i in items):
        return  # torch (and we) select ints first; NumPy treats them as advanced
    idx = tuple(items) if len(items) > 1 or rng.random() < 0.5 else items[0]
    tidx = tuple(_as_torch(i) for i in idx) if isinstance(idx, tuple) else _as_torch(idx)
    try:
        want = a[idx]
        np_err = None
    except (IndexError, ValueError, TypeError) as e:
        np_err = e
    try:
        got = t[tidx]
        err = None
    except OK_ERRORS as e:
        _check_clean(e)
        err = e
    if np_err is not None:
        assert err is not None, ("numpy refused", idx, shape, np_err, "we gave", got.shape)
        return
    if err is not None and "The shape of the mask" in str(err):
        # NumPy lets an empty mask dim stand for any size; torch (and we)
        # require the mask's shape to match
        items = idx if isinstance(idx, tuple) else (idx,)
        if any(isinstance(i, np.ndarray) and i.dtype == bool and 0 in i.shape for i in items):
            return
    assert err is None, ("numpy indexes", idx, shape, "we raised", err)
    assert tuple(got.shape) == np.shape(want), (idx, shape, got.shape, np.shape(want))
    assert np.array_equal(got.numpy(), want), (idx, shape)
    # write a scalar through the same index
    a2, t2 = a.copy(), t.clone()
    a2[idx] = -1.0
    t2[tidx] = -1.0
    assert np.array_equal(t2.numpy(), a2), ("setitem", idx, shape)


# ------------------------------------------------------------------ pt2


_PT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "export")


def _mutate_json(rng, v, depth=0):
    """``v`` with one value somewhere replaced, removed or retyped."""
    if isinstance(v, dict) and v and depth < 12:
        k = rng.choice(list(v))
        r = rng.random()
        if r < 0.1:
            v = dict(v)
            del v[k]
            return v
        if r < 0.25:
            return {**v, k: _hostile_value(rng)}
        return {**v, k: _mutate_json(rng, v[k], depth + 1)}
    if isinstance(v, list) and v and depth < 12:
        i = rng.randrange(len(v))
        r = rng.random()
        if r < 0.1:
            return v[:i] + v[i + 1:]
        if r < 0.2:
            return v + [v[i]]
        return v[:i] + [_mutate_json(rng, v[i], depth + 1)] + v[i + 1:]
    return _hostile_value(rng) if rng.random() < 0.7 else rng.choice(
        ["torch.ops.aten.relu.default", "torch.ops.aten.add.Tensor", "builtins.eval", "p_fc_weight",
         "getitem", {"as_tensor": {"name": "x"}}, {"as_int": 3}, {"as_ints": [1, 2]}])


def fuzz_pt2(rng):
    """ferrotorch.export.load of .pt2 archives PyTorch wrote with their
    JSON (program, weight configs) mutated structurally, their weight
    bytes cut or flipped, or the zip itself mutated; then the module runs
    on the fixture's input: a program that runs or an ordinary error."""
    name = rng.choice(["cnn", "cnn_core", "bn_train"])
    with zipfile.ZipFile(os.path.join(_PT2, name + ".pt2")) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    out = []
    for n, data in entries:
        if n.endswith(".json") and rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                data = json.dumps(_mutate_json(rng, json.loads(data))).encode()
        elif "/weights/weight_" in n and rng.random() < 0.1:
            data = _mutate(rng, data)
        out.append((n, data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, data in out:
            z.writestr(n, data)
    blob = buf.getvalue()
    if rng.random() < 0.1:
        blob = _mutate(rng, blob)
    x = torch.randn(2, 3, 8, 8) if name != "bn_train" else torch.randn(5, 3)
    try:
        ep = torch.export.load(io.BytesIO(blob))
        with torch.no_grad():
            ep.module()(x)
    except OK_ERRORS as e:
        _check_clean(e)


TARGETS = {"load": fuzz_load, "pickle": fuzz_pickle, "torchscript": fuzz_torchscript, "foreign": fuzz_foreign, "views": fuzz_views,
           "indexing": fuzz_indexing, "pt2": fuzz_pt2}


def run(name, seconds, seed=0):
    """Run target ``name`` for ``seconds``; return the number of cases."""
    fn = TARGETS[name]
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        rng = random.Random(f"{seed}-{i}")
        try:
            fn(rng)
        except BaseException:
            print(f"fuzz {name}: failed at seed {seed}, case {i}", file=sys.stderr)
            raise
        i += 1
    return i


if __name__ == "__main__":
    target, secs = sys.argv[1], float(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else int(time.time())
    print(f"fuzz {target}: seed {seed}, {run(target, secs, seed)} cases, no failure")
