"""``ferrotorch.backends``: the flags PyTorch scripts set or read for
cuDNN, CUDA matmuls and MPS, with a CPU-only torch's values. Setting them
is allowed and changes nothing here (there is no cuDNN or MPS)."""

import types

cudnn = types.ModuleType("ferrotorch.backends.cudnn")
cudnn.__doc__ = "cuDNN flags (no cuDNN in this build)."
cudnn.enabled = True
cudnn.benchmark = False
cudnn.deterministic = False
cudnn.allow_tf32 = True
cudnn.is_available = lambda: False
cudnn.version = lambda: None

mps = types.ModuleType("ferrotorch.backends.mps")
mps.__doc__ = "Apple MPS (not in this build)."
mps.is_available = lambda: False
mps.is_built = lambda: False

cuda = types.ModuleType("ferrotorch.backends.cuda")
cuda.__doc__ = "CUDA flags (no CUDA in this build)."
cuda.is_built = lambda: False
cuda.matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                    allow_bf16_reduced_precision_reduction=True)

def _sdp_flag(backend_name):
    def enabled():
        from ..nn import attention

        return attention._ENABLED[getattr(attention.SDPBackend, backend_name)]

    def enable(on):
        from ..nn import attention

        attention._ENABLED[getattr(attention.SDPBackend, backend_name)] = bool(on)

    return enabled, enable


for _name, _backend in [("flash", "FLASH_ATTENTION"), ("mem_efficient", "EFFICIENT_ATTENTION"), ("math", "MATH"),
                        ("cudnn", "CUDNN_ATTENTION"), ("overrideable", "OVERRIDEABLE")]:
    _on, _set = _sdp_flag(_backend)
    _on.__name__, _set.__name__ = f"{_name}_sdp_enabled", f"enable_{_name}_sdp"
    _on.__doc__ = f"Whether scaled_dot_product_attention may use {_backend} (torch.nn.attention)."
    _set.__doc__ = f"Allow or forbid {_backend} for scaled_dot_product_attention."
    setattr(cuda, _on.__name__, _on)
    setattr(cuda, _set.__name__, _set)
cuda.is_flash_attention_available = lambda: False

mkldnn = types.ModuleType("ferrotorch.backends.mkldnn")
mkldnn.__doc__ = "oneDNN flags (ferrotorch has its own CPU kernels)."
mkldnn.enabled = True
mkldnn.is_available = lambda: False

openmp = types.ModuleType("ferrotorch.backends.openmp")
openmp.is_available = lambda: False

import sys as _sys  # noqa: E402

for _m in (cudnn, mps, cuda, mkldnn, openmp):
    _sys.modules[_m.__name__] = _m
