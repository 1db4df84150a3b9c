"""PyTorch's own fx tutorials and documentation examples (the conv/BN
fuser, the Transformer that swaps neg and sigmoid, the profiling
Interpreter, shape propagation, replace_pattern, fx.wrap, Proxy over a
graph being built, has_side_effect, a custom CodeGen), run the same way
under torch (fixtures/gen_fx_tools.py) and ferrotorch
(test_fx_tools.py); each returns plain values: node ops and target
names, output values, recorded shapes."""

import copy
import operator


def _vals(t):
    return [round(v, 5) for v in t.detach().reshape(-1).tolist()]


def _target(n):
    t = n.target
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", str(t))


def _nodes(g):
    return [(n.op, _target(n)) for n in g.nodes]


def conv_bn_fuser(L):
    """The tutorial "Building a Convolution/Batch Norm fuser in FX"."""
    nn, fx = L.nn, L.fx

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 2, 1)
            self.bn2 = nn.BatchNorm2d(2)

        def forward(self, x):
            return L.relu(self.bn2(self.conv2(L.relu(self.bn(self.conv(x))))))

    net = Net()
    for bn in (net.bn, net.bn2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.data.uniform_(0.5, 1.5)
    net.eval()
    x = L.randn(2, 3, 5, 5)
    before = net(x)
    fx_model = fx.symbolic_trace(net)
    modules = dict(fx_model.named_modules())
    for node in fx_model.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        prev = node.args[0]
        if prev.op != "call_module" or not isinstance(modules[prev.target], nn.Conv2d) or len(prev.users) > 1:
            continue
        conv, bn = modules[prev.target], modules[node.target]
        fused = nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
        *parent, name = prev.target.rsplit(".", 1) if "." in prev.target else ("", prev.target)
        setattr(fx_model, name, fused)
        modules[prev.target] = fused
        node.replace_all_uses_with(prev)
        fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.recompile()
    after = fx_model(x)
    return {"nodes": _nodes(fx_model.graph), "before": _vals(before), "diff": float((after - before).abs().max()) < 1e-5}


def swap_transformer(L):
    """``Transformer``'s documentation example: neg and sigmoid swapped."""
    fx = L.fx

    class NegSigmSwap(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is L.sigmoid:
                return L.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *rest = args
                return call_self.sigmoid(*rest, **kwargs)
            return super().call_method(target, args, kwargs)

    def fn(x):
        return L.sigmoid(x).neg()

    gm = fx.symbolic_trace(fn)
    out = NegSigmSwap(gm).transform()
    x = L.randn(3, 4)
    return {"nodes": _nodes(out.graph), "same": bool(L.allclose(out(x), L.neg(x).sigmoid())),
            "cls": isinstance(out, fx.GraphModule)}


def profiling_interpreter(L):
    """The tutorial "Building a Simple CPU Performance Profiler with FX":
    an Interpreter that sees every node run (counted, not timed here)."""
    nn, fx = L.nn, L.fx

    class Counter(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.ran = []

        def run_node(self, n):
            out = super().run_node(n)
            self.ran.append((n.op, _target(n), list(out.shape) if isinstance(out, L.Tensor) else None))
            return out

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    gm = fx.symbolic_trace(model)
    x = L.randn(3, 4)
    c = Counter(gm)
    y = c.run(x)
    partial = fx.Interpreter(gm).run(x, initial_env={list(gm.graph.nodes)[1]: L.ones(3, 8)})
    boxed = fx.Interpreter(gm).boxed_run([x])
    return {"ran": c.ran, "y": _vals(y), "same": bool(L.equal(y, model(x))), "partial": _vals(partial),
            "boxed": bool(L.equal(boxed, y))}


def shape_propagation(L):
    from_passes = __import__(L.__name__ + ".fx.passes.shape_prop", fromlist=["ShapeProp"])
    nn, fx = L.nn, L.fx

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3)
            self.fc = nn.Linear(12, 5)

        def forward(self, x):
            h = L.flatten(L.relu(self.conv(x)), 1)
            return self.fc(h), h.sum()

    gm = fx.symbolic_trace(Net())
    from_passes.ShapeProp(gm).propagate(L.randn(2, 1, 4, 4))
    out = []
    for n in gm.graph.nodes:
        tm = n.meta.get("tensor_meta")
        if tm is None:
            out.append([n.name, None])
        elif isinstance(tm, tuple) and not hasattr(tm, "shape"):
            out.append([n.name, [list(t.shape) for t in tm]])
        else:
            out.append([n.name, list(tm.shape), str(tm.dtype).split(".")[1], list(tm.stride), tm.requires_grad])
    return {"meta": out}


def rewrite_pattern(L):
    """``replace_pattern``'s documentation example."""
    fx = L.fx

    class M(L.nn.Module):
        def forward(self, x, w1, w2):
            m1 = L.cat([w1, w2]).sum()
            m2 = L.cat([w1, w2]).sum()
            return x + L.max(m1) + L.max(m2)

    def pattern(w1, w2):
        return L.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return L.stack([w1, w2])

    traced = fx.symbolic_trace(M())
    matches = fx.replace_pattern(traced, pattern, replacement)
    x, w1, w2 = L.randn(2), L.randn(2), L.randn(2)
    y = traced(x, w1, w2)
    ref = x + L.max(L.stack([w1, w2])) + L.max(L.stack([w1, w2]))
    return {"n": len(matches), "nodes": _nodes(traced.graph), "same": bool(L.allclose(y, ref)),
            "anchors": [_target(m.anchor) for m in matches]}


def rewrite_with_literals(L):
    from_sr = __import__(L.__name__ + ".fx.subgraph_rewriter", fromlist=["replace_pattern_with_filters"])
    fx = L.fx

    def f(x):
        return (x + 1) * 2 + (x + 3) * 2 + L.relu(x) * 2

    def pattern(x):
        return (x + 1) * 2

    def replacement(x):
        return x * 2 + 2

    gm = fx.symbolic_trace(f)
    strict = from_sr.replace_pattern_with_filters(copy.deepcopy(gm), pattern, replacement)
    loose = fx.symbolic_trace(f)
    r = from_sr.replace_pattern_with_filters(loose, pattern, replacement, ignore_literals=True)
    x = L.randn(4)
    gm2 = fx.symbolic_trace(f)
    filtered = from_sr.replace_pattern_with_filters(
        gm2, pattern, replacement, match_filters=[lambda m, g, p: False])
    return {"strict": len(strict), "loose": len(r), "filtered": len(filtered),
            "loose_y": _vals(loose(x) - (x * 2 + 2 + x * 2 + 2 + L.relu(x) * 2)),
            "repl_ops": [sorted(_target(n) for n in rp.replacements) for rp in r]}


_WRAP_SRC = '''
def branchy(x, limit):
    if x.shape[0] > limit:
        return x[:limit]
    return x

fx.wrap("branchy")

def model(x):
    return branchy(L.relu(x), 2) * 3
'''


def fx_wrap(L):
    import sys
    import types

    mod = types.ModuleType(f"fx_wrap_case_{L.__name__}")
    sys.modules[mod.__name__] = mod
    g = mod.__dict__
    g.update({"fx": L.fx, "L": L})
    exec(compile(_WRAP_SRC, "<fx_wrap_case>", "exec"), g)
    gm = L.fx.symbolic_trace(g["model"])
    x = L.randn(4, 2)
    inner = [n for n in gm.graph.nodes if n.op == "call_function" and _target(n) == "branchy"]
    try:
        def bad():
            L.fx.wrap("x")
        bad()
        err = None
    except NotImplementedError as e:
        err = str(e)
    return {"nodes": _nodes(gm.graph), "y": _vals(gm(x)), "wrapped_meta": [n.meta.get("is_wrapped") for n in inner],
            "err": err}


def graph_appending(L):
    fx = L.fx
    g = fx.Graph()
    x = fx.Proxy(g.placeholder("x"))
    y = L.relu(x) + 1.0
    z = y.sum(dim=0)
    g.output((y.node, z.node))
    gm = fx.GraphModule(L.nn.Module(), g)
    a = L.tensor([[-1.0, 2.0], [3.0, -4.0]])
    out = gm(a)
    return {"nodes": _nodes(g), "y": _vals(out[0]), "z": _vals(out[1]),
            "tracer": type(x.tracer).__name__}


_LOG = []


def record_call(x):
    """A function with a side effect (for ``side_effects``)."""
    _LOG.append(1)
    return x


def side_effects(L):
    fx = L.fx
    fx.has_side_effect(record_call)

    class M(L.nn.Module):
        def forward(self, x):
            record_call(x)
            unused = x * 2  # noqa: F841
            return x + 1

    tracer = fx.Tracer(autowrap_functions=(record_call,))
    graph = tracer.trace(M())
    before = _nodes(graph)
    changed = graph.eliminate_dead_code()
    return {"before": before, "after": _nodes(graph), "changed": changed}


def custom_codegen(L):
    """A CodeGen taking the inputs as one list (torch's test_custom_codegen)."""
    fx = L.fx

    class ListCodeGen(fx.CodeGen):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return (f"\ndef forward(self, args_list){maybe_return_annotation}:\n"
                    f"    {', '.join(free_vars)} = args_list")

        def process_inputs(self, *inputs):
            return inputs[0]

    def f(a, b):
        return a + b

    nf = fx.symbolic_trace(f)
    vals = [L.ones(3), L.full((3,), 2.0)]
    nf.graph.set_codegen(ListCodeGen())
    nf.recompile()
    bare = fx.GraphModule({}, copy.deepcopy(nf.graph))
    bare.graph.set_codegen(fx.CodeGen())
    bare.recompile()
    return {"list": _vals(nf(vals)), "bare": _vals(nf.graph.process_outputs(bare(*nf.graph.process_inputs(vals)))),
            "interp": _vals(fx.Interpreter(nf).run(vals))}


def proxyable_class(L):
    fx = L.fx

    class Pair(metaclass=fx.ProxyableClassMeta):
        def __init__(self, a, b):
            self.a, self.b = a, b

    def f(x):
        p = Pair(x, x * 2)
        return p

    gm = fx.symbolic_trace(f)
    out = gm(L.ones(2))
    eager = Pair(1, 2)
    return {"nodes": _nodes(gm.graph), "type": type(out).__name__, "b": _vals(out.b), "eager": [eager.a, eager.b]}


CASES = {f.__name__: f for f in [conv_bn_fuser, swap_transformer, profiling_interpreter, shape_propagation,
                                 rewrite_pattern, rewrite_with_literals, fx_wrap, graph_appending, side_effects,
                                 custom_codegen, proxyable_class]}


def run(L, name):
    L.manual_seed(0)
    return CASES[name](L)


_ = operator
