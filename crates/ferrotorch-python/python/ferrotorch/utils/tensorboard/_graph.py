"""``add_graph``: a module traced with ``ferrotorch.jit.trace``, as
TensorBoard's ``GraphDef`` (one ``NodeDef`` per value and op, each op's
output shapes in ``_output_shapes``), as torch's ``_pytorch_graph`` does."""

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def _shape_attr(sizes_list):
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in sizes]) for sizes in sizes_list]
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


def graph(model, args, verbose=False, use_strict_trace=True):
    """``(GraphDef, RunMetadata)`` of ``model`` traced on ``args``."""
    from ... import jit

    if args is None:
        raise ValueError("add_graph needs input_to_model to trace the model")
    inputs = args if isinstance(args, (list, tuple)) else (args,)
    traced = jit.trace(model, tuple(inputs) if len(inputs) > 1 else inputs[0])
    ins, nodes, outs = traced.inlined_graph._describe()
    if verbose:
        print(traced.inlined_graph)
    defs = []
    # the module itself (TorchScript's %self) is not an input to show
    ins = [v for v in ins if v[1] is not None]
    for name, sizes, dtype in ins:
        attr = {"_output_shapes": _shape_attr([sizes])} if sizes is not None else {}
        if dtype:
            attr["attr"] = AttrValue(s=f"{{ dtype : {dtype} }}".encode())
        defs.append(NodeDef(name=f"input/{name}", op="IO Node", input=[], attr=attr))
    produced = {name: f"input/{name}" for name, _, _ in ins}
    for i, (kind, inputs_of, outputs) in enumerate(nodes):
        node_name = f"{kind.replace('::', '/')}_{i}"
        shapes = [sizes for _, sizes, _ in outputs if sizes is not None]
        attr = {"_output_shapes": _shape_attr(shapes)} if shapes else {}
        defs.append(NodeDef(name=node_name, op=kind, device="/device:CPU:0",
                            input=[produced[n] for n in inputs_of if n in produced], attr=attr))
        for name, _, _ in outputs:
            produced[name] = node_name
    for k, name in enumerate(outs):
        if name in produced:
            defs.append(NodeDef(name=f"output/output.{k + 1}", op="IO Node", input=[produced[name]]))
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=defs, versions=VersionDef(producer=22)), stats
