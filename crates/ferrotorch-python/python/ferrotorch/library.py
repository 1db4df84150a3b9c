"""``torch.library``: define custom ops from Python (Note [Custom ops] in
ferrotorch-core). An op made here is an op of the one dispatcher: it is
called as ``torch.ops.ns.name``, traced into graphs as itself, saved in
programs and differentiated through its registered formula.

- ``custom_op("ns::name", mutates_args=...)`` turns a typed Python
  function into an op (its schema inferred from the annotations) with
  ``register_kernel``, ``register_fake`` and ``register_autograd``;
- ``Library("ns", "DEF" | "FRAGMENT" | "IMPL")`` with ``define`` and
  ``impl`` is the lower layer, as in torch.

Differences from torch, on purpose: ``setup_context`` runs when the
backward runs (with the saved inputs and outputs), not after the forward.
"""

import inspect
import typing

from . import _C
from ._library import rules as _rules

__all__ = ["Library", "custom_op", "register_fake", "register_autograd", "register_kernel",
           "infer_schema", "define", "impl", "CustomOpDef", "register_vmap", "register_autocast", "fallthrough_kernel"]


class Library:
    """A set of registrations in namespace ``ns``: ``kind`` "DEF" defines
    the namespace (once), "FRAGMENT" adds ops to it, "IMPL" only adds
    kernels."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "FRAGMENT", "IMPL"):
            raise ValueError(f"Unsupported kind: {kind}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._lib = _C._Library(ns, kind)

    def define(self, schema, alias_analysis="", *, tags=()):
        """Declare an op from its schema (``"foo(Tensor x) -> Tensor"``);
        returns its name without the namespace."""
        full = self._lib.define(schema)
        return full.split("::", 1)[1]

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """Give op ``op_name`` the kernel ``fn`` under ``dispatch_key``
        (CPU, a Composite key, CUDA, PrivateUse1; "Autograd" and "Meta" are
        register_autograd and register_fake)."""
        name = op_name if isinstance(op_name, str) else op_name._qualified_op_name
        key = dispatch_key or self.dispatch_key
        if fn is fallthrough_kernel:
            return  # the call goes on to the next key: nothing to register
        if key == "Meta":
            self._lib.register_fake(name, fn)
        else:
            self._lib.impl_py(name, fn, key)

    def _register_fake(self, op_name, fn):
        self._lib.register_fake(op_name, fn)

    def _register_autograd(self, op_name, run):
        self._lib.register_autograd(op_name, run)


_libraries = {}


def _fragment(ns):
    lib = _libraries.get(ns)
    if lib is None:
        lib = _libraries[ns] = Library(ns, "FRAGMENT")
    return lib


def define(qualname, schema, *, lib=None, tags=()):
    """``torch.library.define("ns::name", "(Tensor x) -> Tensor")``."""
    ns, name = _split(qualname)
    (lib or _fragment(ns)).define(name + schema)


def impl(qualname, types, func=None, *, lib=None):
    """``torch.library.impl("ns::name", "cpu", fn)`` (or as a decorator)."""
    ns, name = _split(qualname)
    types = [types] if isinstance(types, str) else list(types)

    def register(f):
        for t in types:
            (lib or _fragment(ns)).impl(name, f, "CPU" if t in ("cpu", "default") else t)
        return f

    return register if func is None else register(func)


def _split(qualname):
    if "::" not in qualname:
        raise ValueError(f"expected a qualified name 'namespace::name', got {qualname!r}")
    return qualname.split("::", 1)


# ---- schema inference ----------------------------------------------------

def _type_str(ann, where):
    from . import Tensor

    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if ann is Tensor:
        return "Tensor"
    if ann is int:
        return "SymInt"
    if ann is float:
        return "float"
    if ann is bool:
        return "bool"
    if ann is str:
        return "str"
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return _type_str(inner, where) + "?"
    if origin in (list, tuple, typing.Sequence, __import__("collections").abc.Sequence) and args:
        elem = args[0]
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise ValueError(f"infer_schema: {where}: unsupported type {ann}")
        return _type_str(elem, where) + "[]"
    raise ValueError(
        f"infer_schema: {where}: unsupported type {ann!r} (supported: Tensor, int, float, bool, "
        "str, their Optional[...] and Sequence[...] forms)")


def _default_str(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v + '"'
    raise ValueError(f"infer_schema: unsupported default value {v!r}")


def _returns_str(ann, name):
    from . import Tensor

    if ann is None or ann is type(None):
        return "()"
    if typing.get_origin(ann) is tuple:
        return "(" + ", ".join(_type_str(a, f"{name}'s return") for a in typing.get_args(ann)) + ")"
    if ann is Tensor or typing.get_origin(ann) in (list,):
        return _type_str(ann, f"{name}'s return")
    raise ValueError(f"infer_schema: {name}'s return type {ann!r} is not supported")


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema of ``prototype_function`` from its type annotations
    (``"(Tensor x, float s=1.0) -> Tensor"``, or with ``op_name`` first),
    as torch's ``infer_schema``."""
    sig = inspect.signature(prototype_function)
    hints = typing.get_type_hints(prototype_function)
    name = op_name or prototype_function.__name__
    params, kw_only_started, alias = [], False, 0
    names = list(sig.parameters)
    if mutates_args != "unknown":
        for m in mutates_args:
            if m not in names:
                raise ValueError(f"infer_schema: mutates_args names {m!r}, which {name} does not take")
    for pname, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema: {name} may not take *args or **kwargs")
        if pname not in hints:
            raise ValueError(f"infer_schema: parameter {pname} of {name} has no type annotation")
        t = _type_str(hints[pname], f"parameter {pname} of {name}")
        mutated = mutates_args == "unknown" and t.startswith("Tensor") or \
            (mutates_args != "unknown" and pname in mutates_args)
        if mutated:
            if not t.startswith("Tensor"):
                raise ValueError(f"infer_schema: {pname} is in mutates_args but is not a Tensor")
            t = t.replace("Tensor", f"Tensor(a{alias}!)", 1)
            alias += 1
        if p.kind == p.KEYWORD_ONLY and not kw_only_started:
            params.append("*")
            kw_only_started = True
        decl = f"{t} {pname}"
        if p.default is not inspect.Parameter.empty:
            decl += "=" + _default_str(p.default)
        params.append(decl)
    ret = _returns_str(hints.get("return", None), name)
    schema = f"({', '.join(params)}) -> {ret}"
    return (op_name + schema) if op_name else schema


# ---- custom_op --------------------------------------------------------------

class _Ctx:
    """The ``ctx`` of ``setup_context`` and ``backward``."""

    def __init__(self, needs):
        self.needs_input_grad = needs
        self.saved_tensors = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


class CustomOpDef:
    """What ``custom_op`` returns: call it like the function it wraps."""

    def __init__(self, ns, name, schema, fn):
        self._namespace, self._name = ns, name
        self._qualname = f"{ns}::{name}"
        self._init_fn = fn
        self._kernels = {}
        self._schema = schema
        lib = _fragment(ns)
        lib.define(name + schema)
        # one kernel under the CPU key, which picks the registered kernel
        # (register_kernel may replace the default later)
        lib.impl(name, self._dispatch, "CPU")
        self._lib = lib

    def _dispatch(self, *args):
        return self._kernels.get("cpu", self._init_fn)(*args)

    def __call__(self, *args, **kwargs):
        return _rules.call(self._qualname, args, kwargs)

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def register_kernel(self, device_types, fn=None, /):
        """Give the op a kernel for ``device_types`` (``"cpu"``)."""
        types = [device_types] if isinstance(device_types, str) or device_types is None \
            else list(device_types)

        def register(f):
            for t in types:
                if t not in (None, "cpu"):
                    raise ValueError(f"register_kernel: this build has no {t!r} device")
                self._kernels["cpu"] = f
            return f

        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        """Give the op its shape function (``torch.library.register_fake``)."""
        self._lib._register_fake(self._name, fn)
        return fn

    def register_vmap(self, func=None, /):
        """Give the op its batching rule (``torch.library.register_vmap``)."""
        return register_vmap(self._qualname, func)

    def register_autocast(self, device_type, cast_inputs, /):
        """Cast the op's floating inputs under autocast
        (``torch.library.register_autocast``)."""
        register_autocast(self._qualname, device_type, cast_inputs)

    def register_autograd(self, backward, /, *, setup_context=None):
        """Give the op its derivative: ``backward(ctx, *grads)`` returns one
        gradient per input (None for inputs without one)."""
        self._lib._register_autograd(self._name,
                                     _autograd_runner(self._qualname, backward, setup_context))


def _autograd_runner(qual, backward, setup_context):
    """What the core calls at backward time: torch's ``setup_context`` and
    ``backward`` over the saved inputs and outputs; one gradient per tensor
    input back."""
    def run(inputs, outputs, grads):
        from . import Tensor

        ctx = _Ctx(tuple(isinstance(x, Tensor) and x.requires_grad for x in inputs))
        output = outputs[0] if len(outputs) == 1 else tuple(outputs)
        if setup_context is not None:
            setup_context(ctx, inputs, output)
        got = backward(ctx, *grads)
        if not isinstance(got, tuple):
            got = (got,)
        if len(got) != len(inputs):
            raise RuntimeError(
                f"{qual}: backward returned {len(got)} gradients, but the op has "
                f"{len(inputs)} inputs (return None for inputs without a gradient)")
        return [g for g, x in zip(got, inputs) if isinstance(x, Tensor)]

    return run


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Make ``fn`` an op ``name`` (``"ns::op"``): its schema is inferred
    from the annotations unless given; ``mutates_args`` names the inputs it
    writes (or ``"unknown"``, or ``()``). Usable as a decorator."""
    ns, opname = _split(name)

    def make(f):
        s = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        op = CustomOpDef(ns, opname, s, f)
        if device_types is not None:
            op.register_kernel(device_types, f)
        return op

    return make if fn is None else make(fn)


def _op_def(op):
    if isinstance(op, CustomOpDef):
        return op
    raise TypeError(f"expected an op made by torch.library.custom_op, got {op!r}")


def register_fake(op, fn=None, /, *, lib=None):
    """``torch.library.register_fake(op)(fn)``."""
    def register(f):
        if isinstance(op, str):
            ns, name = _split(op)
            (lib or _fragment(ns))._register_fake(name, f)
        else:
            _op_def(op).register_fake(f)
        return f

    return register if fn is None else register(fn)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """``torch.library.register_autograd(op, backward, setup_context=...)``;
    ``op`` is a ``custom_op`` or a qualified name."""
    if isinstance(op, str):
        ns, name = _split(op)
        (lib or _fragment(ns))._register_autograd(name, _autograd_runner(op, backward, setup_context))
    else:
        _op_def(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """``torch.library.register_kernel(op, "cpu")(fn)``."""
    return _op_def(op).register_kernel(device_types, fn)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The deprecated name of ``register_fake`` (torch warns)."""
    import warnings

    warnings.warn("torch.library.impl_abstract was renamed to torch.library.register_fake. Please use that "
                  "instead; we will remove torch.library.impl_abstract in a future version of PyTorch.",
                  DeprecationWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)



def _qual(op):
    if isinstance(op, str):
        _split(op)
        return op
    name = getattr(op, "_qualname", None) or getattr(op, "_qualified_op_name", None)
    if name is None:
        raise TypeError(f"expected an op (a custom_op, torch.ops.ns.op or 'ns::op'), got {op!r}")
    return name


def register_vmap(op, func=None, /, *, lib=None):
    """Give ``op`` its batching rule: ``func(info, in_dims, *args, **kwargs)``
    gets the physical arguments (``in_dims[i]`` is the mapped dim of
    argument ``i``, or None) and returns ``(output, out_dims)`` (Note
    [Custom op rules])."""
    qual = _qual(op)

    def register(f):
        _rules._VMAP[qual] = f
        return f

    return register if func is None else register(func)


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Under autocast on ``device_type``, cast ``op``'s floating tensor
    arguments to ``cast_inputs`` and run it with autocast off."""
    import ferrotorch

    ferrotorch.device(device_type)  # a device string torch knows, or its RuntimeError
    _rules._AUTOCAST[_qual(op)] = (device_type, cast_inputs)


def fallthrough_kernel():
    """torch's marker for ``Library.impl(op, fallthrough_kernel, key)``: the
    key passes the call on to the next one."""
    raise NotImplementedError("fallthrough_kernel should never be called")
