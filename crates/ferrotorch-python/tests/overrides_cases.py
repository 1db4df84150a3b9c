"""__torch_function__ cases run the same way under torch
(fixtures/gen_overrides.py) and ferrotorch (test_overrides.py): what a
subclass, a duck type and a TorchFunctionMode see and return; each case
returns plain values (type names, function names, values)."""


def _name(x):
    return type(x).__name__


def subclass_results(L):
    class M(L.Tensor):
        pass

    F = L.nn.functional
    x = L.ones(2).as_subclass(M)
    p = L.nn.Parameter(L.ones(2))
    mx, idx = L.max(L.tensor([[1.0, 3.0], [2.0, 0.0]]).as_subclass(M), 1)
    return {"ops": [_name(v) for v in [x + 1, 1 - x, L.add(x, 1), x.sum(), F.relu(x), x[0], L.cat([x, x]),
                                       x.exp_(), x.view(2, 1), L.stack([x, L.ones(2)])]],
            "param": [_name(v) for v in [p * 2, p.sum(), L.relu(p)]],
            "max": [_name(mx), _name(idx), type(L.max(x, 0)).__name__],
            "repr": repr(L.arange(3.0).as_subclass(M)), "plain": _name(L.ones(1) + 1)}


def logging_subclass(L):
    seen = []

    class Logging(L.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)

    y = L.arange(3.0).as_subclass(Logging)
    z = y * 2 + y.exp()
    w = L.nn.functional.softmax(z, dim=0)
    return {"seen": seen, "z": [round(v, 5) for v in z.tolist()], "w_type": _name(w), "z_type": _name(z)}


def modes(L):
    from_overrides = L.overrides

    class Log(from_overrides.TorchFunctionMode):
        def __init__(self):
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    class Double(from_overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is L.add:
                return out * 2
            return out

    F = L.nn.functional
    add_before = L.Tensor.__add__
    with Log() as m:
        a = L.ones(3)
        b = a + 2
        c = F.relu(b).sum()
        b.mul_(3)
        a.view_as(a)
        L.matmul(a, a)
    with Log() as outer, Double():
        d = L.add(L.ones(2), 1)
    base = from_overrides.BaseTorchFunctionMode
    with base():
        e = L.ones(2) * 3
    return {"seen": m.seen, "c": float(c), "double": d.tolist(), "outer": outer.seen, "e": e.tolist(),
            "after": L.Tensor.__add__ is add_before, "mode_off": float(L.ones(1) + 1)}


def duck_types(L):
    class Scalar:
        def __init__(self, v):
            self.v = v

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is L.mean:
                return ("mean", args[0].v)
            if func is L.nn.functional.relu:
                return ("relu", args[0].v)
            return NotImplemented

    out = {"mean": list(L.mean(Scalar(3))), "relu": list(L.nn.functional.relu(Scalar(-1)))}
    try:
        L.sin(Scalar(3))
    except TypeError as e:
        out["sin"] = str(e).replace("ferrotorch", "torch").split(";")[0]
    o = L.overrides
    out["has"] = [o.has_torch_function((Scalar(1),)), o.has_torch_function((L.ones(1),)),
                  o.has_torch_function_unary(L.nn.Parameter(L.ones(1))), o.is_tensor_like(Scalar(1)),
                  o.is_tensor_like(L.ones(1)), o.is_tensor_like(3)]
    return out


def handle_and_redispatch(L):
    o = L.overrides
    seen = []

    def scaled_mul(a, b):
        if o.has_torch_function((a, b)):
            return o.handle_torch_function(scaled_mul, (a, b), a, b)
        return a * b + 1

    class LoggingTensor(L.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args, kwargs=None):
            seen.append(func.__name__)
            return o.redispatch_function(func, types, args, kwargs)

    x = L.tensor([3.0]).as_subclass(LoggingTensor)
    y = L.tensor([4.0]).as_subclass(LoggingTensor)
    r = scaled_mul(x, y)

    @o.wrap_torch_function(lambda a: (a,))
    def plus(a):
        return a + 0

    seen_w = []

    class W(L.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen_w.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)

    plus(L.ones(1).as_subclass(W))
    with L.DisableTorchFunctionSubclass():
        plain = _name(L.ones(1).as_subclass(W) + 1)
    return {"seen": seen, "r": r.tolist(), "r_type": _name(r), "wrapped": seen_w, "disabled": plain,
            "resolve": [o.resolve_name(L.add), o.resolve_name(L.nn.functional.relu)]}


CASES = {f.__name__: f for f in [subclass_results, logging_subclass, modes, duck_types, handle_and_redispatch]}


def run(L, name):
    return CASES[name](L)
