"""torch's top-level functions that are other ops under another name or
argument convention: creation from buffers and files (``frombuffer``,
``from_file``, ``asarray``, the deprecated inclusive ``range``,
``vander``), norms (``frobenius_norm``, ``nuclear_norm``,
``norm_except_dim``), the ``*_copy`` forms of views,
the functional dropouts' ATen names, the layer ops' ATen entry points
(``convolution``, ``conv_tbc``, ``embedding_bag`` with its 4 results,
``ctc_loss`` with an int reduction), and the small classes torch keeps at
the top level (``layout``, ``Stream``, ``Event``, ``Tag``,
``FatalError``)."""

import enum
import warnings

from . import _C


def _ft():
    import ferrotorch

    return ferrotorch


def _np_dtype(dtype):
    import numpy as np

    name = repr(dtype).replace("torch.", "")
    table = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
             "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_,
             "complex64": np.complex64, "complex128": np.complex128}
    if name not in table:
        raise TypeError(f"frombuffer/from_file: dtype {dtype} has no NumPy equivalent here")
    return table[name]


# ---- creation ----

def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over ``buffer``'s memory (shared, not copied), from byte
    ``offset``, ``count`` elements (-1: to the end)."""
    import numpy as np

    mv = memoryview(buffer)
    if mv.nbytes == 0:
        raise ValueError(f"both buffer length ({mv.nbytes}) and count ({count}) must not be 0")
    if offset < 0 or offset >= mv.nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({mv.nbytes} bytes) minus 1")
    arr = np.frombuffer(buffer, dtype=_np_dtype(dtype), count=count, offset=offset)
    t = _ft().from_numpy(arr)
    return t.requires_grad_(True) if requires_grad else t


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False):
    """``size`` elements of ``dtype`` read from ``filename``; with
    ``shared=True`` the tensor maps the file (writes go to it)."""
    import numpy as np

    ft = _ft()
    dtype = dtype or ft.get_default_dtype()
    npd = _np_dtype(dtype)
    if shared:
        arr = np.memmap(filename, dtype=npd, mode="r+", shape=(size,))
    else:
        arr = np.fromfile(filename, dtype=npd, count=size)
        if arr.size < size:
            raise RuntimeError(f"unexpected EOF, expected {size * np.dtype(npd).itemsize} bytes, got "
                               f"{arr.size * np.dtype(npd).itemsize}")
    return ft.from_numpy(arr)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``obj`` as a tensor: shared when it already is one (or exposes the
    buffer or array protocol) unless ``copy=True`` or a dtype change needs
    one (``copy=False`` then raises)."""
    ft = _ft()
    if isinstance(obj, _C.Tensor):
        t = obj
        if dtype is not None and t.dtype != dtype:
            if copy is False:
                raise ValueError("can't alias tensor from tensor with a different dtype (copy=False)")
            t = t.to(dtype)
        elif copy:
            t = t.clone()
    else:
        try:
            import numpy as np

            arr = np.asarray(obj) if not copy else np.array(obj)
            if arr.dtype == object:
                raise TypeError
            t = ft.from_numpy(arr) if arr.dtype != np.float64 or dtype is not None or \
                not isinstance(obj, (list, tuple, float, int)) else ft.tensor(obj)
        except (TypeError, ValueError):
            t = ft.tensor(obj)
        if isinstance(obj, (list, tuple, float, int, bool)):
            t = ft.tensor(obj, dtype=dtype)
        elif dtype is not None and t.dtype != dtype:
            t = t.to(dtype)
    if requires_grad:
        t = t.detach().requires_grad_(True) if t is obj else t.requires_grad_(True)
    return t


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The deprecated inclusive range [start, end] (torch warns)."""
    ft = _ft()
    if end is None:
        start, end = 0, start
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    n = int((end - start) // step) + 1
    t = ft.arange(n, dtype=ft.float64) * step + start
    t = t.to(dtype or ft.get_default_dtype())
    return t.requires_grad_(True) if requires_grad else t


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of ``x``: columns x^(N-1), ..., x^0 (increasing
    powers with ``increasing``)."""
    ft = _ft()
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    N = x.shape[0] if N is None else N
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    dt = ft.promote_types(x.dtype, ft.int64) if not (x.is_floating_point() or x.is_complex()) else x.dtype
    powers = ft.arange(N)
    if not increasing:
        powers = powers.flip(0)
    return x.to(dt).unsqueeze(1) ** powers.to(dt if dt.is_floating_point else ft.int64)


# ---- norms ----

def frobenius_norm(input, dim, keepdim=False):
    """The Frobenius norm over ``dim``."""
    return _ft().linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The nuclear norm (sum of singular values) of the matrices in ``dim``."""
    ft = _ft()
    if isinstance(dim, bool):
        keepdim, dim = dim, None
    return ft.linalg.matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim, keepdim=keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dimension but ``dim``."""
    from .nn.utils.parametrizations import norm_except_dim as f

    return f(v, pow, dim)


# ---- views as copies ----

def _copying(view):
    def f(*args, **kwargs):
        out = view(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(t.clone() for t in out)
        return out.clone()

    return f


def select_copy(input, dim, index):
    """``torch.select`` into new memory."""
    return input.select(dim, index).clone()


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """A slice along ``dim`` into new memory."""
    idx = [slice(None)] * input.dim()
    idx[dim] = slice(start, end, step)
    return input[tuple(idx)].clone()


def split_copy(tensor, split_size, dim=0):
    """``torch.split`` into new memory."""
    return [t.clone() for t in tensor.split(split_size, dim)]


def detach_copy(input):
    """``input.detach()`` into new memory."""
    return input.detach().clone()


def view_as_complex_copy(input):
    return _ft().view_as_complex(input).clone()


def view_as_real_copy(input):
    return _ft().view_as_real(input).clone()


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` (torch's "unsafe" variant skips view tracking)."""
    return list(input.split(list(split_sizes), dim))


# ---- functional dropouts under their ATen names ----

def dropout_(input, p, train):
    """Dropout in place."""
    return input.copy_(_ft().nn.functional.dropout(input, p, train))


def alpha_dropout_(input, p, train):
    return input.copy_(_ft().nn.functional.alpha_dropout(input, p, train))


def feature_dropout(input, p, train):
    """Dropout of whole channels (dim 1): ``dropout2d``'s ATen name."""
    ft = _ft()
    if not train or p == 0:
        return input
    shape = (input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2)
    mask = ft.empty(shape, dtype=input.dtype).bernoulli_(1 - p).div_(1 - p)
    return input * mask


def feature_dropout_(input, p, train):
    return input.copy_(feature_dropout(input, p, train))


def feature_alpha_dropout_(input, p, train):
    return input.copy_(_ft().nn.functional.feature_alpha_dropout(input, p, train))


def native_dropout(input, p, train):
    """``(output, mask)``: the mask of kept elements (bool) and the output
    scaled by 1/(1-p); in eval, the input and an all-true mask."""
    ft = _ft()
    if not train or p == 0:
        return input.clone(), ft.ones_like(input, dtype=ft.bool)
    keep = ft.empty_like(input).bernoulli_(1 - p).to(ft.bool)
    return input * keep / (1 - p), keep


# ---- layer ops under their ATen entry points ----

def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """ATen's general convolution: by the weight's spatial rank and
    ``transposed``."""
    F = _ft().nn.functional
    n = weight.dim() - 2
    if transposed:
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution of a (time, batch, channel) sequence with a
    (kernel, in, out) weight."""
    F = _ft().nn.functional
    x = input.permute(1, 2, 0)
    w = weight.permute(2, 1, 0)
    return F.conv1d(x, w, bias, padding=pad).permute(2, 0, 1)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _ft().nn.functional.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                                 dilation)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _ft().nn.functional.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """ATen's CTC loss (``reduction`` 0/1/2 for none/mean/sum)."""
    red = _REDUCTIONS.get(reduction, reduction)
    return _ft().nn.functional.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, red,
                                        zero_infinity)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """ATen's embedding bag: ``(output, offset2bag, bag_size, max_indices)``
    (``mode`` 0/1/2 for sum/mean/max)."""
    ft = _ft()
    names = {0: "sum", 1: "mean", 2: "max"}
    out = ft.nn.functional.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                                         mode=names.get(mode, mode), sparse=sparse,
                                         per_sample_weights=per_sample_weights,
                                         include_last_offset=include_last_offset, padding_idx=padding_idx)
    n = indices.numel()
    if offsets is None:
        bags = indices.shape[0] if indices.dim() == 2 else 1
        per = indices.shape[1] if indices.dim() == 2 else n
        offset2bag = ft.arange(bags).repeat_interleave(per)
        bag_size = ft.full((bags,), per, dtype=ft.int64)
    else:
        starts = offsets[:-1] if include_last_offset else offsets
        ends = ft.cat([starts[1:], ft.tensor([n])]) if not include_last_offset else offsets[1:]
        bag_size = ends - starts
        offset2bag = ft.repeat_interleave(ft.arange(starts.numel()), bag_size) if n else ft.zeros(0, dtype=ft.int64)
    max_indices = ft.zeros_like(bag_size) if mode != 2 else ft.zeros((bag_size.numel(), weight.shape[1]),
                                                                      dtype=ft.int64)
    return out, offset2bag, bag_size, max_indices


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Scale the rows ``indices`` of ``weight`` whose ``norm_type``-norm
    exceeds ``max_norm`` down to it, in place."""
    ft = _ft()
    with ft.no_grad():
        rows = indices.reshape(-1).unique()
        sel = weight.index_select(0, rows)
        norms = sel.norm(norm_type, dim=1, keepdim=True)
        scale = ft.where(norms > max_norm, max_norm / (norms + 1e-7), ft.ones_like(norms))
        weight.index_copy_(0, rows, sel * scale)
    return weight


def native_channel_shuffle(input, groups):
    return _ft().nn.functional.channel_shuffle(input, groups)


def affine_grid_generator(theta, size, align_corners):
    return _ft().nn.functional.affine_grid(theta, list(size), align_corners)


# ---- classes ----

class layout:
    """A tensor layout (``torch.strided``: dense; sparse layouts name the
    dispatcher issue's Sparse key and have no tensors here)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_layout_named, (self.name,))


LAYOUTS = {n: layout(n) for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
                                  "_mkldnn", "jagged")}


def _layout_named(name):
    return LAYOUTS[name]


class FatalError(Exception):
    """An unrecoverable internal error (torch's ``torch.FatalError``)."""


class Tag(enum.Enum):
    """Operator tags (``torch.Tag``), as torch names them."""

    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace_view = 6
    maybe_aliasing_or_mutating = 7
    needs_contiguous_strides = 8
    needs_exact_strides = 9
    needs_fixed_stride_order = 10
    nondeterministic_bitwise = 11
    nondeterministic_seeded = 12
    pointwise = 13
    pt2_compliant_tag = 14
    view_copy = 15


class Stream:
    """``torch.Stream(device)``: the CPU's synchronous stream."""

    def __new__(cls, device=None, *, priority=0):
        from .cpu import Stream as CpuStream

        if device is not None and str(device).split(":")[0] != "cpu":
            raise RuntimeError(f"torch.Stream: no device '{device}' here (ferrotorch runs on the CPU)")
        return CpuStream(priority)


class Event:
    """``torch.Event(device)``: a CPU event (complete when recorded)."""

    def __new__(cls, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        from .cpu import Event as CpuEvent

        if device is not None and str(device).split(":")[0] != "cpu":
            raise RuntimeError(f"torch.Event: no device '{device}' here (ferrotorch runs on the CPU)")
        return CpuEvent()


def to_dlpack(tensor):
    """A DLPack capsule over ``tensor``'s memory."""
    return tensor.__dlpack__()


def install(namespace):
    names = ["frombuffer", "from_file", "asarray", "range", "vander", "frobenius_norm", "nuclear_norm",
             "norm_except_dim", "select_copy", "slice_copy", "split_copy", "detach_copy", "view_as_complex_copy",
             "view_as_real_copy", "unsafe_split_with_sizes", "dropout_", "alpha_dropout_", "feature_dropout",
             "feature_dropout_", "feature_alpha_dropout_", "native_dropout", "convolution", "conv_tbc",
             "conv_transpose3d", "max_pool3d", "ctc_loss", "embedding_bag", "embedding_renorm_",
             "native_channel_shuffle", "affine_grid_generator", "layout", "FatalError", "Tag", "Stream", "Event",
             "to_dlpack"]
    for n in names:
        namespace.setdefault(n, globals()[n])
    for n, lay in LAYOUTS.items():
        namespace.setdefault(n, lay)
    namespace.setdefault("concat", namespace["cat"])
    namespace.setdefault("concatenate", namespace["cat"])
    _C.Tensor.layout = property(lambda self: LAYOUTS["strided"], doc="The layout: torch.strided.")
