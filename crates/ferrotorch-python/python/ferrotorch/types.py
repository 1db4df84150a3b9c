"""``torch.types``: the names torch's type hints use (``Storage``, ``Number``,
``Device``, ...)."""

from typing import Union

from . import _C
from .storage import TypedStorage, UntypedStorage

Storage = Union[TypedStorage, UntypedStorage]
Number = Union[int, float, bool]
_int, _float, _bool, _complex = int, float, bool, complex
Device = Union["_C.device", str, int, None] if hasattr(_C, "device") else Union[str, int, None]
