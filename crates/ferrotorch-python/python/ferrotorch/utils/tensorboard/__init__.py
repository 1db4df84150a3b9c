"""``ferrotorch.utils.tensorboard``: ``SummaryWriter`` with torch's API.

The event files are written by the ``tensorboard`` package's own writer
(``EventFileWriter``) from its own protocol buffers, as
``torch.utils.tensorboard`` does, so TensorBoard reads them as it reads
PyTorch's. Like torch, this needs ``pip install tensorboard``.
"""

try:
    import tensorboard
except ImportError as e:  # torch raises ImportError here too
    raise ImportError(
        "ferrotorch.utils.tensorboard needs the tensorboard package "
        "(TensorBoard 1.15 or above), as torch.utils.tensorboard does: "
        "pip install tensorboard"
    ) from e


def _version(text):
    parts = []
    for p in str(text).split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


if not hasattr(tensorboard, "__version__") or _version(tensorboard.__version__) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del _version, tensorboard

from .writer import FileWriter, SummaryWriter  # noqa: E402
from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
