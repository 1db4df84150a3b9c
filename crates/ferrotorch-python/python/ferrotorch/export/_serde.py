"""An ``ExportedProgram`` as the JSON ``torch.export.save`` writes
(``torch/_export/serde/schema.py``, schema 8.x) and back. Reading is
data only: a node's target must be ``torch.ops.<ns>.<op>.<overload>`` of
an op the dispatcher has, each argument one of the schema's plain
values; anything else is an error naming it."""

import operator
import re

from .. import _C
from ..fx.graph import Graph
from ..utils import _pytree as pytree
from . import graph_signature as gs
from ._trace import ScriptObjectMeta, TensorMeta

SCHEMA_VERSION = (8, 20)

# torch/_export/serde/schema.py ScalarType (not c10's numbering)
_SCALAR_TYPES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float16": 6,
                 "float32": 7, "float64": 8, "complex32": 9, "complex64": 10, "complex128": 11,
                 "bool": 12, "bfloat16": 13, "uint16": 28, "float8_e4m3fn": 29, "float8_e5m2": 30,
                 "float8_e4m3fnuz": 31, "float8_e5m2fnuz": 32, "uint32": 34, "uint64": 35}
_SCALAR_NAMES = {v: k for k, v in _SCALAR_TYPES.items()}
_MEMORY_FORMATS = {"contiguous_format": 1, "channels_last": 2, "channels_last_3d": 3,
                   "preserve_format": 4}
_STRIDED = 7
_TARGET = re.compile(r"torch\.ops\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)")


class SerializeError(RuntimeError):
    """A program that cannot be written, or a file that cannot be read."""


def _torch():
    import ferrotorch

    return ferrotorch


def _dtype_name(dt):
    return str(dt).rpartition(".")[2]


def scalar_type(dt):
    name = _dtype_name(dt)
    if name not in _SCALAR_TYPES:
        raise SerializeError(f"export.save: dtype {dt} has no ScalarType in torch's schema")
    return _SCALAR_TYPES[name]


def dtype_of(code):
    name = _SCALAR_NAMES.get(code)
    dt = getattr(_torch(), name, None) if name else None
    if dt is None:
        raise SerializeError(f"export.load: unknown ScalarType {code!r}")
    return dt


def tensor_meta(m):
    return {"dtype": scalar_type(m.dtype), "sizes": [{"as_int": int(s)} for s in m.shape],
            "requires_grad": bool(m.requires_grad), "device": {"type": "cpu", "index": None},
            "strides": [{"as_int": int(s)} for s in m.stride()],
            "storage_offset": {"as_int": int(m.storage_offset())}, "layout": _STRIDED}


def _int_of(sym, what):
    if not isinstance(sym, dict) or "as_int" not in sym or not isinstance(sym["as_int"], int):
        raise SerializeError(f"export.load: {what} {str(sym)[:60]} is symbolic; "
                             "programs with dynamic shapes are not supported")
    return sym["as_int"]


def meta_of(d):
    if d.get("layout", _STRIDED) != _STRIDED:
        raise SerializeError(f"export.load: layout {d.get('layout')} (only strided tensors)")
    dev = (d.get("device") or {}).get("type", "cpu")
    if dev != "cpu":
        raise SerializeError(f"export.load: a tensor on device {dev!r} (only cpu)")
    return TensorMeta([_int_of(s, "size") for s in d["sizes"]], dtype_of(d["dtype"]),
                      [_int_of(s, "stride") for s in d["strides"]], bool(d.get("requires_grad")),
                      _int_of(d.get("storage_offset", {"as_int": 0}), "storage offset"))


# ---- writing ----

def _arg(v, ty, where):
    from ..fx.node import Node

    torch = _torch()
    if isinstance(v, Node):
        if isinstance(v.meta.get("val"), ScriptObjectMeta):
            return {"as_custom_obj": {"name": v.name, "class_fqn": v.meta["val"].class_fqn}}
        return {"as_tensor": {"name": v.name}}
    if v is None:
        return {"as_none": True}
    if isinstance(v, bool):
        return {"as_bool": v}
    if isinstance(v, int):
        return {"as_int": v}
    if isinstance(v, float):
        return {"as_float": v}
    if isinstance(v, complex):
        return {"as_complex": {"real": v.real, "imag": v.imag}}
    if isinstance(v, torch.dtype):
        return {"as_scalar_type": scalar_type(v)}
    if isinstance(v, torch.device):
        return {"as_device": {"type": v.type, "index": v.index}}
    if isinstance(v, torch.memory_format):
        return {"as_memory_format": _MEMORY_FORMATS[str(v).rpartition(".")[2]]}
    if isinstance(v, torch.layout):
        return {"as_layout": _STRIDED}
    if isinstance(v, str):
        return {"as_string": v}
    if isinstance(v, (list, tuple)):
        items = list(v)
        if ty.startswith("Tensor?") or (any(isinstance(x, Node) for x in items) and None in items):
            return {"as_optional_tensors": [{"as_none": True} if x is None else
                                            {"as_tensor": {"name": x.name}} for x in items]}
        if ty.startswith("Tensor") or any(isinstance(x, Node) for x in items):
            return {"as_tensors": [{"name": x.name} for x in items]}
        if all(isinstance(x, bool) for x in items) and (items or ty.startswith("bool")):
            return {"as_bools": items}
        if all(isinstance(x, int) and not isinstance(x, bool) for x in items) and not ty.startswith("float"):
            return {"as_ints": items}
        if all(isinstance(x, (int, float)) for x in items):
            return {"as_floats": [float(x) for x in items]}
        if all(isinstance(x, str) for x in items):
            return {"as_strings": items}
    raise SerializeError(f"export.save: {where}: cannot write the value {v!r} ({type(v).__name__})")


def _target_str(t):
    if not hasattr(t, "overloadpacket"):
        raise SerializeError(f"export.save: the graph calls {t!r}; only ATen and custom ops "
                             "(torch.ops.<ns>.<op>.<overload>) can be saved")
    return f"torch.ops.{t}"


def _node(n, tensor_values):
    target = _target_str(n.target)
    name = n.target._name
    args, rets = _C._op_arguments(name)
    inputs = []
    for (aname, ty, _), v in zip(args, n.args):
        inputs.append({"name": aname, "arg": _arg(v, ty, f"{target} argument {aname!r}"), "kind": 1})
    known = {a[0]: a for a in args}
    for k, v in n.kwargs.items():
        if k not in known:
            raise SerializeError(f"export.save: {target} has no argument {k!r}")
        inputs.append({"name": k, "arg": _arg(v, known[k][1], f"{target} argument {k!r}"), "kind": 2})
    users = {u.args[1]: u for u in n.users if u.target is operator.getitem}
    val = n.meta.get("val")

    def named(nm, m):
        if m is not None:
            tensor_values[nm] = tensor_meta(m)
        return {"name": nm}

    if not rets:
        outputs = []
    elif len(rets) == 1 and rets[0].startswith("Tensor[]"):
        outputs = [{"as_tensors": [named(users[i].name if i in users else f"{n.name}_unused_{i}", m)
                                   for i, m in enumerate(val or ())]}]
    elif len(rets) == 1:
        if not isinstance(val, TensorMeta):
            raise SerializeError(f"export.save: {target} returns {rets[0]}, which is not written yet")
        outputs = [{"as_tensor": named(n.name, val)}]
    else:
        outputs = []
        for i, m in enumerate(val or ()):
            nm = users[i].name if i in users else f"{n.name}_unused_{i}"
            outputs.append({"as_none": True} if m is None else {"as_tensor": named(nm, m)})
    return {"target": target, "inputs": inputs, "outputs": outputs, "metadata": {},
            "is_hop_single_tensor_return": None, "name": n.name}


def _spec_arg(a):
    if isinstance(a, gs.TensorArgument):
        return {"as_tensor": {"name": a.name}}
    if isinstance(a, gs.CustomObjArgument):
        return {"as_custom_obj": {"name": a.name, "class_fqn": a.class_fqn}}
    if isinstance(a, gs.ConstantArgument):
        return _arg(a.value, "", "a constant input")
    raise SerializeError(f"export.save: cannot write the argument {a!r}")


def _input_spec(s):
    k = s.kind
    if k == gs.InputKind.USER_INPUT:
        return {"user_input": {"arg": _spec_arg(s.arg)}}
    if k == gs.InputKind.PARAMETER:
        return {"parameter": {"arg": {"name": s.arg.name}, "parameter_name": s.target}}
    if k == gs.InputKind.BUFFER:
        return {"buffer": {"arg": {"name": s.arg.name}, "buffer_name": s.target,
                           "persistent": bool(s.persistent)}}
    if k == gs.InputKind.CONSTANT_TENSOR:
        return {"tensor_constant": {"arg": {"name": s.arg.name}, "tensor_constant_name": s.target}}
    raise SerializeError(f"export.save: programs with {k.name} inputs cannot be saved yet")


def _output_spec(s):
    k = s.kind
    if k == gs.OutputKind.USER_OUTPUT:
        return {"user_output": {"arg": _spec_arg(s.arg)}}
    if k == gs.OutputKind.BUFFER_MUTATION:
        return {"buffer_mutation": {"arg": {"name": s.arg.name}, "buffer_name": s.target}}
    if k == gs.OutputKind.PARAMETER_MUTATION:
        return {"parameter_mutation": {"arg": {"name": s.arg.name}, "parameter_name": s.target}}
    if k == gs.OutputKind.USER_INPUT_MUTATION:
        return {"user_input_mutation": {"arg": {"name": s.arg.name}, "user_input_name": s.target}}
    raise SerializeError(f"export.save: programs with {k.name} outputs cannot be saved yet")


def serialize(ep, torch_version="2.15.0"):
    """The JSON object of ``ep`` (``models/<name>.json``)."""
    tensor_values, nodes, inputs = {}, [], []
    sig = ep.graph_signature
    for n, spec in zip([n for n in ep.graph.nodes if n.op == "placeholder"], sig.input_specs):
        m = n.meta.get("val")
        if isinstance(m, TensorMeta):
            tensor_values[n.name] = tensor_meta(m)
        inputs.append(_spec_arg(spec.arg))
    for n in ep.graph.nodes:
        if n.op == "call_function" and n.target is operator.getitem:
            continue
        if n.op == "call_function":
            nodes.append(_node(n, tensor_values))
        elif n.op not in ("placeholder", "output"):
            raise SerializeError(f"export.save: a {n.op} node ({n.name}) cannot be saved")
    outputs = [_spec_arg(s.arg) for s in sig.output_specs]
    graph = {"inputs": inputs, "outputs": outputs, "nodes": nodes, "tensor_values": tensor_values,
             "sym_int_values": {}, "sym_bool_values": {},
             "is_single_tensor_return": False, "custom_obj_values": {}, "sym_float_values": {}}
    call = {"fqn": "", "signature": {
        "inputs": [], "outputs": [], "in_spec": pytree.treespec_dumps(ep._in_spec),
        "out_spec": pytree.treespec_dumps(ep._out_spec),
        "forward_arg_names": list(ep._forward_arg_names or [])}}
    gm = {"graph": graph,
          "signature": {"input_specs": [_input_spec(s) for s in sig.input_specs],
                        "output_specs": [_output_spec(s) for s in sig.output_specs]},
          "module_call_graph": [call], "metadata": {}, "treespec_namedtuple_fields": {}}
    return {"graph_module": gm, "opset_version": {"aten": 10}, "range_constraints": {},
            "schema_version": {"major": SCHEMA_VERSION[0], "minor": SCHEMA_VERSION[1]},
            "verifiers": list(ep.verifiers), "torch_version": torch_version, "guards_code": []}


# ---- reading ----

def _resolve(target):
    m = _TARGET.fullmatch(target) if isinstance(target, str) else None
    if m is None:
        raise SerializeError(f"export.load: the program calls {target!r}; ferrotorch reads "
                             "programs of ATen and custom ops (torch.ops.<ns>.<op>.<overload>)")
    ns, op, overload = m.groups()
    try:
        return getattr(getattr(getattr(_torch().ops, ns), op), overload)
    except (AttributeError, RuntimeError):
        raise SerializeError(f"export.load: the program calls {target}, which ferrotorch "
                             "does not have") from None


def _identifier(name):
    import builtins
    import keyword

    return (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
            and name not in ("self", "torch", "operator", "math") and not hasattr(builtins, name)
            and not name.startswith("_fx_"))


def _wrapped_numbers(target, args):
    """torch passes a number where a schema takes a Tensor (``add_.Tensor(b,
    1)``, a wrapped number); the dispatcher takes it by the op's
    ``Scalar`` overload, which gives the same result."""
    types = [a[1] for a in _C._op_arguments(target._name)[0]]
    if not any(t == "Tensor" and isinstance(v, (bool, int, float)) for t, v in zip(types, args)):
        return target
    scalar = None
    if target._overloadname == "Tensor":
        try:
            scalar = target.overloadpacket.Scalar
        except AttributeError:
            pass
    if scalar is None:
        raise SerializeError(f"export.load: {target.name()} is given a number for a Tensor argument "
                             "and has no Scalar overload to take it")
    return scalar


class _Reader:
    def __init__(self):
        self.g = Graph()
        self.names = {}

    def node_named(self, name, what):
        if not isinstance(name, str) or name not in self.names:
            raise SerializeError(f"export.load: {what} reads {name!r}, which is not defined before it")
        return self.names[name]

    def value(self, arg, what):
        if not isinstance(arg, dict) or len(arg) != 1:
            raise SerializeError(f"export.load: {what}: malformed argument {str(arg)[:80]}")
        (kind, v), = arg.items()
        torch = _torch()
        if kind == "as_none":
            return None
        if kind == "as_tensor" or kind == "as_custom_obj":
            return self.node_named(v.get("name") if isinstance(v, dict) else None, what)
        if kind == "as_tensors":
            return [self.node_named(t.get("name"), what) for t in v]
        if kind in ("as_optional_tensors",):
            return [self.value(t, what) for t in v]
        if kind == "as_optional_tensor":
            return self.value(v, what)
        if kind in ("as_int", "as_float", "as_bool", "as_string", "as_ints", "as_floats", "as_bools",
                    "as_strings"):
            return v
        if kind == "as_sym_int":
            return _int_of({"as_int": v.get("as_int")} if "as_int" in v else v, what)
        if kind == "as_sym_ints":
            return [_int_of(x, what) for x in v]
        if kind == "as_scalar_type":
            return dtype_of(v)
        if kind == "as_memory_format":
            names = {c: n for n, c in _MEMORY_FORMATS.items()}
            if v not in names:
                raise SerializeError(f"export.load: {what}: unknown memory format {v!r}")
            return getattr(torch, names[v])
        if kind == "as_layout":
            if v != _STRIDED:
                raise SerializeError(f"export.load: {what}: layout {v!r} (only strided)")
            return torch.strided
        if kind == "as_device":
            if v.get("type") != "cpu":
                raise SerializeError(f"export.load: {what}: device {v.get('type')!r} (only cpu)")
            return torch.device("cpu")
        if kind == "as_complex":
            return complex(v["real"], v["imag"])
        raise SerializeError(f"export.load: {what}: arguments of kind {kind!r} are not supported")

    def define(self, node, name, meta):
        # a name becomes a variable of the generated forward: only plain
        # identifiers, never code
        if not _identifier(name) or (name in self.names):
            raise SerializeError(f"export.load: a value is named {str(name)[:60]!r}, which is not "
                                 "a fresh Python identifier")
        node.name = name
        self.g._ns.used.add(name)
        self.names[name] = node
        if meta is not None:
            node.meta["val"] = meta

    def node(self, d, tensor_values):
        target = _resolve(d.get("target"))
        name = d.get("name") or target._opname
        args, kwargs = [], {}
        schema = {a[0] for a in _C._op_arguments(target._name)[0]}
        for na in d.get("inputs", []):
            what = f"{d.get('target')} argument {na.get('name')!r}"
            v = self.value(na.get("arg"), what)
            if na.get("kind", 1) == 2:
                if na.get("name") not in schema:
                    raise SerializeError(f"export.load: {what}: ferrotorch's schema has no such argument")
                kwargs[na["name"]] = v
            else:
                if kwargs:
                    raise SerializeError(f"export.load: {what}: a positional argument after keywords")
                args.append(v)
        target = _wrapped_numbers(target, args)
        n = self.g.create_node("call_function", target, tuple(args), kwargs, name=name)
        outs = d.get("outputs", [])
        meta = lambda nm: meta_of(tensor_values[nm]) if nm in tensor_values else None  # noqa: E731
        if len(outs) == 1 and "as_tensor" in outs[0]:
            self.define(n, outs[0]["as_tensor"]["name"], meta(outs[0]["as_tensor"]["name"]))
            return
        vals = []
        items = outs[0]["as_tensors"] if len(outs) == 1 and "as_tensors" in outs[0] else outs
        for i, o in enumerate(items):
            nm = o.get("name") if "name" in o else (o.get("as_tensor") or {}).get("name")
            if nm is None:
                vals.append(None)
                continue
            gi = self.g.create_node("call_function", operator.getitem, (n, i), {}, name="getitem")
            self.define(gi, nm, meta(nm))
            vals.append(gi.meta.get("val"))
        n.meta["val"] = tuple(vals)


def _spec_value(a):
    (kind, v), = a.items()
    if kind == "as_tensor":
        return gs.TensorArgument(v["name"])
    if kind == "as_custom_obj":
        return gs.CustomObjArgument(v["name"], v["class_fqn"])
    if kind in ("as_none", "as_int", "as_float", "as_bool", "as_string"):
        return gs.ConstantArgument("", None if kind == "as_none" else v)
    raise SerializeError(f"export.load: a signature argument of kind {kind!r}")


def _input_specs(specs):
    out = []
    for s in specs:
        (kind, v), = s.items()
        if kind == "user_input":
            out.append(gs.InputSpec(gs.InputKind.USER_INPUT, _spec_value(v["arg"]), None))
        elif kind == "parameter":
            out.append(gs.InputSpec(gs.InputKind.PARAMETER, gs.TensorArgument(v["arg"]["name"]),
                                    v["parameter_name"]))
        elif kind == "buffer":
            out.append(gs.InputSpec(gs.InputKind.BUFFER, gs.TensorArgument(v["arg"]["name"]),
                                    v["buffer_name"], bool(v.get("persistent", True))))
        elif kind == "tensor_constant":
            out.append(gs.InputSpec(gs.InputKind.CONSTANT_TENSOR, gs.TensorArgument(v["arg"]["name"]),
                                    v["tensor_constant_name"]))
        else:
            raise SerializeError(f"export.load: programs with {kind} inputs are not supported")
    return out


def _output_specs(specs):
    kinds = {"user_output": (gs.OutputKind.USER_OUTPUT, None),
             "buffer_mutation": (gs.OutputKind.BUFFER_MUTATION, "buffer_name"),
             "parameter_mutation": (gs.OutputKind.PARAMETER_MUTATION, "parameter_name"),
             "user_input_mutation": (gs.OutputKind.USER_INPUT_MUTATION, "user_input_name"),
             "loss_output": (gs.OutputKind.LOSS_OUTPUT, None)}
    out = []
    for s in specs:
        (kind, v), = s.items()
        if kind not in kinds:
            raise SerializeError(f"export.load: programs with {kind} outputs are not supported")
        k, field = kinds[kind]
        arg = _spec_value(v["arg"]) if "name" not in v["arg"] else gs.TensorArgument(v["arg"]["name"])
        out.append(gs.OutputSpec(k, arg, v.get(field) if field else None))
    return out


def deserialize(d, state_dict, constants, example_inputs):
    """The ``ExportedProgram`` of a ``models/<name>.json`` object."""
    from .exported_program import ExportedProgram

    try:
        version = d["schema_version"]
        if version["major"] != SCHEMA_VERSION[0]:
            raise SerializeError(
                f"export.load: the program has schema version {version['major']}.{version['minor']}; "
                f"ferrotorch reads version {SCHEMA_VERSION[0]}.x")
        gm = d["graph_module"]
        graph = gm["graph"]
        sig = gs.ExportGraphSignature(_input_specs(gm["signature"]["input_specs"]),
                                      _output_specs(gm["signature"]["output_specs"]))
        tv = graph.get("tensor_values", {})
        r = _Reader()
        for spec, inp in zip(sig.input_specs, graph["inputs"]):
            name = spec.arg.name or f"arg_{len(r.names)}"
            n = r.g.placeholder(name)
            meta = meta_of(tv[name]) if name in tv else None
            if isinstance(spec.arg, gs.CustomObjArgument):
                meta = ScriptObjectMeta(spec.arg.class_fqn)
            r.define(n, name, meta)
        if len(sig.input_specs) != len(graph["inputs"]):
            raise SerializeError("export.load: the graph's inputs do not match its signature")
        for nd in graph["nodes"]:
            r.node(nd, tv)
        outs = []
        for a in graph["outputs"]:
            outs.append(r.value(a, "the graph's output"))
        r.g.output(tuple(outs))
        call = gm["module_call_graph"][0]["signature"]
        in_spec = pytree.treespec_loads(call["in_spec"])
        out_spec = pytree.treespec_loads(call["out_spec"])
        names = call.get("forward_arg_names")
        if names is not None and not (isinstance(names, list) and all(_identifier(n) for n in names)):
            raise SerializeError("export.load: forward_arg_names must be Python identifiers")
        kw_spec = in_spec.children_specs[1] if in_spec.type is tuple and in_spec.num_children == 2 else None
        if kw_spec is None or kw_spec.type is not dict or in_spec.children_specs[0].type is not tuple:
            raise SerializeError("export.load: the input spec must be ((args...), {kwargs})")
        if not all(_identifier(k) for k in kw_spec.context or []):
            raise SerializeError("export.load: keyword inputs must be named by Python identifiers")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        if isinstance(e, SerializeError):
            raise
        raise SerializeError(f"export.load: malformed program ({type(e).__name__}: {e})") from None
    except RecursionError:
        raise SerializeError("export.load: the program nests too deeply") from None
    for spec in sig.input_specs:
        if spec.kind in (gs.InputKind.PARAMETER, gs.InputKind.BUFFER):
            if spec.target not in state_dict and spec.target not in constants:
                raise SerializeError(f"export.load: the archive has no weight {spec.target!r}")
        elif spec.kind == gs.InputKind.CONSTANT_TENSOR and spec.target not in constants:
            raise SerializeError(f"export.load: the archive has no constant {spec.target!r}")
    verifiers = d.get("verifiers", [])
    return ExportedProgram(r.g, sig, state_dict, constants, in_spec, out_spec,
                           example_inputs=example_inputs, verifiers=verifiers,
                           forward_arg_names=names)
