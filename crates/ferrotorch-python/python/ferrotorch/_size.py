"""``ferrotorch.Size``: the shape tuple, printed as torch prints it."""


class Size(tuple):
    """A tuple of dimension sizes (``t.shape``)."""

    def __repr__(self):
        return f"torch.Size({list(self)!r})"

    def numel(self):
        """The number of elements a tensor of this shape holds."""
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        out = super().__getitem__(key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))
