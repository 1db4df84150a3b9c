"""Loading a ~500 MB state dict that torch.save wrote, side by side:
torch.load(weights_only=True) against ferrotorch.load, both with
mmap=True (the time to open), and ferrotorch's own safetensors load of
the same tensors (issue 50's speed table). The
file is written once by torch into a scratch folder and read once into
the page cache; each process times its first load, a second load (memory
the first freed to reuse), and an mmap=True open.

    python bench/checkpoint_load.py [--mb 500] [--rounds 5]

Needs torch (the reference) and a release build (target/release/lib_C.so).
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sidebyside  # noqa: E402

WORKLOAD = r"""
import os, sys, time
lib, path = sys.argv[1], os.environ["FT_BENCH_PT"]
import importlib
L = importlib.import_module(lib)
def once(fn):
    t = time.perf_counter(); out = fn(); return (time.perf_counter() - t) * 1e3, out
kw = {"weights_only": True} if lib == "torch" else {}
first, sd = once(lambda: L.load(path, **kw))  # the process's first load (the file is in the page cache)
del sd
ms, sd = once(lambda: L.load(path, **kw))  # a second load (freed memory to reuse)
del sd
once(lambda: L.load(path, mmap=True, **kw))
ms_map, sd = once(lambda: L.load(path, mmap=True, **kw))
words = [f"first={first}", f"load={ms}", f"mmap={ms_map}"]
if lib == "ferrotorch":
    st = path + ".safetensors"
    if not os.path.exists(st):
        from ferrotorch import _serialization
        open(st, "wb").write(_serialization._save_safetensors(sd))
    once(lambda: L._C._safetensors_load(open(st, "rb").read()))
    ms2, _ = once(lambda: L._C._safetensors_load(open(st, "rb").read()))
    words.append(f"safetensors={ms2}")
print(" ".join(words))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import torch

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "model.pt")
    n = a.mb * (1 << 20) // 4 // 100
    g = torch.Generator().manual_seed(0)
    torch.save({f"layer{i}.weight": torch.randn(n, generator=g) for i in range(100)}, path)
    print(f"{os.path.getsize(path) / 1e6:.0f} MB in 100 tensors; {a.rounds} rounds")
    safetensors = []
    with _sidebyside.release_package() as pkg:
        def time_one(lib, name):
            r = _sidebyside.run(sys.executable, WORKLOAD, lib, pkg, env={"FT_BENCH_PT": path})
            if "safetensors" in r and name == "load":
                safetensors.append(r["safetensors"])
            return r[name]

        with open(path, "rb") as f:  # into the page cache
            while f.read(1 << 24):
                pass
        _sidebyside.alternate(["first", "load", "mmap"], a.rounds, time_one, "checkpoint (ms)")
    print(f"ferrotorch's safetensors load of the same tensors: {statistics.median(safetensors):.1f} ms")


if __name__ == "__main__":
    main()
