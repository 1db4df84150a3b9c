"""ferrotorch: PyTorch's architecture rebuilt in Rust.

``import ferrotorch as torch`` and use it as torch: tensors, every op as a
function and a method, autograd, ``nn``, ``optim`` and ``utils.data``.
"""

import math as _math

try:
    from . import _C
except ImportError as _e:  # the native extension is not built next to these sources
    raise ImportError(
        f"ferrotorch's native extension (ferrotorch._C) could not be imported: {_e}. "
        "Install the package with `pip install ./crates/ferrotorch-python` (it builds the "
        "extension; needs Rust's cargo on PATH), or for development run `maturin develop` in "
        "crates/ferrotorch-python; importing the sources directly needs the extension beside them."
    ) from _e
from ._C import (Tensor, dtype, from_dlpack, bfloat16, bool, double, float, float16, float32, float64,
                 half, int, int8, complex32, chalf, complex64, complex128, cfloat, cdouble, int16, int32, int64, long, short, uint8,
                 tensor, as_tensor, from_numpy, manual_seed, set_num_threads, result_type,
                 get_num_threads, get_default_dtype, set_default_dtype, promote_types,
                 is_grad_enabled, is_inference_mode_enabled)
from ._size import Size
from ._device import device
from ._memory_format import (memory_format, contiguous_format, preserve_format,  # noqa: F401
                             channels_last, channels_last_3d)
from . import _tensor  # noqa: F401  (installs the Python-level Tensor methods)
from . import _ops
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode)
from ._serialization import save, load
from . import random  # noqa: E402
from .random import default_generator, get_rng_state, initial_seed, manual_seed, set_rng_state  # noqa: E402,F811

_ops.install(globals(), Tensor)
from . import _namespaces  # noqa: E402
_namespaces.install(globals())

Generator = _C.Generator
UntypedStorage = _C.UntypedStorage


def __getattr__(name):
    # ``ferrotorch.multiprocessing`` on first use, as ``torch.multiprocessing``
    # is there after ``import torch`` (importing it starts the descriptor
    # keeper, which a process that never shares tensors does not need)
    if name == "multiprocessing":
        import importlib

        return importlib.import_module(".multiprocessing", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

from . import autograd, backends, cuda, jit, masked, nn, optim, profiler, return_types, signal, utils  # noqa: E402,F401
from . import serialization  # noqa: E402,F401
from . import _distributions_grad  # noqa: E402
from ._distributions_grad import gradient, normal  # noqa: E402,F401

_distributions_grad.install()
from . import fx  # noqa: E402,F401
from . import library  # noqa: E402,F401
from ._classes import classes, ScriptObject  # noqa: E402,F401
from . import _library  # noqa: E402,F401
from ._op_namespaces import ops  # noqa: E402,F401
from . import _logging, compiler  # noqa: E402,F401
from . import accelerator, testing  # noqa: E402,F401
from . import distributions, func  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401
from . import amp, cpu  # noqa: E402,F401
from . import futures  # noqa: E402,F401
ScriptModule = jit.ScriptModule
Future = futures.Future
from ._global_state import (are_deterministic_algorithms_enabled, get_default_device,  # noqa: E402,F401
                            get_deterministic_debug_mode, get_device_module, get_float32_matmul_precision,
                            get_num_interop_threads, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                            is_deterministic_algorithms_warn_only_enabled, is_distributed, is_storage,
                            is_warn_always_enabled, set_anomaly_enabled, set_default_device,
                            set_default_tensor_type, set_deterministic_debug_mode, set_float32_matmul_precision,
                            set_num_interop_threads, set_printoptions, set_warn_always, thread_safe_generator,
                            typename, use_deterministic_algorithms)
from .amp import GradScaler  # noqa: E402,F401
from .amp.autocast_mode import (autocast, autocast_decrement_nesting, autocast_increment_nesting,  # noqa: E402,F401
                                clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, get_autocast_xla_dtype, is_autocast_cache_enabled,
                                is_autocast_cpu_enabled, is_autocast_enabled, is_autocast_xla_enabled,
                                set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
                                set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype,
                                set_autocast_xla_dtype, set_autocast_xla_enabled)
from .distributions.utils import _sample_dirichlet, _standard_gamma  # noqa: E402,F401


def poisson(input, generator=None):
    """Poisson(rate) counts per element of ``input`` (float), on torch's stream."""
    return _C._call_op("poisson", (input,), {"generator": generator})


def binomial(count, prob, generator=None):
    """Binomial(count, prob) draws per element, on torch's stream."""
    return _C._call_op("binomial", (count, prob), {"generator": generator})
from ._compile import compile  # noqa: E402,F401

__version__ = "0.1.0"

# torch's constants
e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None


def is_tensor(obj):
    """Whether ``obj`` is a ferrotorch tensor."""
    return isinstance(obj, Tensor)


def numel(input):
    """The number of elements of ``input``."""
    return input.numel()


def seed():
    """Seed the default generator non-deterministically; return the seed."""
    return random.seed()


def broadcast_shapes(*shapes):
    """``torch.broadcast_shapes``: the shape tensors of these shapes
    broadcast to, or a RuntimeError naming the mismatch."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, _builtins.int) else tuple(shape)
        for i, n in enumerate(reversed(shape)):
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
            if i == len(out):
                out.append(n)
            elif out[i] == 1:
                out[i] = n
            elif n != 1 and n != out[i]:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between {out[i]} and {n}"
                )
    return Size(reversed(out))  # noqa: F821


def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real tensors)."""
    return input.adjoint()


def is_floating_point(input):
    """Whether ``input`` has a floating-point dtype."""
    return input.is_floating_point()


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """Uniform [0, 1) samples shaped like ``input``."""
    out = rand(tuple(input.shape), dtype=dtype or input.dtype)  # noqa: F821 (generated op)
    return out.requires_grad_(True) if requires_grad else out


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    """Standard normal samples shaped like ``input``."""
    out = randn(tuple(input.shape), dtype=dtype or input.dtype)  # noqa: F821 (generated op)
    return out.requires_grad_(True) if requires_grad else out


# bits, smallest normal and resolution (10^-decimal digits) per float type
_FINFO = {"float16": (16, 6.103515625e-05, 0.001), "bfloat16": (16, 1.1754943508222875e-38, 0.01),
          "float32": (32, 1.1754943508222875e-38, 1e-06), "float64": (64, 2.2250738585072014e-308, 1e-15)}


class finfo:
    """``finfo(dtype)``: ``bits``, ``eps``, ``max``, ``min``, ``tiny``
    (``smallest_normal``) and ``resolution`` of a floating-point dtype (a
    complex one: of its parts)."""

    def __init__(self, type=None):
        self.eps, self.max, dt = _C._finfo(get_default_dtype() if type is None else type)
        self.min = -self.max
        self.dtype = repr(dt)[6:]
        self.bits, self.tiny, self.resolution = _FINFO[self.dtype]
        self.smallest_normal = self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


_IINFO = {"uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -32768, 32767),
          "int32": (32, -2**31, 2**31 - 1), "int64": (64, -2**63, 2**63 - 1)}


class iinfo:
    """``iinfo(dtype)``: ``bits``, ``min`` and ``max`` of an integer dtype."""

    def __init__(self, type):
        name = repr(type)[6:]
        if name not in _IINFO:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle '{name}'")
        self.dtype = name
        self.bits, self.min, self.max = _IINFO[name]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


import builtins as _builtins  # noqa: E402  (int and float are dtypes here)

_nonzero_op = nonzero  # noqa: F821 (generated from the schema above)


def nonzero(input, *, as_tuple=False):
    """``torch.nonzero``: the indices of the non-zero elements, one row
    each; with ``as_tuple=True`` one index tensor per dimension (a 0-d
    input counts as 1-d)."""
    if as_tuple:
        return where(input)  # noqa: F821 (`where(Tensor condition) -> Tensor[]`)
    return _nonzero_op(input)


def _nonzero_method(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


_nonzero_method.__name__ = "nonzero"
Tensor.nonzero = _nonzero_method

def _unique_result(out, inverse, counts, return_inverse, return_counts):
    if return_inverse and return_counts:
        return out, inverse, counts
    if return_inverse:
        return out, inverse
    if return_counts:
        return out, counts
    return out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique``: the sorted distinct elements (or slices along
    ``dim``), with where each element went and how many there were when
    asked. Unsorted results are sorted too, as on torch's CPU."""
    if dim is None:
        out = _ops._call("_unique2", (input, sorted, return_inverse, return_counts), {})
    else:
        out = _ops._call("unique_dim", (input, dim, sorted, return_inverse, return_counts), {})
    return _unique_result(*out, return_inverse, return_counts)


_unique_consecutive_op = unique_consecutive  # noqa: F821 (generated from the schema)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique_consecutive``: each run of equal consecutive elements
    (or slices along ``dim``) kept once."""
    out = _unique_consecutive_op(input, return_inverse, return_counts, dim)
    return _unique_result(*out, return_inverse, return_counts)


def _unique_method(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return unique(self, sorted, return_inverse, return_counts, dim)


def _unique_consecutive_method(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


_unique_method.__name__ = "unique"
_unique_consecutive_method.__name__ = "unique_consecutive"
Tensor.unique = _unique_method
Tensor.unique_consecutive = _unique_consecutive_method


def tensordot(a, b, dims=2, out=None):
    """``torch.tensordot``: contract the last ``dims`` dimensions of ``a``
    with the first ``dims`` of ``b``, or the dimensions two lists name
    (``dims=([1, 0], [0, 1])``); ``dims`` may be a tensor, as in torch."""
    if out is not None:
        raise TypeError("tensordot: out= is not supported")
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.dim() == 0 else dims.tolist()
    if isinstance(dims, _builtins.int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(_builtins.range(a.dim() - dims, a.dim())), list(_builtins.range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, _builtins.int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, _builtins.int) else list(dims_b)
    return _C._call_op("tensordot", (a, b, dims_a, dims_b), {})


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``torch.norm`` (``torch/functional.py``'s dispatch): ``"fro"`` (the
    default) and numbers are ``linalg.vector_norm`` over ``dim`` (all
    dimensions when ``None``), ``"nuc"`` and other strings
    ``linalg.matrix_norm``."""
    if out is not None:
        raise TypeError("norm: out= is not supported")
    _dim = [dim] if isinstance(dim, _builtins.int) else dim
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, _builtins.int) or len(dim) <= 2):
            return linalg.vector_norm(input, 2, _dim, keepdim, dtype=dtype)  # noqa: F821
        if _dim is None:
            _dim = list(_builtins.range(input.dim()))
        return linalg.matrix_norm(input, p, _dim, keepdim, dtype=dtype)  # noqa: F821
    return linalg.vector_norm(input, 2.0 if p is None else p, _dim, keepdim, dtype=dtype)  # noqa: F821


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    return norm(self, p, dim, keepdim, dtype=dtype)


_norm_method.__name__ = "norm"
Tensor.norm = _norm_method


def lu(A, pivot=True, get_infos=False, out=None):
    """``torch.lu``: the packed LU factorization and pivots (and ``infos``
    with ``get_infos=True``); ``torch.linalg.lu_factor_ex`` underneath."""
    if out is not None:
        raise TypeError("lu: out= is not supported")
    LU, pivots, infos = linalg.lu_factor_ex(A, pivot=pivot)  # noqa: F821 (installed above)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


Tensor.lu = lu


from ._extra_ops import (nonzero_static, as_strided_scatter, native_layer_norm, einsum,  # noqa: E402,F401
                         native_batch_norm, native_group_norm, histogramdd, svd_lowrank,
                         pca_lowrank)
from .nn._functional_sampling import grid_sampler, grid_sampler_2d, grid_sampler_3d  # noqa: E402,F401

from . import _aten_extras  # noqa: E402

_aten_extras.install(globals())
from . import _torch_compositions  # noqa: E402

_torch_compositions.install(globals())

# torch's aliases, in-place forms and small queries, derived from the ops above
from . import _tensor_surface as _surface  # noqa: E402
import sys as _sys  # noqa: E402

_surface._install(_sys.modules[__name__])
# the rest of Tensor's attributes, and the deprecated typed storages
from . import _tensor_attrs  # noqa: E402
from . import storage  # noqa: E402

_tensor_attrs._install(_sys.modules[__name__])
storage._install(_sys.modules[__name__])
from . import types  # noqa: E402,F401  (torch.types: the type-hint names)

# torch's top-level names for the nn.functional ops whose top-level
# signature is the functional one (torch.cosine_similarity(x1, x2, dim=1,
# eps=1e-8), torch.pixel_shuffle, torch.conv3d, ...); the losses and
# dropouts differ at the top level (int reductions, `train`) and are not here
for _name in ("cosine_similarity", "pairwise_distance", "pdist", "pixel_shuffle",
              "pixel_unshuffle", "channel_shuffle", "hardshrink", "bilinear", "conv3d",
              "conv_transpose1d", "avg_pool1d", "max_pool1d", "adaptive_avg_pool1d", "rms_norm"):
    if _name not in globals():
        globals()[_name] = getattr(nn.functional, _name)
del _name

# ... and those whose top-level signature is ATen's (int reductions, `train`)
from . import _toplevel_nn  # noqa: E402

for _name in _toplevel_nn.NAMES:
    if _name not in globals():
        globals()[_name] = getattr(_toplevel_nn, _name)
del _name

# __torch_function__: the Python-level public functions join the
# schema-generated ops in dispatch (Note [Torch function dispatch])
from . import overrides  # noqa: E402
from . import hub  # noqa: E402,F401

overrides._install(_sys.modules[__name__], [
    (_sys.modules[__name__], "torch"), (nn.functional, "torch.nn.functional"), (linalg, "torch.linalg"),
    (fft, "torch.fft"), (special, "torch.special"), (Tensor, "torch.Tensor")])
from . import export  # noqa: E402,F401
from . import onnx  # noqa: E402,F401
from . import distributed  # noqa: E402,F401
