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
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.ones(2).cuda()


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
