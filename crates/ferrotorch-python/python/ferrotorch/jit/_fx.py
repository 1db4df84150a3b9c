"""``compile_fx``: an fx graph of Python floats lowered to the native
code generator (seeds/000 Part I: scalar function → graph → machine
code → call), or to WebAssembly with ``fx_to_wasm``. Called with tensors,
the compiled function runs the graph through ``ferrotorch.compile``,
whose fused kernels come from the same code generator."""

import builtins
import math
import operator

from .. import _C

# the code generator's one-argument primitives, named as torch's functions
_UNARY_NAMES = frozenset(_C._jit_scalar_unary_names())
_UNARY = {operator.neg: "neg", operator.abs: "abs", builtins.abs: "abs", math.fabs: "abs",
          math.sin: "sin", math.cos: "cos", math.exp: "exp", math.expm1: "expm1",
          math.log: "log", math.log1p: "log1p", math.sqrt: "sqrt", math.tanh: "tanh",
          math.erf: "erf", math.floor: "floor", math.ceil: "ceil", math.trunc: "trunc"}
_BINARY = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
           operator.truediv: "div", operator.pow: "pow", math.pow: "pow",
           builtins.max: "max", builtins.min: "min"}
_BINARY_NAMES = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "true_divide": "div",
                 "pow": "pow", "maximum": "max", "minimum": "min"}


class LoweringError(TypeError):
    """An fx graph the scalar code generator cannot take."""


def _target_name(target):
    if isinstance(target, str):
        return target
    mod = getattr(target, "__module__", "") or ""
    if mod.startswith("ferrotorch"):
        return getattr(target, "__name__", None)
    return None


def lower(graph):
    """``(n_inputs, ops, outputs)`` for ``_C._jit_compile_scalar``."""
    ops, reg, n_inputs = [], {}, 0

    def push(op):
        ops.append(op)
        return len(ops) - 1

    def arg(a):
        if isinstance(a, (bool, int, float)):
            return push(("const", float(a)))
        if a in reg:
            return reg[a]
        raise LoweringError(f"compile_fx: argument {a!r} is not a number or an earlier node")

    outputs = None
    for n in graph.nodes:
        if n.op == "placeholder":
            reg[n] = push(("input", n_inputs))
            n_inputs += 1
        elif n.op in ("call_function", "call_method"):
            if n.kwargs and not (n.op == "call_function" and _target_name(n.target) == "gelu"):
                raise LoweringError(f"compile_fx: {n.name} has keyword arguments")
            name = _target_name(n.target)
            if n.op == "call_function" and n.target is operator.pos:
                reg[n] = arg(n.args[0])
            elif n.target in _UNARY and len(n.args) == 1:
                reg[n] = push(("unary", _UNARY[n.target], arg(n.args[0])))
            elif n.target in _BINARY and len(n.args) == 2:
                reg[n] = push(("binary", _BINARY[n.target], arg(n.args[0]), arg(n.args[1])))
            elif name in _UNARY_NAMES and len(n.args) == 1:
                reg[n] = push(("unary", name, arg(n.args[0])))
            elif name in _BINARY_NAMES and len(n.args) == 2:
                reg[n] = push(("binary", _BINARY_NAMES[name], arg(n.args[0]), arg(n.args[1])))
            else:
                raise LoweringError(f"compile_fx: {n.op} {n.target!r} has no native scalar form")
        elif n.op == "output":
            out = n.args[0]
            outputs = [arg(o) for o in out] if isinstance(out, (tuple, list)) else [arg(out)]
            multi = isinstance(out, (tuple, list))
        else:
            raise LoweringError(f"compile_fx: {n.op} nodes have no native scalar form")
    if outputs is None:
        raise LoweringError("compile_fx: the graph has no output")
    return n_inputs, ops, outputs, multi


class NativeGraphFunction:
    """What ``compile_fx`` returns: called with floats it runs the
    graph's machine code; called with tensors, its compiled kernels."""

    def __init__(self, gm):
        self.graph_module = gm
        self._tensor_fn = None
        try:
            n, ops, outs, multi = lower(gm.graph)
            self._native = _C._jit_compile_scalar(n, ops, outs)
            self._multi = multi
            self.lowering_error = None
        except LoweringError as e:
            self._native = None
            self.lowering_error = str(e)

    @property
    def compile_time(self):
        """Seconds the scalar machine code took to compile (None if none)."""
        return self._native.compile_time if self._native is not None else None

    def __call__(self, *args):
        if all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
            if self._native is None:
                raise TypeError(self.lowering_error)
            out = self._native(*[float(a) for a in args])
            if self._multi and not isinstance(out, tuple):
                return (out,)
            return out
        if self._tensor_fn is None:
            from .. import compile as _compile
            self._tensor_fn = _compile(self.graph_module)
        return self._tensor_fn(*args)


def compile_fx(gm):
    """Compile an fx ``GraphModule`` to native code (seeds/000): a
    callable taking floats (machine code for this CPU, compiled now) or
    tensors (fused kernels, compiled on first call)."""
    return NativeGraphFunction(gm)


def fx_to_wasm(gm):
    """The ``GraphModule``'s function of floats as a WebAssembly module
    (bytes) exporting ``forward``; it imports ``env.exp``, ``env.sin``,
    ... (pass JavaScript's ``Math`` functions)."""
    n, ops, outs, _ = lower(gm.graph)
    return _C._jit_scalar_wasm(n, ops, outs)
