"""DistributedDataParallel on Gloo (Note [DDP's reducer]): ranks each on
1/N of a global batch end with the parameters one process reaches on the
whole batch (SGD and AdamW, an MLP and a CNN with BatchNorm whose
buffers come from rank 0), bit-identical across ranks; no_sync
accumulation equals the large batch; an unused parameter is an error that
names it, or with find_unused_parameters a zero gradient; and
DistributedSampler takes the default group's rank and size."""

import os
import socket

import pytest

import ferrotorch as torch
import ferrotorch.distributed as dist
import ferrotorch.multiprocessing as mp
import ferrotorch.nn as nn
from ferrotorch.nn.parallel import DistributedDataParallel as DDP

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="the gloo backend is not built")

STEPS = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def data(step):
    g = torch.Generator()
    g.manual_seed(100 + step)
    return torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)


def train(model, opt, steps, shard=None):
    for s in range(steps):
        x, y = data(s)
        if shard is not None:
            rank, world = shard
            k = x.shape[0] // world
            x, y = x[rank * k:(rank + 1) * k], y[rank * k:(rank + 1) * k]
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def reference(opt_name):
    m = mlp()
    opt = (torch.optim.SGD(m.parameters(), lr=0.1) if opt_name == "sgd"
           else torch.optim.AdamW(m.parameters(), lr=0.01))
    return train(m, opt, STEPS)


def ranks_train(rank, world, port, out_dir, opt_name):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(1234 + rank)  # different local init: rank 0's must win
    m = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    with torch.no_grad():
        for p, q in zip(m.parameters(), mlp().parameters()):
            if rank == 0:
                p.copy_(q)
    # several buckets; AdamW's runs with gradients as views of the buckets
    model = DDP(m, bucket_cap_mb=0.0005, gradient_as_bucket_view=(opt_name == "adamw"))
    opt = (torch.optim.SGD(model.parameters(), lr=0.1) if opt_name == "sgd"
           else torch.optim.AdamW(model.parameters(), lr=0.01))
    params = train(model, opt, STEPS, shard=(rank, world))
    if opt_name == "adamw":  # the gradients are the buckets: one storage per bucket
        ptrs = {p.grad.data_ptr() - p.grad.storage_offset() * 4 for p in model.parameters()}
        assert len(ptrs) <= len(model._buckets) < len(list(model.parameters()))
    torch.save(params, os.path.join(out_dir, f"{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
@pytest.mark.parametrize("world", [2, 4])
def test_ranks_on_shards_match_one_process_on_the_batch(tmp_path, world, opt_name):
    mp.spawn(ranks_train, args=(world, free_port(), str(tmp_path), opt_name), nprocs=world)
    want = reference(opt_name)
    got = [torch.load(str(tmp_path / f"{r}.pt")) for r in range(world)]
    for r in range(world):
        for a, b in zip(got[r], got[0]):
            assert torch.equal(a, b)  # bit-identical across ranks
        for a, b in zip(got[r], want):
            assert (a - b).abs().max().item() <= 1e-5


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)
        self.unused = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


def behaviours(rank, world, port, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    res = {}
    torch.manual_seed(rank)
    m = CNN()
    with torch.no_grad():
        m.bn.running_mean.fill_(float(rank))  # rank 0's buffers are broadcast
    x = torch.randn(2, 1, 5, 5)
    model = DDP(m)
    res["buffer"] = m.bn.running_mean.tolist()
    try:
        model(x).sum().backward()
    except RuntimeError as e:
        res["unused"] = str(e)
    m2 = CNN()  # a module of its own: m's hooks belong to the first wrapper
    model2 = DDP(m2, find_unused_parameters=True)
    model2(x).sum().backward()
    res["zero_grad"] = m2.unused.weight.grad.abs().sum().item()
    # no_sync: two local backwards, then one synchronised, equal the sum
    mlp_ = DDP(mlp())
    xs = [data(s)[0][rank * 2:(rank + 1) * 2] for s in range(3)]
    with mlp_.no_sync():
        mlp_(xs[0]).sum().backward()
        mlp_(xs[1]).sum().backward()
    mlp_(xs[2]).sum().backward()
    res["accum"] = [p.grad.tolist() for p in mlp_.parameters()]
    sampler = torch.utils.data.distributed.DistributedSampler(list(range(10)), shuffle=True, seed=3)
    res["sampler"] = (sampler.num_replicas, sampler.rank, list(sampler))
    with open(os.path.join(out_dir, f"{rank}.txt"), "w") as f:
        f.write(repr(res))
    dist.destroy_process_group()


def test_buffers_unused_parameters_no_sync_and_sampler(tmp_path):
    world = 2
    mp.spawn(behaviours, args=(world, free_port(), str(tmp_path)), nprocs=world)
    got = [eval(open(tmp_path / f"{r}.txt").read()) for r in range(world)]  # noqa: S307
    m = mlp()
    for s in range(3):
        m(data(s)[0][:2 * world]).sum().backward()
    want = [(p.grad / world).tolist() for p in m.parameters()]
    for r, g in enumerate(got):
        assert g["buffer"] == [0.0] * 4
        assert "unused.weight" in g["unused"] and "find_unused_parameters=True" in g["unused"]
        assert g["zero_grad"] == 0.0
        for a, b in zip(g["accum"], want):
            assert (torch.tensor(a) - torch.tensor(b)).abs().max().item() <= 1e-5
        assert g["sampler"][:2] == (world, r)
    gen = torch.Generator()
    gen.manual_seed(3)
    perm = torch.randperm(10, generator=gen).tolist()
    assert got[0]["sampler"][2] == perm[0::2] and got[1]["sampler"][2] == perm[1::2]
