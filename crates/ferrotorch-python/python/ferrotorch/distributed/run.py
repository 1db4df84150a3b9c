"""``python -m ferrotorch.distributed.run`` (torchrun): start
``--nproc-per-node`` copies of a script on this node with torchrun's
environment — ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``
and ``OMP_NUM_THREADS=1`` unless set — for ``--nnodes`` nodes, this one
being ``--node-rank``. When a worker fails, the launcher names every
worker that failed, stops the rest and exits non-zero."""

import argparse
import os
import signal
import subprocess
import sys
import time


def _parser():
    p = argparse.ArgumentParser(prog="python -m ferrotorch.distributed.run",
                                description="torchrun: start the workers of a distributed job")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true",
                   help="one node on a free local port (as torchrun's --standalone)")
    p.add_argument("-m", "--module", action="store_true", help="the script is a module name")
    p.add_argument("--no-python", "--no_python", action="store_true")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    a = _parser().parse_args(argv)
    if a.nproc_per_node < 1 or a.nnodes < 1 or not 0 <= a.node_rank < a.nnodes:
        raise SystemExit(f"run: bad layout: --nproc-per-node {a.nproc_per_node}, "
                         f"--nnodes {a.nnodes}, --node-rank {a.node_rank}")
    if a.standalone:
        a.nnodes, a.node_rank, a.master_addr, a.master_port = 1, 0, "127.0.0.1", _free_port()
    world = a.nproc_per_node * a.nnodes
    cmd = [] if a.no_python else [sys.executable] + (["-m"] if a.module else [])
    cmd += [a.script, *a.script_args]
    procs = []
    for local in range(a.nproc_per_node):
        env = dict(os.environ, RANK=str(a.node_rank * a.nproc_per_node + local), LOCAL_RANK=str(local),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(a.nproc_per_node),
                   GROUP_RANK=str(a.node_rank), MASTER_ADDR=a.master_addr,
                   MASTER_PORT=str(a.master_port), TORCHELASTIC_RUN_ID="ferrotorch")
        env.setdefault("OMP_NUM_THREADS", "1")
        procs.append(subprocess.Popen(cmd, env=env))
    code = 0
    live = dict(enumerate(procs))
    try:
        while live:
            failed = [(i, p.returncode) for i, p in live.items() if p.poll() not in (None, 0)]
            for i in [i for i, p in live.items() if p.returncode == 0]:
                del live[i]
            if failed:
                # the others often fail in turn (their peer is gone): give
                # them a moment, then name every worker that failed
                deadline = time.monotonic() + 1.0
                while time.monotonic() < deadline and any(p.poll() is None for p in live.values()):
                    time.sleep(0.05)
                code = failed[0][1]
                for i, p in sorted(live.items()):
                    rc = p.poll()
                    if rc not in (None, 0):
                        print(f"run: worker with local rank {i} (pid {p.pid}) exited with code {rc}",
                              file=sys.stderr)
                print("run: stopping the remaining workers", file=sys.stderr)
                for p in live.values():
                    if p.poll() is None:
                        p.send_signal(signal.SIGTERM)
                for p in live.values():
                    try:
                        p.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        p.kill()
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        for p in live.values():
            p.kill()
        code = 130
    return code


if __name__ == "__main__":
    sys.exit(main())
