"""What the side-by-side benchmarks share: the release build of the Python
package in a scratch folder, one process per library and round whose
``name=value`` output comes back as a dict, and the alternating rounds
with their table."""
import contextlib
import os
import statistics
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def release_package(root=ROOT, ext=None):
    """A PYTHONPATH holding the package sources of checkout ``root`` (this
    one by default) with ``ext`` (its release ``target/release/lib_C.so``
    by default) as its extension."""
    ext = ext or os.path.join(root, "target", "release", "lib_C.so")
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "ferrotorch")
        shutil.copytree(os.path.join(root, "crates", "ferrotorch-python", "python", "ferrotorch"),
                        pkg, ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
        shutil.copy(ext, os.path.join(pkg, "_C.so"))
        yield tmp


def run(python, workload, lib, pythonpath, env=None, timeout=900):
    """Run ``workload`` (a script taking the library name) in a fresh
    process; its ``name=value`` words as floats."""
    full = dict(os.environ, PYTHONPATH=pythonpath, **(env or {}))
    r = subprocess.run([python, "-c", workload, lib], capture_output=True, text=True, env=full,
                       timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"{lib} failed:\n{r.stderr[-3000:]}")
    return {k: float(v) for k, v in (w.split("=") for w in r.stdout.split())}


def alternate(names, rounds, time_one, header):
    """For each name, ``rounds`` rounds of ``time_one("torch", name)`` then
    ``time_one("ferrotorch", name)`` (milliseconds); prints both medians,
    the median of the per-round ratios (torch / ferrotorch: above 1 means
    ferrotorch is faster) and their range."""
    print(f"{header:22s} {'torch':>8s} {'ferrotorch':>11s} {'ratio':>7s}  range")
    for name in names:
        t_ms, f_ms, ratios = [], [], []
        for _ in range(rounds):
            t = time_one("torch", name)
            f = time_one("ferrotorch", name)
            t_ms.append(t)
            f_ms.append(f)
            ratios.append(t / f)
        print(f"{name:22s} {statistics.median(t_ms):8.3f} {statistics.median(f_ms):11.3f} "
              f"{statistics.median(ratios):6.2f}x  {min(ratios):.2f}-{max(ratios):.2f}", flush=True)

