"""``torch.futures``: ``Future`` (what ``torch.jit.fork`` returns), and
``collect_all`` / ``wait_all`` over several."""

from .jit._script import Future

__all__ = ["Future", "collect_all", "wait_all"]


def collect_all(futures):
    """A Future of the list of ``futures`` once all are done."""
    out = Future()
    futures = list(futures)
    left = [len(futures)]
    if not futures:
        out.set_result([])
        return out

    def one(_):
        left[0] -= 1
        if left[0] == 0:
            out.set_result(futures)

    for f in futures:
        f.add_done_callback(one)
    return out


def wait_all(futures):
    """The values of ``futures`` (raising the first error)."""
    return [f.wait() for f in futures]
