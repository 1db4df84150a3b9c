#!/usr/bin/env python3
"""An API-surface diff of ferrotorch against PyTorch (issue 49's measure):
for each public module a PyTorch user imports, the public functions and
classes torch defines, which of them ferrotorch lacks, and which exist but
take other arguments.

Run with a Python that has both packages (ferrotorch on PYTHONPATH):

    PYTHONPATH=crates/ferrotorch-python/python /path/to/torch-venv/bin/python \\
        bench/api_diff.py [--missing] [--differ] [--module torch.optim] [--json out.json]

What counts, per module: the names in its ``__all__`` and its other
public names (no leading underscore) whose object is a function or a class
that module (or one below it) defines; callables only (functions,
classes, builtins, op packets): not submodules, not constants (dtypes,
``pi``), not names re-exported from ``typing``, ``collections`` and the
like, nor another torch module's names it imports (``torch.nn.functional.
Tensor``). The rows of ``Tensor``, ``nn.Module`` and ``optim.Optimizer``
count every public attribute of the class (methods and properties; 604 for
``Tensor`` in torch 2.15) and are not in the modules' total. A name is present when
ferrotorch's module of the same path has it; it differs when both sides
have an ``inspect.signature`` and the parameter names, kinds or simple
defaults are not the same.

Names that belong elsewhere are listed but counted apart, by
``bench/api_exclusions.py``: CUDA/XPU/MPS and other devices, quantization
(``torch.ao``, quantized dtypes), sparse layouts (the dispatcher issue),
and a list of single names with the reason for each (TorchScript
internals re-exported from ``torch._C``, deprecated aliases torch itself
warns about, ...). The percentage is present / (counted - excluded).
"""
import argparse
import fnmatch
import importlib
import inspect
import json
import os
import sys
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_exclusions import CATEGORIES, NAMES  # noqa: E402

# torch's public modules a PyTorch program imports (issue 49's list)
MODULES = [
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils",
    "torch.nn.utils.rnn", "torch.nn.utils.parametrize", "torch.nn.utils.parametrizations",
    "torch.nn.utils.stateless", "torch.nn.parallel", "torch.nn.attention",
    "torch.optim", "torch.optim.lr_scheduler", "torch.optim.swa_utils",
    "torch.utils.data", "torch.utils.checkpoint", "torch.utils.hooks", "torch.utils.dlpack",
    "torch.autograd", "torch.autograd.functional", "torch.autograd.forward_ad",
    "torch.autograd.graph", "torch.autograd.profiler",
    "torch.fx", "torch.fx.passes.shape_prop", "torch.fx.subgraph_rewriter",
    "torch.jit", "torch.linalg", "torch.fft", "torch.special", "torch.library",
    "torch.multiprocessing", "torch.distributions", "torch.distributions.constraints",
    "torch.distributions.transforms", "torch.func", "torch.testing", "torch.random",
    "torch.hub", "torch.amp", "torch.accelerator", "torch.overrides", "torch.types",
    "torch.backends", "torch.masked", "torch.signal.windows", "torch.profiler",
    "torch.utils.tensorboard",
]

# Python's own modules whose names torch re-exports (typing helpers and such)
FOREIGN = ("typing", "typing_extensions", "collections", "builtins", "abc", "enum",
           "functools", "contextlib", "dataclasses", "warnings", "numbers", "math",
           "os", "sys", "io", "pickle", "itertools", "weakref", "inspect", "copy", "re")


def ft_name(torch_name):
    return "ferrotorch" + torch_name[len("torch"):]


def defined_by_torch(obj):
    mod = getattr(obj, "__module__", None)
    if mod is None:  # builtins of torch._C without a module: torch's own
        return True
    if not isinstance(mod, str):
        return False
    root = mod.split(".")[0]
    return root not in FOREIGN


def public_names(mod):
    """The names of ``mod`` this tool counts, each with its object."""
    listed = list(getattr(mod, "__all__", []) or [])
    extra = [n for n in dir(mod) if not n.startswith("_") and n not in listed]
    out = {}
    for n in listed + extra:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = getattr(mod, n)
        except Exception:
            continue
        if isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        if not defined_by_torch(obj):
            continue
        if n in extra:
            # a name outside __all__ counts where the module (or one below
            # it) defines it: not torch.nn.functional.Tensor
            home = getattr(obj, "__module__", None) or mod.__name__
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            own = home == mod.__name__ or home.startswith(mod.__name__ + ".") or home.startswith("torch._C")
            if mod.__name__ != "torch" and not own:
                continue
        out[n] = obj
    return out


# classes whose public attributes (methods, properties) are a row of their own
CLASS_ROWS = ("torch.Tensor", "torch.nn.Module", "torch.optim.Optimizer")


def class_names(path):
    obj = importlib.import_module(path.rsplit(".", 1)[0])
    cls = getattr(obj, path.rsplit(".", 1)[1])
    return {n: getattr(cls, n, None) for n in dir(cls) if not n.startswith("_")}


def category(module, name):
    """The exclusion category of ``module.name`` and its reason, or None."""
    for mod_glob, name_glob, reason in NAMES:
        if fnmatch.fnmatchcase(module, mod_glob) and fnmatch.fnmatchcase(name, name_glob):
            return "listed", reason
    for cat, (mod_globs, name_globs, reason) in CATEGORIES.items():
        for mg in mod_globs:
            for ng in name_globs:
                if fnmatch.fnmatchcase(module, mg) and fnmatch.fnmatchcase(name.lower(), ng):
                    return cat, reason
    return None


def simple(v):
    return v is None or isinstance(v, (bool, int, float, str))


def signature_difference(t, f):
    """How ``f``'s signature differs from ``t``'s, or None (also None when
    either has none)."""
    try:
        ts = inspect.signature(t)
        fs = inspect.signature(f)
    except (TypeError, ValueError):
        return None
    tp = [p for p in ts.parameters.values() if p.name != "self"]
    fp = [p for p in fs.parameters.values() if p.name != "self"]
    for ps in (tp, fp):
        if any(p.kind == p.VAR_POSITIONAL for p in ps) and any(p.kind == p.VAR_KEYWORD for p in ps):
            return None  # a forwarding (*args, **kwargs) signature says nothing
    tn = [(p.name, p.kind) for p in tp]
    fn = [(p.name, p.kind) for p in fp]
    if tn != fn:
        tnames, fnames = [p.name for p in tp], [p.name for p in fp]
        missing = [n for n in tnames if n not in fnames]
        extra = [n for n in fnames if n not in tnames]
        if missing or extra:
            return f"params: missing {missing}, extra {extra}"
        if tnames != fnames:
            return f"order: torch {tnames}, ferrotorch {fnames}"
        kinds = [p.name for a, p in zip(tp, fp) if a.kind != p.kind]
        return f"kinds differ for {kinds}"
    for a, b in zip(tp, fp):
        if simple(a.default) and simple(b.default) and a.default != b.default:
            return f"default of {a.name}: torch {a.default!r}, ferrotorch {b.default!r}"
        if (a.default is inspect.Parameter.empty) != (b.default is inspect.Parameter.empty):
            return f"default of {a.name}: torch {a.default!r}, ferrotorch {b.default!r}"
    return None


def diff_module(torch_name):
    """{name: (status, detail)} with status present / missing / differ /
    <exclusion category>."""
    import torch  # noqa: F401

    if torch_name in CLASS_ROWS:
        tnames = class_names(torch_name)
        mod, _, cls = ft_name(torch_name).rpartition(".")
        fmod = getattr(importlib.import_module(mod), cls)
    else:
        try:
            tmod = importlib.import_module(torch_name)
        except Exception as e:  # a module torch itself cannot import here
            return {"<module>": ("unavailable", str(e))}
        tnames = public_names(tmod)
        try:
            fmod = importlib.import_module(ft_name(torch_name))
        except Exception as e:
            fmod, reason = None, f"{type(e).__name__}: {e}"
    out = {}
    for name, tobj in sorted(tnames.items()):
        cat = category(torch_name, name)
        present = fmod is not None and hasattr(fmod, name)
        if cat is not None:
            out[name] = (cat[0], cat[1] + ("" if not present else " (present anyway)"))
            continue
        if fmod is None:
            out[name] = ("missing", reason)
        elif not present:
            out[name] = ("missing", "")
        else:
            d = signature_difference(tobj, getattr(fmod, name)) if tobj is not None else None
            out[name] = ("differ", d) if d else ("present", "")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", action="append", help="only these modules (torch.Tensor too)")
    ap.add_argument("--missing", action="store_true", help="list each missing name")
    ap.add_argument("--differ", action="store_true", help="list each name whose signature differs")
    ap.add_argument("--excluded", action="store_true", help="list each excluded name with its reason")
    ap.add_argument("--json", help="write every module's names and statuses here")
    args = ap.parse_args()
    import torch

    mods = args.module or (MODULES + list(CLASS_ROWS))
    results = {m: diff_module(m) for m in mods}
    head = f"{'module':34} {'counted':>7} {'present':>7} {'differ':>6} {'missing':>7} {'excluded':>8} {'%':>6}"
    print(f"torch {torch.__version__} against ferrotorch; '%' = (present + differ) / (counted - excluded)")
    print(head)
    tot = dict(counted=0, present=0, differ=0, missing=0, excluded=0)
    for m, res in results.items():
        c = {k: 0 for k in tot}
        for status, _ in res.values():
            c["counted"] += 1
            if status in ("present", "differ", "missing"):
                c[status] += 1
            elif status != "unavailable":
                c["excluded"] += 1
        denom = c["counted"] - c["excluded"]
        pct = 100.0 * (c["present"] + c["differ"]) / denom if denom else 100.0
        if m not in CLASS_ROWS:
            for k in tot:
                tot[k] += c[k]
        print(f"{m:34} {c['counted']:7} {c['present']:7} {c['differ']:6} {c['missing']:7} {c['excluded']:8} {pct:6.1f}")
    denom = tot["counted"] - tot["excluded"]
    pct = 100.0 * (tot["present"] + tot["differ"]) / denom if denom else 100.0
    print(f"{'all modules (without class rows)':34} {tot['counted']:7} {tot['present']:7} {tot['differ']:6} "
          f"{tot['missing']:7} {tot['excluded']:8} {pct:6.1f}")
    for flag, status in ((args.missing, "missing"), (args.differ, "differ")):
        if flag:
            print(f"\n{status}:")
            for m, res in results.items():
                for n, (s, d) in res.items():
                    if s == status:
                        print(f"  {m}.{n}" + (f": {d}" if d else ""))
    if args.excluded:
        print("\nexcluded:")
        for m, res in results.items():
            for n, (s, d) in res.items():
                if s not in ("present", "differ", "missing"):
                    print(f"  {m}.{n} [{s}] {d}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({m: {n: list(v) for n, v in r.items()} for m, r in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
