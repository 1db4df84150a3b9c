"""NumPy is optional, as it is for torch: every module of the package
imports without it (only ``utils.tensorboard`` needs it, through the
tensorboard package as torch's does), and the parts that once reached for
it (``testing.assert_close``, bicubic and antialiased ``interpolate``) give
the same values and messages with it absent. A fresh ``pip install`` with
no NumPy once failed at ``import ferrotorch``."""

import os
import subprocess
import sys
import textwrap

import numpy as np

import ferrotorch as torch
import ferrotorch.nn.functional as F

_PROGRAM = textwrap.dedent("""
    import importlib, pkgutil, sys
    sys.modules["numpy"] = None  # import numpy now raises ImportError
    import ferrotorch as torch
    import ferrotorch.nn.functional as F
    failed = []
    for m in pkgutil.walk_packages(torch.__path__, "ferrotorch."):
        try:
            importlib.import_module(m.name)
        except ImportError as e:
            failed.append(m.name)
    print("FAILED", sorted(failed))
    torch.manual_seed(0)
    x = torch.randn(1, 2, 5, 6)
    print("BICUBIC", F.interpolate(x, size=(7, 4), mode="bicubic").sum().item())
    print("AA", F.interpolate(x, size=(3, 2), mode="bilinear", antialias=True).sum().item())
    try:
        torch.testing.assert_close(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0]))
    except AssertionError as e:
        print("MSG", repr(str(e)))
    try:
        torch.testing.assert_close(torch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 9]]))
    except AssertionError as e:
        print("MSG", repr(str(e)))
""")


def _run_without_numpy():
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return dict((line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in out.stdout.splitlines()
                if line.split(" ", 1)[0] in ("FAILED", "BICUBIC", "AA")), \
        [line.split(" ", 1)[1] for line in out.stdout.splitlines() if line.startswith("MSG ")]


def test_every_module_imports_and_runs_without_numpy():
    values, messages = _run_without_numpy()
    assert values["FAILED"] == "['ferrotorch.utils.tensorboard']"
    # the same values as with NumPy present (the matrices were NumPy's)
    torch.manual_seed(0)
    x = torch.randn(1, 2, 5, 6)
    assert float(values["BICUBIC"]) == F.interpolate(x, size=(7, 4), mode="bicubic").sum().item()
    assert float(values["AA"]) == F.interpolate(x, size=(3, 2), mode="bilinear", antialias=True).sum().item()
    # torch 2.15's messages for these two pairs
    assert eval(messages[0]) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)")
    assert eval(messages[1]) == (
        "Tensor-likes are not equal!\n\nMismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 5 at index (1, 1)\n"
        "Greatest relative difference: 0.5555555820465088 at index (1, 1)")


def test_interpolate_matrices_match_numpy_built_ones():
    # the bicubic weights against Keys' kernel evaluated with NumPy
    x = torch.eye(6, dtype=torch.float64).reshape(1, 1, 6, 6)
    y = F.interpolate(x, size=(6, 9), mode="bicubic", align_corners=False)[0, 0]
    a, scale = -0.75, 6 / 9
    ref = np.zeros((9, 6))
    for o in range(9):
        real = scale * (o + 0.5) - 0.5
        i0 = int(np.floor(real))
        t = real - i0
        for k, d in enumerate((t + 1, t, 1 - t, 2 - t)):
            d = abs(d)
            w = ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
            ref[o, min(max(i0 - 1 + k, 0), 5)] += w
    np.testing.assert_allclose(y.numpy(), ref.T, rtol=0, atol=1e-12)
