"""``ferrotorch.memory_format`` and its four values (Note [Memory formats]
in ``tensor/memory_format.rs``): a format is passed to the native ops by
name, so the type is a ``str`` holding torch's name."""


class memory_format(str):
    """``torch.contiguous_format``, ``torch.preserve_format``,
    ``torch.channels_last``, ``torch.channels_last_3d``."""

    __slots__ = ()

    def __repr__(self):
        return "torch." + str.__str__(self)

    __str__ = __repr__


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
