"""``nn.utils.rnn``: packed sequences (torch's layout: the time steps'
rows one after another, ``batch_sizes[t]`` rows at step ``t``, sequences
sorted by decreasing length), padding and unpadding. ``nn.RNN``/``LSTM``/
``GRU`` take a ``PackedSequence`` (Note [Packed recurrent layers] in
``nn/modules/rnn.py``)."""

from collections import namedtuple

from ... import _C

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _ft():
    import ferrotorch

    return ferrotorch


_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
# torch's name for the named tuple PackedSequence extends
PackedSequence_ = _PackedSequenceBase


def bind(optional, fn):
    """``fn(optional)``, or None when ``optional`` is None."""
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(_PackedSequenceBase):
    """Variable-length sequences packed together: ``data`` (sum of lengths,
    *), ``batch_sizes`` (int64, one per time step), and the permutation
    that sorted the batch (``sorted_indices``) with its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.dim() != 1 or batch_sizes.dtype != _ft().int64:
                raise ValueError("batch_sizes should be a 1D int64 tensor")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError("PackedSequence needs (data, batch_sizes)")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def _map(self, fn):
        return type(self)(fn(self.data), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """The sequence with ``data`` converted (``batch_sizes`` stays int64 on the CPU)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._map(lambda _: data)

    def cpu(self):
        return self

    def double(self):
        return self.to(dtype=_ft().double)

    def float(self):
        return self.to(dtype=_ft().float)

    def half(self):
        return self.to(dtype=_ft().half)

    def long(self):
        return self.to(dtype=_ft().long)

    def int(self):
        return self.to(dtype=_ft().int)

    def short(self):
        return self.to(dtype=_ft().short)

    def char(self):
        return self.to(dtype=_ft().int8)

    def byte(self):
        return self.to(dtype=_ft().uint8)

    def pin_memory(self):
        return self

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a permutation tensor (None for None)."""
    if permutation is None:
        return None
    ft = _ft()
    out = ft.empty_like(permutation)
    out.scatter_(0, permutation, ft.arange(0, permutation.numel(), dtype=permutation.dtype))
    return out


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {str(lengths.dtype).replace('ferrotorch', 'torch')} tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _pack_index(lengths, batch):
    """For lengths sorted decreasing: the row of each packed element in the
    (time-major) padded input flattened to (T * batch, *), and the batch
    sizes."""
    T = lengths[0] if lengths else 0
    rows, sizes = [], []
    for t in range(T):
        n = sum(1 for L in lengths if L > t)
        sizes.append(n)
        rows.extend(t * batch + b for b in range(n))
    return rows, sizes


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (``T × B × *``, or ``B × T × *``) of sequences of
    ``lengths``."""
    ft = _ft()
    L = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(L, L[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(L)), key=lambda i: -L[i])
        sorted_indices = ft.tensor(order, dtype=ft.int64)
        L = [L[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    if len(L) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(L)} "
                           f"(batch_size={B})")
    if L and L[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if L and L[0] > T:
        raise RuntimeError(f"Expected sequence length to be less than or equal to {T} (the padded length), "
                           f"but got {L[0]}")
    rows, sizes = _pack_index(L, B)
    flat = input.reshape(T * B, *input.shape[2:])
    data = flat.index_select(0, ft.tensor(rows, dtype=ft.int64))
    return PackedSequence(data, ft.tensor(sizes, dtype=ft.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: the padded batch (in the original
    order) and each sequence's length (int64)."""
    ft = _ft()
    sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    B = sizes[0] if sizes else 0
    T = len(sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in "
                             f"input, but got total_length={total_length} and max sequence length being {T}")
        T = total_length
    lengths = [sum(1 for n in sizes if n > b) for b in range(B)]
    data = sequence.data
    pad = ft.full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    pad_row = data.shape[0]
    index, at = [], 0
    for t in range(T):
        n = sizes[t] if t < len(sizes) else 0
        index.extend(range(at, at + n))
        index.extend([pad_row] * (B - n))
        at += n
    padded = ft.cat([data, pad]).index_select(0, ft.tensor(index, dtype=ft.int64)).reshape(T, B, *data.shape[1:])
    lengths_t = ft.tensor(lengths, dtype=ft.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths_t = lengths_t.index_select(0, sequence.unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths_t


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths (each ``L × *``) into ``T × B × *``
    (``B × T × *`` with ``batch_first``), padded on ``padding_side``."""
    ft = _ft()
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    T = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        n = T - s.shape[0]
        if n:
            fill = ft.full((n, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = ft.cat([s, fill]) if padding_side == "right" else ft.cat([fill, s])
        out.append(s)
    return ft.stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, each cut to its length. As torch's,
    a time-major batch is transposed in place (the caller's tensor becomes
    batch-major)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (each ``L × *``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a ``PackedSequence`` holds."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

