"""How tensors cross processes (torch's ``multiprocessing/reductions.py``).

A tensor pickled by ``multiprocessing`` (``Queue.put``, ``Pipe.send``,
``Process`` arguments, ``Pool`` tasks and results) is moved into shared
memory if it is not there yet, and only its file's descriptor and a small
description travel: the descriptor over a Unix socket with ``SCM_RIGHTS``
through the root process's descriptor keeper (Note [Descriptor keeper] in
``_keeper.py``; without a keeper, through ``multiprocessing``'s own
``DupFd``), the description in the pickle. The receiver checks both
and maps the same memory, so writes on either side are seen by the other
(Note [Shared memory] in ferrotorch-core). No tensor bytes are copied
through the pipe.
"""

import multiprocessing
from multiprocessing.reduction import ForkingPickler

from .. import _C
from . import _keeper

_registered = False


class _Deposit:
    """A descriptor waiting in the keeper (Note [Descriptor keeper])."""

    def __init__(self, fd):
        self.id = _keeper.deposit(fd)

    def detach(self):
        return _keeper.withdraw(self.id)

    def __reduce__(self):
        return (_deposit_ref, (self.id,))


def _deposit_ref(i):
    d = _Deposit.__new__(_Deposit)
    d.id = i
    return d


def _handle(fd):
    """What travels in the pickle for descriptor ``fd`` (still ours)."""
    if _keeper.available():
        return _Deposit(fd)
    return multiprocessing.reduction.DupFd(fd)


def rebuild_tensor(df, meta, cls=None):
    """Unpickle a shared tensor: take the descriptor, map its file, view it."""
    try:
        fd = df.detach()
    except RuntimeError as e:
        if "ancdata" in str(e):
            raise RuntimeError(
                "ferrotorch.multiprocessing: the shared memory descriptor of a tensor was "
                "dropped because this process is at its limit of open files (`ulimit -n`); "
                "received tensors keep one descriptor per shared file, so raise the limit or "
                "keep fewer received tensors alive") from e
        raise
    try:
        t = _C._tensor_from_shared(fd, meta)
    finally:
        import os

        os.close(fd)
    if cls is not None and cls is not _C.Tensor:
        from ..nn.parameter import Parameter

        if issubclass(cls, Parameter):
            return cls(t, meta[6])
    return t


def reduce_tensor(tensor):
    """Pickle a tensor as its shared-memory descriptor and description."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, "
            "since autograd does not support crossing process boundaries.  "
            "If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")
    fd, meta = _C._share_tensor(tensor)
    return (rebuild_tensor, (_handle(fd), meta, type(tensor)))


def rebuild_storage(df, size, offset):
    fd = df.detach()
    try:
        return _C.UntypedStorage._new_shared_fd_cpu(fd, size, offset)
    finally:
        import os

        os.close(fd)


def reduce_storage(storage):
    fd, size, offset = storage._share_fd_cpu_()
    return (rebuild_storage, (_handle(fd), size, offset))


def init_reductions():
    """Register the reductions with ``multiprocessing``'s pickler (done when
    ``ferrotorch.multiprocessing`` is imported)."""
    global _registered
    if _registered:
        return
    from ..nn.parameter import Buffer, Parameter

    for cls in (_C.Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
    ForkingPickler.register(_C.UntypedStorage, reduce_storage)
    _registered = True
