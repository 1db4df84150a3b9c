"""``torch.autograd.Function``: custom differentiable ops written in
Python, run by the core engine as custom-function nodes."""

from .. import _C


class FunctionCtx:
    """The ``ctx`` passed to ``forward``/``backward``: ``save_for_backward``,
    ``saved_tensors``, ``needs_input_grad``, and any attribute you set."""

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._saved_versions = tuple(t._version if isinstance(t, _C.Tensor) else None
                                     for t in tensors)

    @property
    def saved_tensors(self):
        saved = getattr(self, "_saved", ())
        for t, v in zip(saved, self._saved_versions if saved else ()):
            if v is not None and t._version != v:
                dims = ", ".join(str(d) for d in t.shape)
                kind = {"float32": "Float", "float64": "Double", "float16": "Half",
                        "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                        "int8": "Char", "uint8": "Byte", "bool": "Bool"}[str(t.dtype)[6:]]
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [torch.{kind}Tensor [{dims}]] is at version "
                    f"{t._version}; expected version {v} instead. Hint: enable anomaly detection "
                    "to find the operation that failed to compute its gradient, with "
                    "torch.autograd.set_detect_anomaly(True).")
        return saved

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """Subclass with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)``; call ``MyFn.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        state = {}

        def forward(tensors):
            full = list(args)
            for p, t in zip(positions, tensors):
                full[p] = t
            out = cls.forward(ctx, *full, **kwargs)
            state["tuple"] = isinstance(out, tuple)
            return out if isinstance(out, tuple) else (out,)

        def backward(grads):
            got = cls.backward(ctx, *grads)
            if not isinstance(got, tuple):
                got = (got,)
            if len(got) != len(args):
                raise RuntimeError(
                    f"function {cls.__name__}Backward returned an incorrect number of gradients (expected {len(args)}, got {len(got)})"
                )
            return [got[p] for p in positions]

        outs = _C._function_apply(cls.__name__, forward, backward, [args[p] for p in positions])
        return tuple(outs) if state.get("tuple") else outs[0]
