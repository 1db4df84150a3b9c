"""Functions that run in child processes for test_multiprocessing.py (a
module of its own, so that spawn and forkserver children can import them
without importing the tests)."""

import os
import signal

import ferrotorch as torch
from ferrotorch.utils.data import Dataset, get_worker_info


def add_one_and_answer(q, r):
    t = q.get()
    t.add_(1)
    r.put(torch.full((3,), 42.0))


def echo_param(q, r):
    p = q.get()
    r.put((type(p).__name__, p.requires_grad, p.is_shared()))
    p.data.mul_(2)
    r.put("done")


def put_and_exit(q):
    q.put(torch.arange(5.0))


def square(t):
    return t * t


def raise_in_child(i):
    if i == 1:
        raise ValueError("child 1 failed on purpose")


def kill_self(i):
    if i == 0:
        os.kill(os.getpid(), signal.SIGKILL)


class Squares(Dataset):
    """Samples i*i, tagged with the worker that made them."""

    def __init__(self, n=23):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        assert info is not None and 0 <= info.id < info.num_workers
        return torch.tensor([i * i]), info.id, os.getpid()


class Failing(Dataset):
    """Raises KeyError at one index."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(i)
        return torch.tensor([float(i)])


class Killing(Dataset):
    """The worker that loads index `at` kills itself with SIGKILL."""

    def __init__(self, at):
        self.at = at

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.tensor([float(i)])


def record_init(wid):
    torch.manual_seed(1000 + wid)
    os.environ["FT_TEST_WORKER_INIT"] = str(wid)


class InitSeen(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return int(os.environ.get("FT_TEST_WORKER_INIT", "-1"))


def init_fails(wid):
    raise ValueError("init failed")


def parallel_and_random(r):
    big = torch.ones(1 << 20)
    r.put((float((big * big).sum()), tuple(torch.rand(3).shape)))
