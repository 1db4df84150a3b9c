"""Summary protocol buffers for each kind of value (torch's
``torch.utils.tensorboard.summary``), built from the ``tensorboard``
package's own message classes."""

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert_np import make_np
from ._utils import convert_to_HWC, encode_png

__all__ = [
    "hparams",
    "histogram",
    "histogram_raw",
    "image",
    "make_histogram",
    "make_image",
    "scalar",
    "tensor_proto",
    "text",
]


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """A summary of one number: ``simple_value``, or with ``new_style`` a
    tensor of the ``scalars`` plugin (float, or double with
    ``double_precision``)."""
    array = make_np(tensor).squeeze()
    if array.ndim != 0:
        raise AssertionError(
            f"Tensor should contain one element (0 dimensions). "
            f"Was given size: {array.size} and {array.ndim} dimensions."
        )
    value = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    if double_precision:
        proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=meta)])


# dtype name -> (TensorProto dtype, value field, values as the field holds them)
def _as_list(a):
    return a.reshape(-1).tolist()


def _half_bits(a):
    return a.astype(np.float16).view(np.uint16).reshape(-1).astype(np.int32).tolist()


def _complex_parts(a):
    return np.stack([a.real, a.imag], -1).reshape(-1).tolist()


_TENSOR_FIELDS = {
    "float16": ("DT_HALF", "half_val", _half_bits),
    "float32": ("DT_FLOAT", "float_val", _as_list),
    "float64": ("DT_DOUBLE", "double_val", _as_list),
    "int8": ("DT_INT8", "int_val", _as_list),
    "uint8": ("DT_UINT8", "int_val", _as_list),
    "int16": ("DT_INT16", "int_val", _as_list),
    "int32": ("DT_INT32", "int_val", _as_list),
    "int64": ("DT_INT64", "int64_val", _as_list),
    "bool": ("DT_BOOL", "bool_val", _as_list),
    "complex64": ("DT_COMPLEX64", "scomplex_val", _complex_parts),
    "complex128": ("DT_COMPLEX128", "dcomplex_val", _complex_parts),
}


def tensor_proto(tag, tensor):
    """A summary holding a whole tensor (the ``tensor`` plugin)."""
    array = make_np(tensor)
    if array.size * array.itemsize >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    fields = _TENSOR_FIELDS.get(str(array.dtype))
    if fields is None:
        raise ValueError(f"{tag} has unsupported tensor dtype {getattr(tensor, 'dtype', array.dtype)}")
    dtype, field, convert = fields
    proto = TensorProto(
        dtype=dtype,
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in array.shape]),
        **{field: convert(array)},
    )
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=proto)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):  # noqa: A002
    """A histogram summary from statistics the caller computed."""
    histo = HistogramProto(
        min=min,
        max=max,
        num=num,
        sum=sum,
        sum_squares=sum_squares,
        bucket_limit=bucket_limits,
        bucket=bucket_counts,
    )
    return Summary(value=[Summary.Value(tag=name, histo=histo)])


def histogram(name, values, bins, max_bins=None):
    """A histogram summary of ``values`` (any shape)."""
    array = make_np(values)
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(array.astype(float), bins, max_bins))])


def make_histogram(values, bins, max_bins=None):
    """HistogramProto of ``values``: NumPy's counts over ``bins``, merged
    down to ``max_bins``, trimmed to the buckets that hold values (with one
    empty bucket on the left, since TensorBoard keeps right limits only)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        step = len(counts) // max_bins
        pad = (-len(counts)) % step
        counts = np.pad(counts, (0, pad)).reshape(-1, step).sum(-1)
        limits = np.concatenate([limits[:-1:step], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    first, last = int(nonzero[0]), int(nonzero[-1]) + 1
    if first > 0:
        counts = counts[first - 1 : last]
    else:
        counts = np.concatenate([[0], counts[:last]])
    limits = limits[first : last + 1]
    return HistogramProto(
        min=values.min(),
        max=values.max(),
        num=len(values),
        sum=values.sum(),
        sum_squares=values.dot(values),
        bucket_limit=limits.tolist(),
        bucket=counts.tolist(),
    )


def _scale_factor(array):
    # uint8 images are in [0, 255] already; others are taken as [0, 1]
    return 1 if array.dtype == np.uint8 else 255


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image summary: a CHW/HWC/HW image or an N-image batch tiled into
    one, floats taken as [0, 1] and uint8 as [0, 255], PNG-encoded."""
    array = convert_to_HWC(make_np(tensor), dataformats)
    scaled = (array.astype(np.float32) * _scale_factor(array)).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(scaled, rescale=rescale))])


def make_image(tensor, rescale=1):
    """Summary.Image of a uint8 HWC array (PNG)."""
    height, width, channels = tensor.shape
    if rescale != 1:
        try:
            from PIL import Image
        except ImportError as e:
            raise ImportError("image rescale needs PIL (pip install pillow), as torch's does") from e
        size = (int(width * rescale), int(height * rescale))
        tensor = np.asarray(Image.fromarray(tensor).resize(size, Image.Resampling.LANCZOS))
    return Summary.Image(
        height=height,
        width=width,
        colorspace=channels,
        encoded_image_string=encode_png(tensor),
    )


def text(tag, text):
    """A text summary (Markdown, the ``text`` plugin); its tag gets
    ``/text_summary`` as torch's."""
    meta = SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()
        )
    )
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[text.encode("utf_8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three summaries of the ``hparams`` plugin: the experiment (the
    hyperparameters' names and types, the metrics' tags), the session's
    start (the values) and its end (success)."""
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    from ... import Tensor

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    discrete = hparam_domain_discrete or {}
    if not isinstance(discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(
                f"parameter: hparam_domain_discrete[{k}] should be a list of same type as hparam_dict[{k}]."
            )

    start = SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            v = float(make_np(v).reshape(-1)[0])
        # bool before int: a bool is an int in Python, and torch tests
        # int/float first, so True is logged as the number 1 as torch's
        if isinstance(v, (int, float)):
            field, kind, wrap = "number_value", "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            field, kind, wrap = "string_value", "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(start.hparams[k], field, v)
        domain = None
        if k in discrete:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{wrap: d}) for d in discrete[k]])
        infos.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=domain))

    def wrap(tag, **content):
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        meta = SummaryMetadata(
            plugin_data=SummaryMetadata.PluginData(
                plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()
            )
        )
        return Summary(value=[Summary.Value(tag=tag, metadata=meta)])

    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (
        wrap(metadata.EXPERIMENT_TAG, experiment=experiment),
        wrap(metadata.SESSION_START_INFO_TAG, session_start_info=start),
        wrap(
            metadata.SESSION_END_INFO_TAG,
            session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS")),
        ),
    )
