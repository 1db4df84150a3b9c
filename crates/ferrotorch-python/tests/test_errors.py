"""Rust errors arrive as the exceptions torch raises, messages kept."""

import pytest

import ferrotorch as torch


def test_exception_classes_and_messages():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match"):
        torch.ones(3) + torch.ones(4)
    with pytest.raises(IndexError):
        torch.ones(2, 3).select(0, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        torch.sum(torch.ones(2), bogus=1)
    with pytest.raises(TypeError):
        torch.ones(2).view("a")
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).view(4)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.ones(2, 3) @ torch.ones(2, 3)
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.ones(2).cuda()  # a CPU-only torch's error


def test_threads_can_share_tensors():
    import threading

    t = torch.ones(1000)
    out = []

    def work():
        out.append((t * 2).sum().item())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert out == [2000.0] * 4


def test_heavy_kernels_release_the_gil():
    import threading
    import time

    a = torch.randn(2000, 2000)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        a @ a
        times.append(time.perf_counter() - t0)
    one = min(times)
    reps = 4
    gaps = []

    def work():
        for _ in range(reps):
            a @ a

    th = threading.Thread(target=work)
    th.start()
    last = time.perf_counter()
    while th.is_alive():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        time.sleep(0.001)
    th.join()
    # with the GIL held through each product, this loop would stall for a
    # whole product at a time
    assert max(gaps) < 0.5 * one, (max(gaps), one)
