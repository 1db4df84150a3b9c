"""``torch.export``: a module and example inputs in, an ``ExportedProgram``
out — an fx graph of ATen ops with the module's weights lifted to inputs —
and ``save``/``load`` of PyTorch's ``.pt2`` archives.

# Note [Exported programs]
Export traces one run with the JIT's tracer (Note [Tracing through the
dispatcher] in ferrotorch-jit): every op the module runs reaches the
tracer as the dispatcher op it is, with its overload, so the graph is at
the level torch's own export (training IR, non-strict) records —
``aten.linear``, ``aten.batch_norm``, in-place ``aten.add_`` of
``num_batches_tracked`` — and each node becomes an fx
``call_function`` of ``torch.ops.<ns>.<op>.<overload>``. Parameters,
buffers, tensor constants and custom class constants become placeholders
(``p_``/``b_``/``c_``/``obj_`` + the name) before the user's inputs,
named as torch names them; the signature says which is which. The run
happens on private copies of the inputs (a ``TensorQueue`` is copied),
and the module's buffers are put back afterwards, so exporting changes
nothing the caller holds (torch runs on fake tensors for that). Sizes
are static unless ``dynamic_shapes`` names a ``Dim``: a traced
``x.size(0)`` is folded to its value, or for a dynamic dim becomes an
``aten.sym_size.int`` node (Note [Symbolic sizes by retracing]). A call on
a custom class object is ``torch.ops.higher_order.call_torchbind`` in
order; ``run_decompositions`` threads those calls with effect tokens
(``with_effects``), as the seeds/004 graph shows, functionalises in-place
writes and decomposes composite ops (``_decomp``). A ``.pt2`` file
(``_pt2``) is read as data: ops are looked up in the dispatcher by name,
any other target is refused by name, and weights and example inputs go
through the safe readers — loading never runs code from the file.
"""


from . import _hop
from ._dynamic import Dim
from .exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,
                              OutputSpec)

__all__ = ["Dim", "ExportGraphSignature", "ExportedProgram", "InputKind", "InputSpec",
           "ModuleCallEntry", "ModuleCallSignature", "OutputKind", "OutputSpec",
           "default_decompositions", "export", "load", "save"]


def _install():
    from .. import ops

    _hop.install(ops)
    from ..fx.node import has_side_effect

    has_side_effect(_hop.call_torchbind)
    has_side_effect(_hop.with_effects)


_install()


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=False):
    """``torch.export.export``: trace ``mod(*args, **kwargs)`` once into an
    ``ExportedProgram`` (Note [Exported programs]). ``strict=True`` (torch's
    bytecode tracer) is not available: the program is traced non-strictly,
    as torch does with ``strict=False``."""
    from ..nn import Module
    from . import _trace

    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"Expecting `kwargs` to be a dict of example keyword inputs, got {type(kwargs)}")
    if strict:
        raise RuntimeError("export(strict=True): ferrotorch traces through the dispatcher "
                           "(non-strict export); call export(..., strict=False)")
    kwargs = kwargs or {}
    graph, sig, state_dict, constants, in_spec, out_spec, ranges = _trace.trace(
        mod, args, kwargs, dynamic_shapes)
    import inspect

    try:
        names = [p.name for p in inspect.signature(mod.forward).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = None
    ep = ExportedProgram(graph, sig, state_dict, constants, in_spec, out_spec,
                         example_inputs=(args, kwargs), range_constraints=ranges,
                         forward_arg_names=names)
    return ep


def default_decompositions():
    """``torch.export.default_decompositions()``: the table
    ``run_decompositions`` uses, op → decomposition (a dict you may edit)."""
    from . import _decomp

    return _decomp.default_table()


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=2):
    """``torch.export.save``: ``ep`` as a ``.pt2`` archive in PyTorch's
    layout (``torch.export.load`` reads it)."""
    from . import _pt2

    _pt2.save(ep, f, extra_files=extra_files)


def load(f, *, extra_files=None, expected_opset_version=None):
    """``torch.export.load``: the ``ExportedProgram`` of a ``.pt2``
    archive (ours or PyTorch's), read as data (Note [Exported programs])."""
    from . import _pt2

    return _pt2.load(f, extra_files=extra_files)



