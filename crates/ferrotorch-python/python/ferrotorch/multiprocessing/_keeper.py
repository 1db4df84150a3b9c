"""The descriptor keeper: where a shared tensor's file descriptor waits
between the process that pickled it and the one that unpickles it.

Note [Descriptor keeper]
Python's own ``DupFd`` leaves the descriptor with the *sending* process
(its resource sharer thread hands it out on request), so a tensor sent by
a process that exits before the receiver unpickles it is lost: a worker's
last result, a worker killed after ``put``. Here the first process that
imports ``ferrotorch.multiprocessing`` (the root: the training script)
runs a keeper thread on an abstract Unix socket (no file: nothing to
leak), and names it in the environment its children inherit. Pickling a
tensor deposits a duplicate of its file's descriptor with the keeper
(``SCM_RIGHTS``) and puts the deposit's number in the pickle; unpickling
withdraws it, once. The root usually is the receiver (DataLoader batches,
results), which takes the descriptor from its own table without a socket.

The keeper serves only processes of its own user (``SO_PEERCRED``) that
present the random token from the environment. A forked child closes the
keeper's listening socket and its copies of deposited descriptors (the
root keeps serving them). Deposits never withdrawn (a message nobody
reads) are held until the root exits; the kernel frees their memory then.
"""

import os
import secrets
import socket
import struct
import threading

_ENV = "FERROTORCH_FD_KEEPER"

_lock = threading.Lock()
_fds = {}          # the root's deposits: id -> fd
_next_id = [1]
_listener = None
_root_pid = None
_token = None
_local = threading.local()


def _start():
    """Start the keeper in this process (the root) and name it in the
    environment children inherit."""
    global _listener, _root_pid, _token
    _token = secrets.token_hex(16)
    name = f"\0ferrotorch-keeper-{os.getpid()}-{secrets.token_hex(8)}"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(name)
    s.listen(64)
    _listener = s
    _root_pid = os.getpid()
    os.environ[_ENV] = name[1:] + ":" + _token
    t = threading.Thread(target=_serve, args=(s,), name="ferrotorch fd keeper", daemon=True)
    t.start()


def _serve(listener):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_client, args=(conn,), name="ferrotorch fd keeper client",
                         daemon=True).start()


def _peer_uid(conn):
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        part = conn.recv(n - len(buf))
        if not part:
            raise EOFError
        buf += part
    return buf


def _client(conn):
    with conn:
        try:
            if _peer_uid(conn) != os.getuid():
                return
            if _recv_exact(conn, 32).decode("ascii", "replace") != _token:
                return
            while True:
                msg, fds, _, _ = socket.recv_fds(conn, 1, 4)
                if msg == b"D" and len(fds) == 1:
                    conn.sendall(struct.pack("<q", _deposit(fds[0])))
                    continue
                for fd in fds:
                    os.close(fd)
                if msg == b"W":
                    fd = _take(struct.unpack("<q", _recv_exact(conn, 8))[0])
                    if fd is None:
                        conn.sendall(b"\0")
                    else:
                        try:
                            socket.send_fds(conn, [b"\1"], [fd])
                        finally:
                            os.close(fd)
                    continue
                return
        except (OSError, EOFError, ValueError):
            return


def _deposit(fd):
    with _lock:
        i = _next_id[0]
        _next_id[0] += 1
        _fds[i] = fd
    return i


def _take(i):
    with _lock:
        return _fds.pop(i, None)


def _address():
    env = os.environ.get(_ENV)
    if not env or ":" not in env:
        return None
    name, token = env.rsplit(":", 1)
    return "\0" + name, token


def _connection():
    """This thread's connection to the keeper (one per thread and process)."""
    c = getattr(_local, "conn", None)
    if c is not None and _local.pid == os.getpid():
        return c
    addr = _address()
    if addr is None:
        raise RuntimeError("ferrotorch.multiprocessing: no descriptor keeper is running")
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(addr[0])
    c.sendall(addr[1].encode("ascii"))
    _local.conn, _local.pid = c, os.getpid()
    return c


def available():
    """Whether a keeper serves this process."""
    return _root_pid == os.getpid() or _address() is not None


def deposit(fd):
    """Hand a duplicate of ``fd`` to the keeper; returns the deposit's
    number (the caller keeps ``fd``)."""
    if _root_pid == os.getpid():
        return _deposit(os.dup(fd))
    c = _connection()
    socket.send_fds(c, [b"D"], [fd])
    return struct.unpack("<q", _recv_exact(c, 8))[0]


def withdraw(i):
    """Take deposit ``i`` (once): a descriptor the caller owns."""
    if _root_pid == os.getpid():
        fd = _take(i)
    else:
        c = _connection()
        c.sendall(b"W" + struct.pack("<q", i))
        msg, fds, flags, _ = socket.recv_fds(c, 1, 1)
        if flags & getattr(socket, "MSG_CTRUNC", 0):
            for f in fds:
                os.close(f)
            raise RuntimeError(
                "ferrotorch.multiprocessing: the shared memory descriptor of a tensor was "
                "dropped because this process is at its limit of open files (`ulimit -n`)")
        fd = fds[0] if msg == b"\1" and fds else None
    if fd is None:
        raise RuntimeError(
            f"ferrotorch.multiprocessing: shared tensor deposit {i} was already taken or is "
            "unknown (a pickle of a shared tensor can be loaded once)")
    return fd


def _after_fork_in_child():
    global _listener, _root_pid
    if _listener is not None:
        try:
            _listener.close()
        except OSError:
            pass
        _listener = None
    _root_pid = None
    with _lock:
        for fd in _fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        _fds.clear()
    _local.__dict__.clear()


def ensure_started():
    """Start the keeper unless one already serves this process."""
    with _lock:
        if _root_pid == os.getpid():
            return
        addr = _address()
    if addr is not None and _reachable(addr):
        return
    _start()


def _reachable(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr[0])
        return True
    except OSError:
        return False
    finally:
        s.close()


os.register_at_fork(after_in_child=_after_fork_in_child)
