"""``ferrotorch.utils.dlpack``: DLPack capsules, as ``torch.utils.dlpack``."""

from .._C import from_dlpack

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(tensor):
    """A DLPack capsule (``"dltensor"``) over ``tensor``'s memory, as
    ``torch.utils.dlpack.to_dlpack``: the consumer shares the memory."""
    return tensor.__dlpack__()
