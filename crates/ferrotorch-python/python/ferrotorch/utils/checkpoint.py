"""``torch.utils.checkpoint``: activation checkpointing.

Note [Python checkpoint]: the checkpointed function runs under no_grad,
keeping only its inputs (and the generator's state); when its gradient is
needed it runs again with grad mode on and is differentiated there, the
generator restored so that dropout draws the same masks. Both of torch's
variants are here with torch's checks and warnings. ``use_reentrant=True``
is torch's reentrant checkpoint: gradients of tensors the function uses
but was not given (a module's parameters) are accumulated into their
``.grad`` by a backward of its own, so ``torch.autograd.grad`` through it
is refused as torch refuses it. ``use_reentrant=False`` also takes keyword
arguments, and hands the parameters of the modules it can see (the
function itself, the module of a bound method, modules and tensors in its
closure or a ``functools.partial``) to the engine as inputs of the
recomputation node, so their gradients reach ``autograd.grad`` and hooks
as without checkpointing. torch does this with saved-tensor hooks, which
ferrotorch's engine does not have yet.
"""

import contextlib
import functools
import warnings

from .. import _C
from ..autograd import grad as _grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..random import get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states", "set_device_states",
           "noop_context_fn", "set_checkpoint_early_stop", "DefaultDeviceType",
           "set_checkpoint_debug_enabled", "CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]


class CheckpointError(RuntimeError):
    """Raised when a recomputation does not match its forward."""


def noop_context_fn():
    """The default ``context_fn``: no context around either pass."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Each tensor of ``inputs`` detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, _C.Tensor):
            y = x.detach()
            y.requires_grad_(x.requires_grad)
            out.append(y)
        else:
            out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    """Warn when no input requires grad (the checkpoint then has no gradient)."""
    if not any(isinstance(x, _C.Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def get_device_states(*args):
    """Accelerator generator states of the tensors' devices: none on the CPU."""
    return [], []


def set_device_states(devices, states, *, device_type=None):
    """Restore what ``get_device_states`` returned (nothing on the CPU)."""


class DefaultDeviceType:
    """The device type whose generator a checkpoint preserves."""

    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type


_early_stop = True
_debug = False


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether recomputation may stop once the needed tensors are back
    (accepted; the recomputation here always runs the whole function)."""
    global _early_stop
    prev, _early_stop = _early_stop, enable
    try:
        yield
    finally:
        _early_stop = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Override ``debug=`` for the checkpoints in the block."""
    global _debug
    prev, _debug = _debug, enabled
    try:
        yield
    finally:
        _debug = prev


def _tensors_of(function):
    """The parameters and tensors requiring grad that ``function`` can
    reach without being given them (Note [Python checkpoint])."""
    from ..nn.modules.module import Module

    seen, out = set(), []

    def add(t):
        if isinstance(t, _C.Tensor) and t.requires_grad and id(t) not in seen:
            seen.add(id(t))
            out.append(t)

    def visit(obj, depth=0):
        if depth > 3:
            return
        if isinstance(obj, Module):
            for p in obj.parameters():
                add(p)
        elif isinstance(obj, _C.Tensor):
            add(obj)
        elif isinstance(obj, functools.partial):
            visit(obj.func, depth + 1)
            for a in (*obj.args, *obj.keywords.values()):
                visit(a, depth + 1)
        elif isinstance(obj, (list, tuple)):
            for a in obj:
                visit(a, depth + 1)
        elif callable(obj):
            visit(getattr(obj, "__self__", None), depth + 1)
            for cell in getattr(obj, "__closure__", None) or ():
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:  # an empty cell
                    pass

    visit(function)
    return out


class CheckpointFunction(Function):
    """The recomputing node: ``apply(run_function, preserve_rng_state,
    *args)`` (torch's reentrant checkpoint)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.inputs = args
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = detach_variable(tuple(ctx.inputs))
        outputs = _recompute(ctx, lambda: ctx.run_function(*inputs))
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, _C.Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        from ..autograd import backward

        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, _C.Tensor) else None for x in inputs)


def _recompute(ctx, run):
    rng = get_rng_state() if ctx.preserve_rng_state else None
    try:
        if rng is not None:
            set_rng_state(ctx.rng_state)
        with enable_grad():
            return run()
    finally:
        if rng is not None:
            set_rng_state(rng)


class _CheckpointNoReentrant(Function):
    """The node of ``use_reentrant=False``: its inputs are the call's
    tensors and the tensors the function reaches (Note [Python checkpoint])."""

    @staticmethod
    def forward(ctx, run, preserve_rng_state, n_args, *tensors):
        ctx.run, ctx.n_args = run, n_args
        ctx.preserve_rng_state = preserve_rng_state
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.save_for_backward(*tensors[:n_args])
        ctx.captured = tensors[n_args:]
        with no_grad():
            return run(*tensors[:n_args])

    @staticmethod
    def backward(ctx, *grads):
        args = [t.detach().requires_grad_(ctx.needs_input_grad[3 + i] and (t.is_floating_point() or t.is_complex()))
                for i, t in enumerate(ctx.saved_tensors)]
        outputs = _recompute(ctx, lambda: ctx.run(*args))
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, _C.Tensor) and o.requires_grad and g is not None]
        targets = [a for a in args if a.requires_grad] + [c for c in ctx.captured]
        got = iter(_grad([o for o, _ in pairs], targets, [g for _, g in pairs], allow_unused=True)
                   if pairs and targets else [None] * len(targets))
        arg_grads = [next(got) if a.requires_grad else None for a in args]
        return (None, None, None, *arg_grads, *[next(got) for _ in ctx.captured])


def _flatten_call(function, args, kwargs):
    """The call's tensors as a flat list, and a function of them that
    rebuilds the call (other values stay where they were)."""
    slots = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
    kslots = [k for k, v in kwargs.items() if isinstance(v, _C.Tensor)]
    tensors = [args[i] for i in slots] + [kwargs[k] for k in kslots]

    def run(*ts):
        a, kw = list(args), dict(kwargs)
        for i, t in zip(slots, ts[:len(slots)]):
            a[i] = t
        for k, t in zip(kslots, ts[len(slots):]):
            kw[k] = t
        return function(*a, **kw)

    return tensors, run


def checkpoint(function=None, *args, use_reentrant=None, preserve_rng_state=True, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, respect_saved_tensors_hooks=None,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate
    tensors, recomputing it in backward (Note [Python checkpoint]). With no
    function, a decorator."""
    if function is None and not args:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return lambda fn: functools.wraps(fn)(lambda *a, **k: checkpoint(
            fn, *a, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state, context_fn=context_fn,
            determinism_check=determinism_check, debug=debug, early_stop=early_stop, **k))
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In a future "
            "release, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False or respect_saved_tensors_hooks is not None:
            raise ValueError("Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` is only supported "
                             "when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    forward_ctx, recompute_ctx = context_fn()
    tensors, run = _flatten_call(function, args, kwargs)

    def run_in(ctx_manager):
        def go(*ts):
            with ctx_manager:
                return run(*ts)
        return go

    captured = [t for t in _tensors_of(function) if all(t is not x for x in tensors)]
    out = _CheckpointNoReentrant.apply(run_in(recompute_ctx), preserve_rng_state, len(tensors), *tensors, *captured) \
        if (tensors or captured) else None
    if out is None:
        with forward_ctx:
            return function(*args, **kwargs)
    return out


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequential model in ``segments`` pieces (the last one
    runs normally)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In a future release, we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
            "two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


class CheckpointPolicy:
    """Selective checkpointing's per-op policy (torch's enum values)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


class SelectiveCheckpointContext:
    """What a selective-checkpoint policy function is given."""

    def __init__(self, *, is_recompute):
        self.is_recompute = is_recompute


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """Contexts for ``context_fn`` that save some ops' outputs instead of
    recomputing them. ferrotorch recomputes the whole function (Note
    [Python checkpoint]), which gives the same values and gradients; the
    policy is checked and accepted."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not callable(op) and not isinstance(op, str):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got {op} of type {type(op)}")
    elif not callable(policy_fn_or_list):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return contextlib.nullcontext(), contextlib.nullcontext()
