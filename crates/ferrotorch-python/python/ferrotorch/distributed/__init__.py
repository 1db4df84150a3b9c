"""``torch.distributed`` on existing engines: the ``"gloo"`` backend is
Gloo itself (Debian's libgloo-dev, through ferrotorch-distributed's C++
shim), with rendezvous through ``TCPStore`` at ``MASTER_ADDR:MASTER_PORT``
(``env://``, as ``mp.spawn`` programs and torchrun set it) or
``tcp://host:port``; the ``"mpi"`` backend is the MPI the build found
(Debian's Open MPI), for programs ``mpirun`` or Slurm starts, which take
their rank and world size from MPI. Collectives run on those engines;
nothing here reduces data itself. Each group runs its collectives in
order on a thread of its own (the native calls release the GIL), so
``async_op=True`` returns a ``Work`` at once while the engine works, and
``wait()`` joins it.
"""

import concurrent.futures as _cf
import datetime as _dt
import os as _os
import socket as _socket
import threading as _threading

from .. import _C

__all__ = ["Backend", "GroupMember", "HashStore", "ProcessGroup", "get_global_rank",
           "get_process_group_ranks", "group", "new_group", "FileStore", "PrefixStore", "ReduceOp", "Store", "TCPStore", "Work",
           "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
           "all_to_all_single", "barrier", "broadcast", "broadcast_object_list",
           "destroy_process_group", "gather", "irecv", "isend", "recv", "reduce",
           "reduce_scatter_tensor", "scatter", "send",
           "get_backend", "get_default_backend_for_device", "get_rank", "get_world_size",
           "init_process_group", "is_available", "is_gloo_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "is_torchelastic_launched"]

_DEFAULT_TIMEOUT = _dt.timedelta(minutes=30)


def is_available():
    """Whether ``torch.distributed`` is there (it is)."""
    return True


def is_gloo_available():
    return _C._gloo_availability()[0]


def is_mpi_available():
    return _C._mpi_availability()[0]


def is_nccl_available():
    return False


def is_torchelastic_launched():
    return _os.environ.get("TORCHELASTIC_RUN_ID") is not None


class Backend(str):
    """``torch.distributed.Backend``: a backend's name."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = name.lower()
        if value not in ("gloo", "nccl", "mpi", "undefined"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class _Op:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<RedOpType.{self.name}>"


class ReduceOp:
    """``torch.distributed.ReduceOp``."""

    SUM = _Op("SUM")
    AVG = _Op("AVG")
    PRODUCT = _Op("PRODUCT")
    MIN = _Op("MIN")
    MAX = _Op("MAX")
    BAND = _Op("BAND")
    BOR = _Op("BOR")
    BXOR = _Op("BXOR")


def _seconds(timeout):
    if timeout is None:
        return _DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, _dt.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _bytes(v):
    return v.encode() if isinstance(v, str) else bytes(v)


class Store:
    """``torch.distributed.Store``: a key-value store ranks meet in."""

    def __init__(self, native):
        self._s = native

    def set(self, key, value):
        self._s.set(key, _bytes(value))

    def get(self, key):
        return self._s.get(key)

    def add(self, key, amount):
        return self._s.add(key, int(amount))

    def compare_set(self, key, expected_value, desired_value):
        return self._s.compare_set(key, _bytes(expected_value), _bytes(desired_value))

    def wait(self, keys, timeout=None):
        self._s.wait(list(keys), None if timeout is None else _seconds(timeout))

    def check(self, keys):
        return self._s.check(list(keys))

    def delete_key(self, key):
        return self._s.delete_key(key)

    def num_keys(self):
        return self._s.num_keys()

    def set_timeout(self, timeout):
        self._s.set_timeout(_seconds(timeout))

    @property
    def timeout(self):
        return _dt.timedelta(seconds=self._s.timeout())


class HashStore(Store):
    """``torch.distributed.HashStore``: in this process's memory."""

    def __init__(self):
        super().__init__(_C._hash_store())


class FileStore(Store):
    """``torch.distributed.FileStore(file_name, world_size=-1)``: keys in a
    file every rank opens (Note [FileStore's log])."""

    def __init__(self, file_name, world_size=-1):
        super().__init__(_C._file_store(str(file_name), None if world_size is None or world_size < 0 else int(world_size)))
        self.path = str(file_name)


class PrefixStore(Store):
    """``torch.distributed.PrefixStore``: ``store``'s keys under ``prefix``."""

    def __init__(self, prefix, store):
        super().__init__(_C._prefix_store(prefix, store._s))
        self.underlying_store = store


class TCPStore(Store):
    """``torch.distributed.TCPStore``: the master serves the keys on
    ``host_name:port`` (port 0: a free one, ``.port``); with
    ``wait_for_workers`` and ``world_size`` the master waits until that
    many clients (itself included) have connected."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_dt.timedelta(seconds=300), wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        native, self._port = _C._tcp_store(host_name, int(port), bool(is_master), _seconds(timeout))
        super().__init__(native)
        self._host = host_name
        # each connection takes a number and says so; the master waits
        # (in the store, not by polling) for the world_size-th
        n = self._s.add("__ft_workers", 1)
        self._s.set(f"__ft_worker_{n}", b"")
        if is_master and wait_for_workers and world_size and n < world_size:
            try:
                self._s.wait([f"__ft_worker_{world_size}"], _seconds(timeout))
            except RuntimeError:
                raise RuntimeError(
                    f"TCPStore: timed out after {_seconds(timeout):g} s waiting for "
                    f"{world_size} workers ({self._s.add('__ft_workers', 0)} connected)") from None

    @property
    def host(self):
        return self._host

    @property
    def port(self):
        return self._port


class Work:
    """What an ``async_op=True`` collective returns: ``wait()`` until it
    is done (its error, if any, raised there), ``is_completed()``."""

    def __init__(self, future=None):
        self._f = future

    def wait(self, timeout=None):
        if self._f is not None:
            self._f.result(timeout=None if timeout is None else _seconds(timeout))
        return True

    def is_completed(self):
        return self._f is None or self._f.done()

    def is_success(self):
        return self.is_completed() and (self._f is None or self._f.exception() is None)

    def exception(self):
        return None if self._f is None else self._f.exception()


class ProcessGroup:
    """A group of ranks on one backend; ``ranks`` are their global ranks."""

    def __init__(self, backend, native, store, ranks):
        self.backend, self._pg, self._store, self._ranks = backend, native, store, list(ranks)
        self._queue = _cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"pg-{backend}")
        self._p2p = {}
        self._lock = _threading.Lock()
        self._outstanding = {}  # calls submitted to each queue and not yet done

    def rank(self):
        return self._pg.rank()

    def size(self):
        return self._pg.size()

    def name(self):
        return self.backend

    def _run(self, fn, async_op, queue=None):
        queue = queue or self._queue
        with self._lock:
            idle = self._outstanding.get(queue, 0) == 0
            if not (idle and not async_op):
                self._outstanding[queue] = self._outstanding.get(queue, 0) + 1
        if idle and not async_op:
            # nothing queued before it: run here (the native call releases
            # the GIL), without a hand-off to the group's thread and back
            fn()
            return None
        fut = queue.submit(fn)
        fut.add_done_callback(lambda _f: self._finished(queue))
        if async_op:
            return Work(fut)
        fut.result()
        return None

    def _finished(self, queue):
        with self._lock:
            self._outstanding[queue] -= 1

    def _p2p_queue(self, kind, peer):
        """Point-to-point calls run off the collectives' thread, on one
        thread per (direction, peer): an ``irecv`` waiting never holds up
        a ``send`` or a collective, and messages to one peer keep their
        order (as MPI's and Gloo's do)."""
        q = self._p2p.get((kind, peer))
        if q is None:
            q = self._p2p[(kind, peer)] = _cf.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"pg-{self.backend}-{kind}-{peer}")
        return q

    def _local(self, global_rank, what):
        if global_rank not in self._ranks:
            raise ValueError(f"{what}: global rank {global_rank} is not part of the group {self._ranks}")
        return self._ranks.index(global_rank)

    def _close(self):
        self._queue.shutdown(wait=True)
        for q in self._p2p.values():
            q.shutdown(wait=True)


class _NonMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """``torch.distributed.GroupMember``: what ``new_group`` gives a rank
    outside it."""

    WORLD = None
    NON_GROUP_MEMBER = _NonMember()


class group:  # noqa: N801 (torch's name)
    """``torch.distributed.group.WORLD``."""

    WORLD = None


_default = None


def _group(group):
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if group is not None:
        return group
    if _default is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _default


def _env(name):
    v = _os.environ.get(name)
    if v is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set")
    return v


def _transport_host(master):
    """The address this rank's Gloo pairs listen on."""
    if master in ("localhost", "127.0.0.1", "::1") or master.startswith("127."):
        return "127.0.0.1"
    try:
        return _socket.gethostbyname(_socket.gethostname())
    except OSError:
        return "127.0.0.1"


def get_default_backend_for_device(device):
    dev = str(device).split(":")[0]
    if dev == "cpu":
        return "gloo"
    raise RuntimeError(f"Default backend not registered for device : {device}")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """``torch.distributed.init_process_group``: join the default group
    (``env://`` unless ``init_method`` or ``store`` says otherwise)."""
    global _default
    if _default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or "gloo")
    if name == Backend.NCCL:
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    if name == Backend.MPI:
        _init_mpi(world_size, rank, _seconds(timeout))
        return
    ok, why = _C._gloo_availability()
    if not ok:
        raise RuntimeError(why)
    secs = _seconds(timeout)
    if store is not None:
        if world_size <= 0 or rank < 0:
            raise ValueError("world_size and rank must be given with store")
        master = "127.0.0.1"
    else:
        method = init_method or "env://"
        if method.startswith("env://"):
            master = _env("MASTER_ADDR")
            port = int(_env("MASTER_PORT"))
            rank = int(_env("RANK")) if rank == -1 else rank
            world_size = int(_env("WORLD_SIZE")) if world_size == -1 else world_size
        elif method.startswith("file://"):
            if rank == -1 or world_size == -1:
                raise ValueError("file:// rendezvous needs rank and world_size")
            master, port = "127.0.0.1", None
            store = FileStore(method[len("file://"):], world_size)
            store.set_timeout(_dt.timedelta(seconds=secs))
        elif method.startswith("tcp://"):
            hostport = method[len("tcp://"):].split("?")[0]
            master, _, p = hostport.rpartition(":")
            port = int(p)
            if rank == -1 or world_size == -1:
                raise ValueError("tcp:// rendezvous needs rank and world_size")
        else:
            raise ValueError(f"init_method {method!r} is not supported (env://, tcp://host:port or file:///path)")
        if world_size <= 0:
            raise ValueError(f"world_size must be positive, got {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"Invalid rank {rank} for world_size {world_size}")
        if store is None:
            store = TCPStore(master, port, world_size, is_master=(rank == 0),
                             timeout=_dt.timedelta(seconds=secs))
    if world_size <= 0:
        raise ValueError(f"world_size must be positive, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank} for world_size {world_size}")
    _one_thread()
    prefixed = PrefixStore("default_pg", store)
    pg = _C._gloo_group(prefixed._s, rank, world_size, _transport_host(master), secs)
    _default = ProcessGroup(name, pg, store, range(world_size))
    _default._host, _default._timeout, _default._groups = _transport_host(master), secs, 0
    group.WORLD = GroupMember.WORLD = _default


def _one_thread():
    if "OMP_NUM_THREADS" not in _os.environ:
        from .. import set_num_threads

        set_num_threads(1)  # as torchrun: one intra-op thread per rank


def _init_mpi(world_size, rank, secs):
    """The default group on MPI: rank and world size are MPI's; a call
    waiting longer than ``secs`` for the other ranks ends the job (MPI has
    no timeouts of its own: Note [MPI's watchdog])."""
    global _default
    import warnings

    ok, why = _C._mpi_availability()
    if not ok:
        raise RuntimeError(f"Distributed package doesn't have MPI built in: {why}")
    if world_size != -1 or rank != -1:
        warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are ignored "
                      "since they are assigned by the MPI runtime.")
    _one_thread()
    pg = _C._mpi_group(None, secs)
    _default = ProcessGroup(Backend(Backend.MPI), pg, None, range(pg.size()))
    _default._host, _default._timeout, _default._groups = None, secs, 0
    group.WORLD = GroupMember.WORLD = _default


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """``torch.distributed.new_group``: a group of some of the default
    group's ranks (every rank of the default group calls it, in the same
    order); a rank outside it gets ``GroupMember.NON_GROUP_MEMBER``."""
    d = _group(None)
    ranks = sorted(set(range(d.size()) if ranks is None else ranks))
    if not ranks or ranks[0] < 0 or ranks[-1] >= d.size():
        raise ValueError(f"new_group: ranks {ranks} are not ranks of a world of {d.size()}")
    d._groups += 1
    me = d.rank()
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    secs = d._timeout if timeout is None else _seconds(timeout)
    if d.backend == Backend.MPI:
        return ProcessGroup(d.backend, _C._mpi_group(ranks, secs), None, ranks)
    prefixed = PrefixStore(f"group_{d._groups}", d._store)
    pg = _C._gloo_group(prefixed._s, ranks.index(me), len(ranks), d._host, secs)
    return ProcessGroup(d.backend, pg, d._store, ranks)


def is_initialized():
    return _default is not None


def destroy_process_group(group=None):
    global _default
    if group is None or group is _default:
        if _default is not None:
            _default._close()
        _default = None
        GroupMember.WORLD = globals()["group"].WORLD = None
    elif isinstance(group, ProcessGroup):
        group._close()


def get_rank(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_backend(group=None):
    return _group(group).backend


def get_global_rank(group, group_rank):
    """The global rank of ``group``'s rank ``group_rank``."""
    return _group(group)._ranks[group_rank]


def get_process_group_ranks(group):
    return list(_group(group)._ranks)


def _skip(async_op):
    return Work() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """``torch.distributed.all_reduce``: in place on every rank."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    return g._run(lambda: g._pg.all_reduce(tensor, op.name), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """``torch.distributed.broadcast``: every rank's ``tensor`` becomes
    global rank ``src``'s (or the group's rank ``group_src``)."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    root = g._local(int(src), "broadcast") if group_src is None else int(group_src)
    return g._run(lambda: g._pg.broadcast(tensor, root), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    g = _group(group)
    if g is None:
        return _skip(async_op)
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for "
                         f"{g.size()} ranks")

    def run():
        for dst, got in zip(tensor_list, g._pg.all_gather(tensor)):
            dst.copy_(got)
    return g._run(run, async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """``torch.distributed.reduce``: rank ``dst``'s ``tensor`` becomes the
    reduction of every rank's."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    root = g._local(int(dst), "reduce") if group_dst is None else int(group_dst)
    return g._run(lambda: g._pg.reduce(tensor, root, op.name), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False, group_dst=None):
    """``torch.distributed.gather``: on ``dst``, ``gather_list[i]`` becomes
    rank ``i``'s ``tensor``."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    dst = g._local(int(dst), "gather") if group_dst is None else int(group_dst)
    if g.rank() == dst and (gather_list is None or len(gather_list) != g.size()):
        raise ValueError(f"gather: the destination rank needs a gather_list of {g.size()} tensors")

    def run():
        got = g._pg.gather(tensor, dst)
        if got is not None:
            for d, t in zip(gather_list, got):
                d.copy_(t)
    return g._run(run, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False, group_src=None):
    """``torch.distributed.scatter``: rank ``i``'s ``tensor`` becomes
    ``scatter_list[i]`` of rank ``src``."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    src = g._local(int(src), "scatter") if group_src is None else int(group_src)
    if g.rank() == src and scatter_list is None:
        raise ValueError("scatter: the source rank needs a scatter_list")
    pieces = list(scatter_list) if g.rank() == src else None
    return g._run(lambda: g._pg.scatter(tensor, src, pieces), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """``torch.distributed.all_to_all_single``: dim 0 of ``input`` split
    evenly over the ranks, or by ``input_split_sizes`` (rows to each rank)
    with ``output_split_sizes`` (rows from each); a size list left out
    means even splits on that side."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    if output_split_sizes is None and input_split_sizes is None:
        return g._run(lambda: g._pg.all_to_all_single(output, input), async_op)
    n = g.size()

    def even(t, what):
        if t.dim() == 0 or t.shape[0] % n:
            raise ValueError(f"all_to_all_single: dim 0 of {what} {tuple(t.shape)} does not split evenly over {n} ranks")
        return [t.shape[0] // n] * n
    outs = [int(v) for v in output_split_sizes] if output_split_sizes is not None else even(output, "output")
    ins = [int(v) for v in input_split_sizes] if input_split_sizes is not None else even(input, "input")
    return g._run(lambda: g._pg.all_to_all_single_uneven(output, input, outs, ins), async_op)


def _p2p(kind, tensor, peer, group, tag, group_peer, async_op):
    g = _group(group)
    if g is None:
        return _skip(async_op)
    if peer is None and group_peer is None:
        raise ValueError(f"{kind}: give the peer rank (receiving from any source is not supported)")
    local = g._local(int(peer), kind) if group_peer is None else int(group_peer)
    fn = g._pg.send if kind == "send" else g._pg.recv
    return g._run(lambda: fn(tensor, local, int(tag)), async_op, g._p2p_queue(kind, local))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    _p2p("send", tensor, dst, group, tag, group_dst, False)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    _p2p("recv", tensor, src, group, tag, group_src, False)
    return src if group_src is None else get_global_rank(group, group_src)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    return _p2p("send", tensor, dst, group, tag, group_dst, True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    return _p2p("recv", tensor, src, group, tag, group_src, True)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated along dim 0 (or stacked,
    for an output of one more dim) into ``output_tensor``."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    stacked = output_tensor.dim() == input_tensor.dim() + 1
    want = ((g.size(), *input_tensor.shape) if stacked
            else (g.size() * input_tensor.shape[0], *input_tensor.shape[1:]))
    if tuple(want) != tuple(output_tensor.shape):
        raise ValueError(f"all_gather_into_tensor: output of shape {tuple(output_tensor.shape)} for "
                         f"{g.size()} inputs of shape {tuple(input_tensor.shape)}")

    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError(f"all_gather_into_tensor: output {output_tensor.dtype} for input {input_tensor.dtype}")
    # the rows land in place, in rank order (a non-contiguous output
    # through one copy)
    return g._run(lambda: g._pg.all_gather_into(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Gloo's all_reduce of ``input``, then this rank's slice of dim 0 into
    ``output``."""
    g = _group(group)
    if g is None:
        return _skip(async_op)
    n = g.size()
    if input.shape[0] != output.shape[0] * n:
        raise ValueError(f"reduce_scatter_tensor: input dim 0 ({input.shape[0]}) must be "
                         f"{n} x output's ({output.shape[0]})")

    def run():
        full = input.clone()
        g._pg.all_reduce(full, op.name)
        k = output.shape[0]
        output.copy_(full[g.rank() * k:(g.rank() + 1) * k])
    return g._run(run, async_op)


def _object_bytes(obj):
    import io

    from .. import save

    buf = io.BytesIO()
    save(obj, buf)  # PyTorch's zip format: read back by the safe reader, never pickle of code
    return buf.getvalue()


def _object_of(data):
    import io

    from .. import load

    return load(io.BytesIO(data), weights_only=True)


def _bytes_tensor(b):
    from .. import tensor, uint8

    return tensor(list(b), dtype=uint8)


def all_gather_object(object_list, obj, group=None):
    """Every rank's ``obj`` into ``object_list``: objects travel as
    ``torch.save`` bytes and come back through ``torch.load(weights_only=
    True)`` (tensors, numbers, strings, containers), never by pickling
    code."""
    g = _group(group)
    if g is None:
        return
    from .. import int64, tensor

    data = _object_bytes(obj)

    def run():
        sizes = g._pg.all_gather(tensor([len(data)], dtype=int64))
        width = max(int(s.item()) for s in sizes)
        padded = _bytes_tensor(data + bytes(width - len(data)))
        return sizes, g._pg.all_gather(padded)
    sizes, parts = g._queue.submit(run).result()
    for i, (p, s) in enumerate(zip(parts, sizes)):
        object_list[i] = _object_of(bytes(p.tolist()[:int(s.item())]))


def broadcast_object_list(object_list, src=0, group=None, device=None, group_src=None):
    """``object_list`` of rank ``src`` on every rank (see
    ``all_gather_object`` for how objects travel)."""
    g = _group(group)
    if g is None:
        return
    from .. import int64, tensor, uint8, zeros

    src = g._local(int(src), "broadcast_object_list") if group_src is None else int(group_src)
    data = _object_bytes(list(object_list)) if g.rank() == src else b""

    def run():
        n = tensor([len(data)], dtype=int64)
        g._pg.broadcast(n, src)
        buf = _bytes_tensor(data) if g.rank() == src else zeros(int(n.item()), dtype=uint8)
        g._pg.broadcast(buf, src)
        return buf
    buf = g._queue.submit(run).result()
    got = _object_of(bytes(buf.tolist()))
    object_list[:] = got


def barrier(group=None, async_op=False, device_ids=None):
    g = _group(group)
    if g is None:
        return _skip(async_op)
    return g._run(g._pg.barrier, async_op)
