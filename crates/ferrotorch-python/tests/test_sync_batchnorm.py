"""SyncBatchNorm (Note [SyncBatchNorm]): ranks each on a share of a batch
normalise with the whole batch's statistics, so they match BatchNorm in
one process on the whole batch — outputs, running statistics, the
input's and the parameters' gradients (BatchNorm's own are gradchecked),
and a CNN converted with convert_sync_batchnorm trained under DDP for a
few SGD steps; bit-identical across ranks. Without a group, or in eval,
it is BatchNorm."""

import os

import pytest

import ferrotorch as torch
import ferrotorch.distributed as dist
import ferrotorch.multiprocessing as mp
import ferrotorch.nn as nn
from ferrotorch.nn.parallel import DistributedDataParallel as DDP
from test_ddp import free_port

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="the gloo backend is not built")

STEPS = 5
BATCH = 8


def layer_data():
    g = torch.Generator()
    g.manual_seed(7)
    # (N, C, L) with a per-channel offset and scale, and the upstream weights
    x = torch.randn(BATCH, 3, 5, generator=g) * torch.tensor([1.0, 3.0, 0.5]).view(1, 3, 1) + 2.0
    return x, torch.randn(BATCH, 3, 5, generator=g)


def layer_reference():
    x, w = layer_data()
    x.requires_grad_(True)
    bn = nn.BatchNorm1d(3)
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
        bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
    y = bn(x)
    (y * w).sum().backward()
    return {"y": y.detach(), "dx": x.grad, "dw": bn.weight.grad, "db": bn.bias.grad,
            "rm": bn.running_mean, "rv": bn.running_var}


def cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))


def batch(step):
    g = torch.Generator()
    g.manual_seed(50 + step)
    return torch.randn(BATCH, 2, 8, 8, generator=g), torch.randn(BATCH, 3, generator=g)


def train(model, shard=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for s in range(STEPS):
        x, y = batch(s)
        if shard is not None:
            rank, world = shard
            k = BATCH // world
            x, y = x[rank * k:(rank + 1) * k], y[rank * k:(rank + 1) * k]
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    return [t.detach().clone() for t in list(model.parameters()) + list(model.buffers())]


def ranks(rank, world, port, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    k = BATCH // world
    x, w = layer_data()
    x = x[rank * k:(rank + 1) * k].clone().requires_grad_(True)
    bn = nn.SyncBatchNorm(3)
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
        bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
    y = bn(x)
    (y * w[rank * k:(rank + 1) * k]).sum().backward()
    res = {"y": y.detach(), "dx": x.grad, "dw": bn.weight.grad, "db": bn.bias.grad,
           "rm": bn.running_mean.clone(), "rv": bn.running_var.clone()}
    bn.eval()  # eval: the running statistics, no collective
    res["eval"] = bn(x.detach())
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(cnn()))
    assert isinstance(model.module[1], nn.SyncBatchNorm)
    res["trained"] = train(model, shard=(rank, world))
    torch.save(res, os.path.join(out_dir, f"{rank}.pt"))
    dist.destroy_process_group()


def close(a, b, tol=1e-5):
    return (a - b).abs().max().item() <= tol * (1 + b.abs().max().item())


def test_ranks_normalise_with_the_whole_batchs_statistics(tmp_path):
    world = 2
    mp.spawn(ranks, args=(world, free_port(), str(tmp_path)), nprocs=world)
    got = [torch.load(str(tmp_path / f"{r}.pt")) for r in range(world)]
    want = layer_reference()
    k = BATCH // world
    for r, g in enumerate(got):
        rows = slice(r * k, (r + 1) * k)
        assert close(g["y"], want["y"][rows])
        assert close(g["dx"], want["dx"][rows])  # every rank's share of the statistics
        assert close(g["rm"], want["rm"]) and close(g["rv"], want["rv"])
        assert torch.equal(g["rm"], got[0]["rm"])
        bn = nn.BatchNorm1d(3)
        bn.load_state_dict({"weight": torch.tensor([1.5, -0.5, 2.0]), "bias": torch.tensor([0.1, 0.2, -0.3]),
                            "running_mean": g["rm"], "running_var": g["rv"],
                            "num_batches_tracked": torch.tensor(1)})
        bn.eval()
        assert close(g["eval"], bn(layer_data()[0][rows]))
    # the parameters' gradients are each rank's own: together, the batch's
    assert close(got[0]["dw"] + got[1]["dw"], want["dw"])
    assert close(got[0]["db"] + got[1]["db"], want["db"])
    # a CNN trained under DDP matches one process with BatchNorm on the batch
    ref = train(cnn())
    for a, b, w in zip(got[0]["trained"], got[1]["trained"], ref):
        assert torch.equal(a, b)  # bit-identical across ranks
        assert close(a.float(), w.float(), 1e-4)


def test_without_a_group_it_is_batchnorm():
    x = layer_data()[0]
    bn, sbn = nn.BatchNorm1d(3), nn.SyncBatchNorm(3)
    assert torch.equal(bn(x), sbn(x))
    assert torch.equal(bn.running_var, sbn.running_var)
    with pytest.raises(ValueError, match="at least 2D"):
        sbn(torch.ones(3))
