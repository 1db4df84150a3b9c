#!/usr/bin/env python3
"""A differential test of ferrotorch against PyTorch on PyTorch's own
OpInfo samples (``torch.testing._internal.common_methods_invocations.op_db``;
issue 25's measure).

For every OpInfo entry: its float32 samples are run through torch and
through ferrotorch (the op found by the same name: ``linalg.solve``,
``nn.functional.conv2d``, ``special.i0``, else the method of the first
tensor), and the results compared (structure, shapes, dtypes, values); its
float64 samples with ``requires_grad`` are differentiated in both (a
weighted sum of the differentiable outputs, the same weights on both
sides) and the gradients compared. An entry passes when every sample
does. A sample torch itself refuses is skipped. Run with a Python that has
both packages (torch, numpy, expecttest; ferrotorch on PYTHONPATH):

    PYTHONPATH=crates/ferrotorch-python/python /path/to/torch-venv/bin/python \\
        bench/opinfo_diff.py [--ops add,sum] [--max-samples 12] [--json out.json]

It prints each failing entry's first reason and the counts. With
``--fixtures FILE`` it also stores the passing entries' samples and torch's
results (values and float64 gradients) for
``crates/ferrotorch-python/tests/test_opinfo_fixtures.py``, which replays
them without torch (the committed file is
``crates/ferrotorch-python/tests/fixtures/opinfo.json.gz``).
"""
import argparse
import json
import math
import sys
import traceback

import numpy as np
import torch
import ferrotorch as ft

RTOL = {torch.float32: 1.3e-5, torch.float64: 1e-7}
ATOL = {torch.float32: 1e-5, torch.float64: 1e-7}


class Unsupported(Exception):
    """A value ferrotorch has no form for yet (complex, a Generator, ...)."""


def dtype_to_ft(d):
    name = str(d).replace("torch.", "")
    got = getattr(ft, name, None)
    if got is None:
        raise Unsupported(f"dtype {name}")
    return got


def to_ft(x):
    """A torch value (or a structure of them) as ferrotorch's."""
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided:
            raise Unsupported(f"layout {x.layout}")
        if x._base is not None and not x.is_conj() and not x.is_neg() and x.dim():
            # a view keeps its geometry over the whole storage (partial views)
            n = x.untyped_storage().nbytes() // x.element_size()
            whole = to_ft(torch.as_strided(x.detach(), (n,), (1,), 0).clone())
            t = whole.as_strided(tuple(x.shape), x.stride(), x.storage_offset())
            if x.requires_grad:
                t.requires_grad_(True)
            return t
        src = x.detach().cpu().resolve_conj().contiguous()
        if src.dtype == torch.bfloat16:  # NumPy has no bfloat16: through float32
            src = src.float()
        arr = src.numpy().copy()
        t = ft.tensor(arr) if arr.ndim else ft.tensor(arr.item(), dtype=dtype_to_ft(x.dtype))
        if t.dtype != dtype_to_ft(x.dtype):
            t = t.to(dtype_to_ft(x.dtype))
        if x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, torch.dtype):
        return dtype_to_ft(x)
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.device):
        return str(x)
    if isinstance(x, torch.memory_format):
        return getattr(ft, str(x).replace("torch.", ""))
    if isinstance(x, torch.layout):
        if x != torch.strided:
            raise Unsupported(f"layout {x}")
        return ft.strided
    if isinstance(x, torch.Generator):
        raise Unsupported(type(x).__name__)
    if isinstance(x, torch.nn.Module) and type(x).__module__.startswith("torch.nn.modules"):
        # a module argument (distance_function=PairwiseDistance()): ours of
        # the same class and settings
        mine = getattr(ft.nn, type(x).__name__, None)
        if mine is None or list(x.parameters()) or list(x.buffers()):
            raise Unsupported(f"a module argument {type(x).__name__}")
        out = mine.__new__(mine)
        ft.nn.Module.__init__(out)
        for k, v in vars(x).items():
            if not k.startswith("_"):
                setattr(out, k, to_ft(v))
        return out
    if isinstance(x, tuple):
        return tuple(to_ft(v) for v in x)
    if isinstance(x, list):
        return [to_ft(v) for v in x]
    if isinstance(x, dict):
        return {k: to_ft(v) for k, v in x.items()}
    if callable(x) and not isinstance(x, (int, float, bool, str)):
        raise Unsupported("a callable argument")
    return x


def resolve(name, first, method_first=False):
    """ferrotorch's function for OpInfo ``name``, or the method of the
    first tensor argument (first, where the OpInfo has a method variant:
    its function may take the arguments in another order, as
    ``where(condition, self, other)``); None when neither exists. A
    property (``x.T``) comes back as its value."""
    if name.startswith("torch."):  # torch.ops.aten.x, torch._scaled_mm: the same path in ferrotorch
        name = name[len("torch."):]
    leaf = name.split(".")[-1]
    if method_first and isinstance(first, ft.Tensor) and hasattr(first, leaf):
        return getattr(first, leaf), True
    obj = ft
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None and callable(obj) and not isinstance(obj, ft.dtype):
        return obj, False
    # a namespaced name (``masked.sum``, ``signal.windows.hann``) is that
    # namespace's function: the tensor method of the same leaf is another op
    if "." not in name and isinstance(first, ft.Tensor) and hasattr(first, leaf):
        return getattr(first, leaf), True
    return None, False


def flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(flat(o))
        return r
    return [out]


# torch's float64 gradient carries its own approximation error here (its
# rational fits of J0/J1/Y0/Y1 are off by up to 1.6e-7 in their derivative
# near |x| = 5.5, against the power series summed exactly; ours agrees with
# the series to 1e-16): the gradient is compared with this absolute
# tolerance instead.
TORCH_INEXACT_GRAD = {"special.bessel_j0": 1e-6, "special.bessel_j1": 1e-6,
                      "special.bessel_y0": 1e-6, "special.bessel_y1": 1e-6}


def compare(want, got, dtype, where="output", atol=None):
    """None when `got` (ferrotorch) matches `want` (torch), else why not."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, ft.Tensor):
            return f"{where}: expected a tensor, got {type(got).__name__}"
        if tuple(want.shape) != tuple(got.shape):
            return f"{where}: shape {tuple(got.shape)} != torch's {tuple(want.shape)}"
        wd = str(want.dtype).replace("torch.", "")
        gd = str(got.dtype).replace("torch.", "").replace("ferrotorch.", "")
        if wd != gd:
            return f"{where}: dtype {gd} != torch's {wd}"
        if want._is_zerotensor():
            want = torch.zeros(want.shape, dtype=want.dtype)
        got = got.resolve_conj()  # a lazily conjugated result reads as its values
        lowp = want.dtype in (torch.bfloat16, torch.float16)
        if want.dtype == torch.complex32:  # NumPy has no complex32: compare the float16 parts
            want, got, lowp = torch.view_as_real(want.detach()), ft.view_as_real(got.detach()), True
        if want.dtype == torch.bfloat16:  # NumPy has no bfloat16: compare in float32
            want, got = want.float(), got.float()
        w = want.detach().cpu().resolve_conj().numpy()
        g = np.asarray(got.detach().numpy())
        if want.is_complex():
            # compared as (re, im) pairs, with the tolerances of the parts
            w, g = np.stack([w.real, w.imag], -1), np.stack([g.real, g.imag], -1)
            dtype = dtype.to_real()
        if w.dtype == np.bool_ or np.issubdtype(w.dtype, np.integer):
            if not np.array_equal(w, g):
                return f"{where}: values differ"
            return None
        tol = want.dtype.to_real() if want.dtype.to_real() in RTOL else dtype
        rtol, atol = RTOL.get(tol, 1e-3), atol or ATOL.get(tol, 1e-3)
        if lowp:
            rtol, atol = 1e-2, 1e-2
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        if not np.allclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True):
            err = np.nanmax(np.abs(g64 - w64)) if w64.size else 0
            return f"{where}: values differ (max abs diff {err:.3g})"
        return None
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{where}: expected a sequence of {len(want)}, got {type(got).__name__}"
        for i, (a, b) in enumerate(zip(want, got)):
            why = compare(a, b, dtype, f"{where}[{i}]", atol)
            if why:
                return why
        return None
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return None if want == got else f"{where}: {got!r} != torch's {want!r}"
    if isinstance(want, (int, float)):
        try:
            ok = math.isclose(float(got), float(want), rel_tol=1e-5, abs_tol=1e-6) or (
                math.isnan(float(want)) and math.isnan(float(got)))
        except (TypeError, ValueError):
            return f"{where}: {got!r} != torch's {want!r}"
        return None if ok else f"{where}: {got!r} != torch's {want!r}"
    if isinstance(want, torch.dtype):
        return None if str(want).replace("torch.", "") in str(got) else f"{where}: {got} != {want}"
    if isinstance(want, torch.Size):
        return None if tuple(want) == tuple(got) else f"{where}: {got} != {want}"
    return None


def _rebound(f):
    """An OpInfo's own wrapper (``lambda tensors, equation:
    torch.einsum(equation, tensors)``) with ``torch`` meaning ferrotorch,
    or None when the op is not such a wrapper."""
    import types

    if not isinstance(f, types.FunctionType):
        return None
    # only the OpInfo files' own wrappers: a library function (torch.masked,
    # torch.signal) is torch's implementation, not a spelling of the call
    if not (f.__module__ or "").startswith("torch.testing._internal"):
        return None
    def code_names(code):
        # the names a wrapper and the lambdas nested in it use
        out = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                out |= code_names(c)
        return out

    names = code_names(f.__code__)
    if "torch" not in names or f.__closure__:
        return None
    g = dict(f.__globals__)
    g["torch"] = ft
    if "wrapper_set_seed" in names:
        # torch's seeding wrapper, seeding ours (the generators agree)
        def seeded(fn, *args, **kwargs):
            ft.manual_seed(42)
            return fn(*args, **kwargs)
        g["wrapper_set_seed"] = seeded
    if "F" in g:
        g["F"] = ft.nn.functional
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__)


def call_both(op, sample):
    """(torch's result, ferrotorch's result, its inputs) for one sample."""
    args = (sample.input, *sample.args)
    want = op(*args, **sample.kwargs)
    wrapper = _rebound(op.op)
    if wrapper is not None:
        f_args = to_ft(args)
        if op.name.endswith("_") and f_args and isinstance(f_args[0], ft.Tensor):
            f_args = (f_args[0].clone(), *f_args[1:])
        try:
            got = wrapper(*f_args, **to_ft(dict(sample.kwargs)))
        except AttributeError as e:
            raise LookupError(f"ferrotorch lacks what {op.name} uses: {e}") from e
        return want, got, args, f_args
    f_args = to_ft(args)
    if op.name.endswith("_") and f_args and isinstance(f_args[0], ft.Tensor):
        # in-place entries run on a copy of the input (their OpInfo op
        # clones it first)
        f_args = (f_args[0].clone(), *f_args[1:])
    f_kwargs = to_ft(dict(sample.kwargs))
    method_first = op.method_variant is not None and op.name.split(".")[0] not in ("nn", "special", "linalg", "fft")
    fn, method = resolve(op.name, f_args[0] if f_args else None, method_first)
    if fn is None:
        raise LookupError(f"ferrotorch has no {op.name}")
    if method and not callable(fn):
        got = fn  # a property: x.T, x.mH
    elif method:
        got = fn(*f_args[1:], **f_kwargs)
    else:
        got = fn(*f_args, **f_kwargs)
    return want, got, args, f_args


def leaves(xs, lib_tensor):
    return [x for x in flat(list(xs)) if isinstance(x, lib_tensor) and x.requires_grad]


# torch's own gradient is wrong here (it fails torch's gradcheck: the input
# gradient of as_strided_scatter is the complement of the covered
# positions): ferrotorch's gradient is checked numerically instead
TORCH_WRONG_GRAD = {"as_strided_scatter"}


def _numerical_check(op, sample):
    """None when ferrotorch's gradients pass gradcheck on the sample's
    tensor arguments, else why not."""
    f_args = list(to_ft((sample.input, *sample.args)))
    f_kwargs = to_ft(dict(sample.kwargs))
    fn, _ = resolve(op.name, None)
    pos = [i for i, a in enumerate(f_args) if isinstance(a, ft.Tensor) and a.requires_grad]

    def f(*ins):
        args = list(f_args)
        for i, t in zip(pos, ins):
            args[i] = t
        return fn(*args, **f_kwargs)

    try:
        ok = ft.autograd.gradcheck(f, tuple(f_args[i] for i in pos), raise_exception=False)
    except Exception as e:  # noqa: BLE001
        return f"gradcheck raised {type(e).__name__}: {e}"
    return None if ok else "gradcheck failed"


def grads(op, sample):
    """None when both libraries give the same gradients, else why not."""
    if op.name in TORCH_WRONG_GRAD:
        return _numerical_check(op, sample)
    want, got, args, f_args = call_both(op, sample)
    want, got = sample.output_process_fn_grad(want), sample.output_process_fn_grad(got)
    t_outs = [o for o in flat(want) if isinstance(o, torch.Tensor) and o.requires_grad]
    f_outs = [o for o in flat(got) if isinstance(o, ft.Tensor) and o.requires_grad]
    if not t_outs:
        return None
    if len(f_outs) != len(t_outs):
        return f"{len(f_outs)} differentiable outputs, torch has {len(t_outs)}"
    t_in, f_in = leaves(args, torch.Tensor), leaves(f_args, ft.Tensor)
    if len(t_in) != len(f_in):
        return "inputs differ"
    gen = np.random.default_rng(0)
    t_loss, f_loss = 0, 0
    for a, b in zip(t_outs, f_outs):
        # a complex output enters the (real) loss through its real view
        if a.is_complex():
            a, b = torch.view_as_real(a.resolve_conj()), ft.view_as_real(b)
        w = gen.standard_normal(tuple(a.shape)).astype(np.float64)
        t_loss = t_loss + (a * torch.from_numpy(w).to(a.dtype)).sum()
        f_loss = f_loss + (b * ft.tensor(w).to(b.dtype)).sum()
    t_g = torch.autograd.grad(t_loss, t_in, allow_unused=True)
    f_g = ft.autograd.grad(f_loss, f_in, allow_unused=True)
    for i, (a, b) in enumerate(zip(t_g, f_g)):
        if a is None and b is None:
            continue
        if a is None:
            a = torch.zeros_like(t_in[i])
        if b is None:
            b = ft.zeros(tuple(f_in[i].shape), dtype=f_in[i].dtype)
        why = compare(a, b, torch.float64, f"grad[{i}]", TORCH_INEXACT_GRAD.get(op.name))
        if why:
            return why
    return None


# ops whose values are random (or uninitialised memory): only their
# shapes and dtypes are compared
RANDOM = {"bernoulli", "multinomial", "empty", "empty_like", "new_empty", "empty_strided",
          "rand_like", "randn_like", "randint_like", "randint", "randn", "rand", "normal",
          "uniform", "cauchy", "exponential", "geometric", "log_normal", "nn.functional.dropout",
          "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
          "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "new_empty_strided",
          "empty_permuted", "randperm"}


def _random(op, sample=None):
    """Whether the op (or this sample of it: attention with dropout) has
    random values."""
    if sample is not None and float(sample.kwargs.get("dropout_p", 0) or 0) > 0:
        return True
    return op.name in RANDOM or op.name.replace("_", "") in RANDOM


def _error_verdict(op, sample, e, what):
    """The entry's status for an error on one sample: missing,
    unsupported, or a failure; None when torch refuses the sample too
    (not ours to match)."""
    if isinstance(e, LookupError):
        return "missing", str(e)
    if isinstance(e, Unsupported):
        return "unsupported", str(e)
    try:
        op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001
        return None
    return "fail", f"{what} {type(e).__name__}: {str(e)[:160]}"


def _float64_result(op, sample):
    """torch's result for the sample computed in float64 from the same
    inputs, cast back to float32 (without the sample's gauge fixing)."""
    from torch.utils._pytree import tree_map

    up = lambda x: x.double() if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x  # noqa: E731
    down = lambda x: x.float() if isinstance(x, torch.Tensor) and x.dtype == torch.float64 else x  # noqa: E731
    return tree_map(down, op(*tree_map(up, (sample.input, *sample.args)),
                             **tree_map(up, dict(sample.kwargs))))


def _closer_to_exact(op, sample, got):
    """Whether ferrotorch's float32 result matches torch's computed in
    float64 from the same inputs (where torch's own float32 rounding is
    what differs: matrix_exp, long reductions)."""
    try:
        exact = _float64_result(op, sample)
        exact = sample.output_process_fn_grad(exact)
    except Exception:  # noqa: BLE001
        return False
    return compare(exact, got, torch.float32) is None


def check_entry(op, max_samples):
    """(status, reason): 'pass', 'fail', 'missing' or 'unsupported'."""
    fn, _ = resolve(op.name, None)
    ran = 0
    # float32, or for ops without it (bitwise, shifts) their first integer type
    dtypes = op.supported_dtypes("cpu")
    sample_dtype = torch.float32 if torch.float32 in dtypes else next(
        (d for d in (torch.int64, torch.int32, torch.bool) if d in dtypes), torch.float32)
    try:
        samples = list(op.sample_inputs("cpu", sample_dtype, requires_grad=False))
    except Exception as e:  # noqa: BLE001
        return "skip", f"no float32 samples: {type(e).__name__}"
    for s in samples[:max_samples]:
        try:
            want, got, _, _ = call_both(op, s)
            # the sample's own gauge fixing (eigenvectors up to sign: abs)
            want, got = s.output_process_fn_grad(want), s.output_process_fn_grad(got)
        except Exception as e:  # noqa: BLE001
            verdict = _error_verdict(op, s, e, "raised")
            if verdict is None:
                continue
            return verdict
        why = compare(want, got, sample_dtype)
        if why and _random(op, s) and "values differ" in why:
            why = None  # random ops: shapes and dtypes only
        if why and "values differ" in why and _closer_to_exact(op, s, got):
            why = None  # torch's float32 result is the less exact one
        if why:
            return "fail", why
        ran += 1
    if op.supports_autograd and torch.float64 in op.supported_dtypes("cpu") and not _random(op):
        try:
            gsamples = list(op.sample_inputs("cpu", torch.float64, requires_grad=True))
        except Exception:  # noqa: BLE001
            gsamples = []
        for s in gsamples[:max_samples]:
            if _random(op, s):
                continue
            try:
                why = grads(op, s)
            except Exception as e:  # noqa: BLE001
                verdict = _error_verdict(op, s, e, "backward raised")
                if verdict is None:
                    continue
                return verdict
            if why:
                return "fail", "float64 " + why
    if ran == 0 and fn is None:
        return "missing", f"ferrotorch has no {op.name}"
    return "pass", ""


# --- committed fixtures: the harness's verdicts replayed without torch ----

FIXTURE_MAX_ELEMS = 600


def _enc(x):
    """A JSON form of a sample value (tensors as dtype, shape, values)."""
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided or x.numel() > FIXTURE_MAX_ELEMS:
            raise Unsupported("not stored")
        # complex values are stored as (re, im) pairs
        v = torch.view_as_real(x.detach().resolve_conj()) if x.is_complex() else x.detach()
        return {"t": str(x.dtype).replace("torch.", ""), "s": list(x.shape),
                "v": v.reshape(-1).tolist(), "g": bool(x.requires_grad)}
    if isinstance(x, torch.dtype):
        return {"dtype": str(x).replace("torch.", "")}
    if isinstance(x, (tuple, list)):  # torch.Size included
        return {"seq": [_enc(v) for v in x], "tuple": isinstance(x, tuple)}
    if isinstance(x, dict):
        return {"dict": {k: _enc(v) for k, v in x.items()}}
    if x is None or isinstance(x, (bool, int, float, str)):
        return {"py": x}
    raise Unsupported(type(x).__name__)


def _identity_gauge(sample):
    """Whether the sample's output_process_fn_grad leaves outputs as they
    are (it is there to fix a gauge: eigenvector signs, ...)."""
    probe = (torch.ones(2, 2), torch.ones(2, 2))
    try:
        out = sample.output_process_fn_grad(probe)
    except Exception:  # noqa: BLE001
        return False
    if out is probe:
        return True
    return isinstance(out, tuple) and len(out) == 2 and out[0] is probe[0] and out[1] is probe[1]


def fixture_records(op, max_samples=2):
    """Stored samples of a passing entry: inputs, torch's outputs, and for
    one float64 sample the output weights and torch's input gradients.
    Only entries called by name (no OpInfo wrapper) whose samples need no
    gauge fixing are stored."""
    if _rebound(op.op) is not None or _random(op):
        return []
    recs = []
    for s in list(op.sample_inputs("cpu", torch.float32, requires_grad=False)):
        if len(recs) >= max_samples:
            break
        if not _identity_gauge(s):
            return []
        if _random(op, s):
            continue
        if op.name.startswith("as_strided") and getattr(s.input, "_base", None) is not None:
            return []  # reads the storage around a view, which fixtures do not keep
        try:
            args = (s.input, *s.args)
            want = op(*args, **s.kwargs)
            rec = {"args": _enc(args), "kwargs": _enc(dict(s.kwargs)), "out": _enc(want)}
            # where torch's float32 rounding is what the harness forgave
            # (_closer_to_exact), the float64 result is stored beside it
            exact = _float64_result(op, s)
            if any(isinstance(a, torch.Tensor) and a.is_floating_point() and not torch.allclose(
                    a, b, rtol=RTOL[torch.float32], atol=ATOL[torch.float32], equal_nan=True)
                   for a, b in zip(flat(want), flat(exact)) if isinstance(b, torch.Tensor)
                   and a.shape == b.shape and a.dtype == b.dtype):
                rec["exact"] = _enc(exact)
            recs.append(rec)
        except Exception:  # noqa: BLE001
            continue
    if (op.supports_autograd and torch.float64 in op.supported_dtypes("cpu")
            and op.name not in TORCH_WRONG_GRAD and op.name not in TORCH_INEXACT_GRAD):
        for s in list(op.sample_inputs("cpu", torch.float64, requires_grad=True))[:3]:
            if _random(op, s):
                continue
            try:
                args = (s.input, *s.args)
                want = op(*args, **s.kwargs)
                outs = [torch.view_as_real(o.resolve_conj()) if o.is_complex() else o
                        for o in flat(want) if isinstance(o, torch.Tensor) and o.requires_grad]
                ins = leaves(args, torch.Tensor)
                if not outs or not ins:
                    continue
                gen = np.random.default_rng(0)
                ws = [torch.from_numpy(gen.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
                loss = sum((o * w).sum() for o, w in zip(outs, ws))
                gs = torch.autograd.grad(loss, ins, allow_unused=True)
                gs = [torch.zeros_like(i) if g is None else g for g, i in zip(gs, ins)]
                recs.append({"args": _enc(args), "kwargs": _enc(dict(s.kwargs)),
                             "weights": _enc(ws), "grads": _enc(list(gs))})
                break
            except Exception:  # noqa: BLE001
                continue
    return recs


def main():
    from torch.testing._internal.common_methods_invocations import op_db

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", help="comma-separated OpInfo names (default: all)")
    p.add_argument("--max-samples", type=int, default=12)
    p.add_argument("--json", help="write {entry: [status, reason]} here")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--fixtures", help="write the passing entries' samples (gzipped JSON) here")
    a = p.parse_args()
    wanted = set(a.ops.split(",")) if a.ops else None
    torch.set_num_threads(1)
    results = {}
    fixtures = {}
    for op in op_db:
        key = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if wanted and op.name not in wanted and key not in wanted:
            continue
        torch.manual_seed(0)
        try:
            status, why = check_entry(op, a.max_samples)
        except Exception as e:  # noqa: BLE001
            status, why = "fail", f"harness: {type(e).__name__}: {e}"
            if not a.quiet:
                traceback.print_exc()
        results[key] = (status, why)
        if a.fixtures and status == "pass":
            try:
                recs = fixture_records(op)
            except Exception:  # noqa: BLE001
                recs = []
            if recs:
                fixtures[key] = {"name": op.name, "method_first": op.method_variant is not None
                                 and op.name.split(".")[0] not in ("nn", "special", "linalg", "fft"),
                                 "records": recs}
        if status != "pass" and not a.quiet:
            print(f"{status:11} {key}: {why}")
    counts = {}
    for status, _ in results.values():
        counts[status] = counts.get(status, 0) + 1
    print(f"{len(results)} OpInfo entries: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=0, sort_keys=True)
    if a.fixtures:
        import gzip

        with gzip.open(a.fixtures, "wt") as f:
            json.dump({"torch": torch.__version__, "entries": fixtures}, f, sort_keys=True)
        print(f"{len(fixtures)} entries stored in {a.fixtures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
