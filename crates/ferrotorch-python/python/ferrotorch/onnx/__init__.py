"""``torch.onnx``: ``export`` writes a model as an ONNX file (opset 18, IR
version 10) from the tracing JIT's graph (Note [ONNX export] in
ferrotorch-jit): parameters and buffers become initializers, traced sizes
stay symbolic, and ``dynamic_axes`` / ``dynamic_shapes`` name symbolic
dimensions. The model is traced in eval mode (torch's
``training=TrainingMode.EVAL``) and put back as it was."""

import inspect
import os

from .. import _C

__all__ = ["ONNXProgram", "export", "is_in_onnx_export"]

_exporting = False


def is_in_onnx_export():
    """Whether an export is tracing the model now."""
    return _exporting


class ONNXProgram:
    """What ``export`` returns: the model's bytes, ``save`` to write them,
    ``model_proto`` as an ``onnx.ModelProto`` where the ``onnx`` package
    is installed."""

    def __init__(self, data=None, path=None):
        self._data = data  # bytes, or the exporter's buffer (no copy)
        self._path = path

    @property
    def model_bytes(self):
        if self._data is None:
            with open(self._path, "rb") as fh:
                self._data = fh.read()
        elif not isinstance(self._data, bytes):
            self._data = bytes(memoryview(self._data))
        return self._data

    def _buffer(self):
        return self._data if self._data is not None else self.model_bytes

    @property
    def model_proto(self):
        import onnx

        return onnx.load_from_string(self.model_bytes)

    def save(self, destination, **_):
        if hasattr(destination, "write"):
            destination.write(self._buffer())
        else:
            with open(os.fspath(destination), "wb") as fh:
                fh.write(self._buffer())

    def __repr__(self):
        return f"ONNXProgram({len(self._buffer())} bytes)"


def _axes(dynamic_axes):
    out = []
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out.append((name, [(int(a), str(d)) for a, d in axes.items()]))
        elif isinstance(axes, (list, tuple)):
            out.append((name, [(int(a), f"{name}_dynamic_axes_{i + 1}") for i, a in enumerate(axes)]))
        else:
            raise TypeError(f"onnx.export: dynamic_axes[{name!r}] must be a dict or a list of axes")
    return out


def _shapes_to_axes(dynamic_shapes, names):
    """``dynamic_shapes`` (``{"x": {0: Dim("batch")}}`` or a tuple by
    position) as ``dynamic_axes`` of the inputs."""
    if isinstance(dynamic_shapes, dict):
        items = dynamic_shapes.items()
    else:
        items = zip(names, dynamic_shapes)
    out = {}
    for name, spec in items:
        if spec is None:
            continue
        if not isinstance(spec, dict):
            raise TypeError(f"onnx.export: dynamic_shapes[{name!r}] must map axes to Dim or names")
        out[name] = {a: getattr(d, "__name__", None) or str(d) for a, d in spec.items()}
    return out


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamic_axes=None, dynamic_shapes=None,
           keep_initializers_as_inputs=False, export_params=True, dynamo=True, **options):
    """``torch.onnx.export``: trace ``model(*args)`` and write it to ``f``
    (a path or a binary file) as ONNX; returns an ``ONNXProgram``."""
    global _exporting
    from .. import jit
    from ..nn import Module

    if kwargs:
        raise TypeError("onnx.export: keyword inputs (kwargs) are not supported; pass args")
    if not export_params:
        raise ValueError("onnx.export: export_params=False is not supported (weights are initializers)")
    if keep_initializers_as_inputs:
        raise ValueError("onnx.export: keep_initializers_as_inputs=True is not supported")
    args = args if isinstance(args, tuple) else (args,)
    try:
        params = list(inspect.signature(model.forward if isinstance(model, Module) else model).parameters)
    except (TypeError, ValueError):
        params = []
    names = list(input_names) if input_names is not None else (
        params[:len(args)] if len(params) >= len(args) else [f"input_{i}" for i in range(len(args))])
    axes = dict(dynamic_axes or {})
    if dynamic_shapes is not None:
        for k, v in _shapes_to_axes(dynamic_shapes, names).items():
            axes.setdefault(k, v)
    training = isinstance(model, Module) and model.training
    if training:
        model.eval()
    from .. import no_grad

    _exporting = True
    try:
        with no_grad():  # the graph, not gradients: nothing is saved for backward
            traced = jit.trace(model, args, check_trace=False)
    finally:
        _exporting = False
        if training:
            model.train()
    how = (traced._c, names, list(output_names or []), _axes(axes), opset_version)
    if isinstance(f, (str, os.PathLike)):
        # written from Rust: the weights are not copied into a Python object
        _C._onnx_export(*how, os.fspath(f))
        return ONNXProgram(path=os.fspath(f))
    prog = ONNXProgram(_C._onnx_export(*how))
    if f is not None:
        prog.save(f)
    return prog
