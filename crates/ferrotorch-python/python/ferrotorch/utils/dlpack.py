"""``ferrotorch.utils.dlpack``: DLPack capsules, as ``torch.utils.dlpack``."""

import enum

from .._C import from_dlpack

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(tensor):
    """A DLPack capsule (``"dltensor"``) over ``tensor``'s memory, as
    ``torch.utils.dlpack.to_dlpack``: the consumer shares the memory."""
    return tensor.__dlpack__()


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (``kDLCPU`` is the one this build exports)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17

