"""DDP programs as PyTorch users write them, run under each launcher:

- the PyTorch DDP tutorial's CPU pattern (``ToyModel``, a checkpoint saved
  on rank 0 and loaded by every rank after a barrier) under ``mp.spawn``,
  torchrun (``python -m ferrotorch.distributed.run``) and ``mpirun``;
- a char-level GPT trained with DDP and a ``DistributedSampler`` whose
  loss curve and parameters match one process on the global batches;
- a CNN with BatchNorm (buffers broadcast from rank 0) and an LSTM
  language model whose parameters match one process that runs the same
  shards (BatchNorm's statistics are per shard, as in DDP).
"""

import os
import shutil
import subprocess
import sys

import pytest

import ferrotorch as torch
import ferrotorch.distributed as dist
import ferrotorch.multiprocessing as mp
from ferrotorch import nn

from test_distributed_mpi import MPI_ENV

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "..", "bench")

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="the gloo backend is not built")

# The tutorial (pytorch.org/tutorials/intermediate/ddp_tutorial.html),
# CPU and gloo, as a script; the backend comes from the launcher.
TUTORIAL = r'''
import os, sys, tempfile
import ferrotorch as torch
import ferrotorch.distributed as dist
import ferrotorch.nn as nn
import ferrotorch.optim as optim
from ferrotorch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_checkpoint(rank, world_size, out):
    torch.manual_seed(rank)  # different on every rank: DDP broadcasts rank 0's
    model = ToyModel()
    ddp_model = DDP(model)
    CHECKPOINT_PATH = os.path.join(out, "model.checkpoint")
    if rank == 0:
        # All processes should see same parameters as they all start from same
        # random parameters and gradients are synchronized in backward passes.
        # Therefore, saving it in one process is sufficient.
        torch.save(ddp_model.state_dict(), CHECKPOINT_PATH)
    # Use a barrier() to make sure that process 1 loads the model after process 0 saves it.
    dist.barrier()
    map_location = {"cuda:0": "cpu"}
    ddp_model.load_state_dict(torch.load(CHECKPOINT_PATH, map_location=map_location, weights_only=True))
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    optimizer.zero_grad()
    g = torch.Generator().manual_seed(100 + rank)
    outputs = ddp_model(torch.randn(20, 10, generator=g))
    labels = torch.randn(20, 5, generator=g)
    loss_fn(outputs, labels).backward()
    optimizer.step()
    dist.barrier()
    torch.save({k: v for k, v in ddp_model.state_dict().items()}, os.path.join(out, f"after{rank}.pt"))
    dist.barrier()


if __name__ == "__main__":
    out = os.environ["OUT"]
    dist.init_process_group(os.environ.get("BACKEND", "gloo"))
    demo_checkpoint(dist.get_rank(), dist.get_world_size(), out)
    dist.destroy_process_group()
'''


def check_tutorial(out, world):
    saved = torch.load(os.path.join(out, "model.checkpoint"))
    assert sorted(saved) == ["module.net1.bias", "module.net1.weight", "module.net2.bias", "module.net2.weight"]
    after = [torch.load(os.path.join(out, f"after{r}.pt")) for r in range(world)]
    # one SGD step from the checkpoint on the average of the ranks' gradients
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 5))
    ref.load_state_dict({k.replace("module.net1", "0").replace("module.net2", "2"): v for k, v in saved.items()})
    opt = torch.optim.SGD(ref.parameters(), lr=0.001)
    for r in range(world):
        g = torch.Generator().manual_seed(100 + r)
        x, y = torch.randn(20, 10, generator=g), torch.randn(20, 5, generator=g)
        (nn.functional.mse_loss(ref(x), y) / world).backward()
    opt.step()
    want = {k.replace("0.", "module.net1.").replace("2.", "module.net2."): v for k, v in ref.state_dict().items()}
    for r in range(world):
        for k, v in after[r].items():
            assert torch.equal(v, after[0][k]), (r, k)
            assert (v - want[k]).abs().max().item() <= 1e-6, k


def _spawned_tutorial(rank, world, port, script, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), OUT=out)
    import runpy

    runpy.run_path(script, run_name="__main__")


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("launcher", ["mp.spawn", "torchrun", "mpirun"])
def test_the_ddp_tutorials_checkpoint_pattern(tmp_path, launcher):
    script = tmp_path / "tutorial.py"
    script.write_text(TUTORIAL)
    if launcher == "mp.spawn":
        mp.spawn(_spawned_tutorial, args=(2, _free_port(), str(script), str(tmp_path)), nprocs=2)
    else:
        env = dict(os.environ, OUT=str(tmp_path))
        if launcher == "torchrun":
            cmd = [sys.executable, "-m", "ferrotorch.distributed.run", "--standalone", "--nproc-per-node", "2",
                   str(script)]
        else:
            if not dist.is_mpi_available() or shutil.which("mpirun") is None:
                pytest.skip("the mpi backend or mpirun is missing")
            cmd = ["mpirun", "-np", "2", sys.executable, str(script)]
            env.update(MPI_ENV, BACKEND="mpi")
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    check_tutorial(str(tmp_path), 2)


# ---- char-level GPT with a DistributedSampler -------------------------------

STEPS_GPT, PER_RANK, WORLD = 6, 4, 2


def gpt_setup():
    sys.path.insert(0, BENCH)
    from char_models import make_gpt

    torch.manual_seed(0)
    model, batch_fn = make_gpt(torch, batch=64, block=16, n_embd=32, n_head=2, n_layer=1)
    x, y = batch_fn(0)  # 64 windows: the data set
    return model, torch.utils.data.TensorDataset(x, y)


def _gpt_rank(rank, world, port, out):
    from ferrotorch.nn.parallel import DistributedDataParallel as DDP
    from ferrotorch.utils.data import DataLoader
    from ferrotorch.utils.data.distributed import DistributedSampler

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model, ds = gpt_setup()
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sampler = DistributedSampler(ds, shuffle=True, seed=5)
    curve = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(DataLoader(ds, batch_size=PER_RANK, sampler=sampler)):
            if step == STEPS_GPT // 2:
                break
            _, loss = ddp(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            curve.append(mean.item())
    torch.save({"curve": curve, "params": [p.detach() for p in model.parameters()]},
               os.path.join(out, f"gpt{rank}.pt"))
    dist.destroy_process_group()


def test_a_char_gpt_with_ddp_and_a_distributed_sampler_matches_one_process(tmp_path):
    from ferrotorch.utils.data.distributed import DistributedSampler

    mp.spawn(_gpt_rank, args=(WORLD, _free_port(), str(tmp_path)), nprocs=WORLD)
    model, ds = gpt_setup()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    samplers = [DistributedSampler(ds, num_replicas=WORLD, rank=r, shuffle=True, seed=5) for r in range(WORLD)]
    want = []
    for epoch in range(2):
        orders = []
        for s in samplers:
            s.set_epoch(epoch)
            orders.append(list(s))
        for step in range(STEPS_GPT // 2):
            # the global batch: every rank's shard of this step; the loss is
            # the mean of the ranks' means (equal shards)
            opt.zero_grad()
            total = 0.0
            for order in orders:
                idx = torch.tensor(order[step * PER_RANK:(step + 1) * PER_RANK])
                _, loss = model(ds.tensors[0][idx], ds.tensors[1][idx])
                (loss / WORLD).backward()
                total += loss.item() / WORLD
            opt.step()
            want.append(total)
    got = [torch.load(str(tmp_path / f"gpt{r}.pt")) for r in range(WORLD)]
    for a, b in zip(got[0]["curve"], want):
        assert abs(a - b) <= 1e-4, (got[0]["curve"], want)
    assert want[-1] < want[0]
    for r in range(WORLD):
        for p, q, w in zip(got[r]["params"], got[0]["params"], model.parameters()):
            assert torch.equal(p, q)
            assert (p - w.detach()).abs().max().item() <= 1e-4


# ---- a CNN with BatchNorm and an LSTM language model --------------------------

class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class LSTMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True)
        self.head = nn.Linear(12, 11)

    def forward(self, x):
        return self.head(self.lstm(self.emb(x))[0])


def model_and_loss(kind):
    torch.manual_seed(3)
    if kind == "cnn":
        return CNN(), lambda m, x, y: nn.functional.cross_entropy(m(x), y)
    return LSTMLM(), lambda m, x, y: nn.functional.cross_entropy(m(x).flatten(0, 1), y.flatten())


def shards(kind, step, world):
    g = torch.Generator().manual_seed(50 + step)
    if kind == "cnn":
        x, y = torch.randn(8, 1, 4, 4, generator=g), torch.randint(0, 3, (8,), generator=g)
    else:
        seq = torch.randint(0, 11, (8, 7), generator=g)
        x, y = seq[:, :-1], seq[:, 1:]
    k = 8 // world
    return [(x[r * k:(r + 1) * k], y[r * k:(r + 1) * k]) for r in range(world)]


def _shard_rank(rank, world, port, out, kind):
    from ferrotorch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model, loss_fn = model_and_loss(kind)
    ddp = DDP(model, bucket_cap_mb=0.001)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(8):
        x, y = shards(kind, step, world)[rank]
        opt.zero_grad()
        loss_fn(ddp, x, y).backward()
        opt.step()
    torch.save(model.state_dict(), os.path.join(out, f"{kind}{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_a_cnn_with_batchnorm_and_an_lstm_lm_match_one_process_on_the_same_shards(tmp_path, kind):
    world = 2
    mp.spawn(_shard_rank, args=(world, _free_port(), str(tmp_path), kind), nprocs=world)
    model, loss_fn = model_and_loss(kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(8):
        opt.zero_grad()
        parts = shards(kind, step, world)
        # BatchNorm's running statistics follow rank 0's shard (its buffers
        # are broadcast from rank 0 each forward): run the others first,
        # then put the buffers back and run rank 0's
        before = {k: v.clone() for k, v in model.state_dict().items() if "running" in k or "num_batches" in k}
        for x, y in parts[1:]:
            (loss_fn(model, x, y) / world).backward()
        with torch.no_grad():
            for k, v in model.state_dict().items():
                if k in before:
                    v.copy_(before[k])
        (loss_fn(model, *parts[0]) / world).backward()
        opt.step()
    got = [torch.load(str(tmp_path / f"{kind}{r}.pt")) for r in range(world)]
    for k, v in model.state_dict().items():
        if k not in before:  # buffers: each rank's own last update (torch's too:
            assert torch.equal(got[0][k], got[1][k]), k  # rank 0's win at the next forward)
        assert (got[0][k].double() - v.double()).abs().max().item() <= 1e-5, k
