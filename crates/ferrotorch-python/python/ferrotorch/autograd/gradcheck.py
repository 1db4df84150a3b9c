"""``torch.autograd.gradcheck`` and ``gradgradcheck``: analytical
gradients (from backward) against central finite differences, one input
element at a time, with torch's arguments, defaults and error type."""

from .. import _C


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when a gradient does not match (torch's name)."""


def _as_tuple(x):
    if isinstance(x, _C.Tensor):
        return (x,)
    return tuple(x)


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor) and o.is_floating_point()]


def _numerical(func, inputs, i, outputs, eps):
    """Columns of d(outputs)/d(inputs[i]) by central differences, flattened:
    ``[numel(inputs[i])][sum of numel(outputs)]``."""
    from .grad_mode import no_grad

    import itertools

    x = inputs[i].detach()  # shares storage: writes below perturb the input

    def put(idx, v):
        with no_grad():
            x[idx] = v

    cols = []
    # the function itself runs with grad mode as the caller has it
    # (gradgradcheck's differentiates inside)
    for idx in itertools.product(*(range(n) for n in x.shape)):
        orig = x[idx].item()
        put(idx, orig + eps)
        up = [o.detach().reshape(-1).clone() for o in _outputs(func, inputs)]
        put(idx, orig - eps)
        down = [o.detach().reshape(-1).clone() for o in _outputs(func, inputs)]
        put(idx, orig)
        cols.append([((u - d) / (2 * eps)).tolist() for u, d in zip(up, down)])
    return cols


def _analytical(outputs, inputs, i):
    """The same Jacobian from backward, one output element at a time."""
    from . import grad

    x = inputs[i]
    rows = [[[0.0] * o.numel() for o in outputs] for _ in range(x.numel())]
    for j, o in enumerate(outputs):
        flat = o.reshape(-1)
        for m in range(flat.numel()):
            g = grad([flat[m]], [x], retain_graph=True, allow_unused=True)[0]
            if g is None:
                continue
            for k, v in enumerate(g.reshape(-1).tolist()):
                rows[k][j][m] = v
    return rows


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` (float64 tensors that
    require grad) against finite differences; ``True`` when they match."""
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]

    def fail(msg):
        if raise_exception:
            raise GradcheckError(msg)
        return False

    import ferrotorch

    for i in diff:
        if inputs[i].dtype != ferrotorch.float64:
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point.", stacklevel=2)
    outputs = _outputs(func, inputs)
    if not outputs:
        return fail("gradcheck expects at least one output tensor of floating point dtype")
    # every analytical Jacobian first: the finite differences write into
    # the inputs, which bumps their versions under the saved graph
    analytical = {i: _analytical(outputs, inputs, i) for i in diff}
    for i in diff:
        num = _numerical(func, inputs, i, outputs, eps)
        ana = analytical[i]
        for k in range(len(num)):
            for j in range(len(outputs)):
                for m, (a, n) in enumerate(zip(ana[k][j], num[k][j])):
                    if abs(a - n) > atol + rtol * abs(n):
                        return fail(f"Jacobian mismatch for output {j} with respect to input {i},\n"
                                    f"numerical:{n}\nanalytical:{a}\n(input element {k}, "
                                    f"output element {m})")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second derivatives: ``gradcheck`` of the map from ``inputs``
    (and ``grad_outputs``) to the first derivatives taken with
    ``create_graph=True``."""
    from . import grad

    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        # fixed, deterministic output gradients that require grad
        grad_outputs = tuple(
            (_C._call_op("arange", (o.numel(),), {"dtype": o.dtype}).reshape(o.shape) * 0.1 + 0.5)
            .requires_grad_(True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]

    def first(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _outputs(func, ins)
        gs = grad(outs, [ins[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
