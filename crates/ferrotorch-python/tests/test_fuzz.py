"""No argument list reaches a Rust panic: every generated op, called with
combinations of odd arguments, either works or raises an ordinary Python
exception, never the boundary's "internal error" (Note [Errors at the
boundary])."""

import itertools
import math

import pytest

import ferrotorch as torch
from ferrotorch import _C


def _values():
    f = torch.randn(3, 4)
    return [f, torch.zeros(0), torch.ones(2, 3, dtype=torch.int64), torch.tensor(True),
            torch.tensor(2.0), f.t(), torch.ones(1, 1, 1, 1), 0, -1, 5, 2.5, True, None, [0],
            [2, 2], "x", torch.float64, [-1]]


def test_no_op_panics_on_odd_arguments():
    vals = _values()
    names = sorted({s[0] for s in _C._schemas() if not s[0].startswith("_")})
    internal = {}
    for name in names:
        # namespaced ops (prim::NumToTensor) are called by name
        fn = (getattr(torch, name) if "::" not in name
              else lambda *a, _n=name: _C._call_op(_n, a))
        for n in range(3):
            for combo in itertools.product(range(len(vals)), repeat=n):
                try:
                    fn(*[vals[i] for i in combo])
                except RuntimeError as e:
                    if "internal error" in str(e):
                        internal.setdefault(name, str(e))
                except Exception:
                    pass
    assert not internal, internal


def test_zero_dim_edge_cases_follow_torch():
    s = torch.tensor(2.0)
    assert s.sum(0).item() == 2.0 and s.mean(-1).item() == 2.0 and s.amax(0).item() == 2.0
    assert s.flip(0).item() == 2.0 and s.movedim(0, 0).item() == 2.0
    for f in (lambda: s.roll(1, 0), lambda: s.repeat_interleave(torch.tensor(2), dim=0),
              lambda: s.take_along_dim(torch.tensor(0), 0)):
        with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
            f()
    with pytest.raises(RuntimeError, match="chunk expects at least a 1-dimensional tensor"):
        s.chunk(2)
    with pytest.raises(IndexError, match="no dimensions"):
        s.unbind(0)
    with pytest.raises(IndexError):
        s.sum(1)
    # size/stride of a dimension a 0-dim tensor lacks (this was a Rust panic)
    for f in (lambda: s.size(0), lambda: s.size(-1), lambda: s.stride(0),
              lambda: torch.ones(2).size(1)):
        with pytest.raises(IndexError, match="no dimensions|out of range"):
            f()
    # eps above one half, as torch: values below eps become eps, then values
    # above 1 - eps become 1 - eps (values printed by torch 2.15: ±0.4055)
    got = torch.logit(torch.tensor([0.2, 0.9], dtype=torch.float64), eps=0.6).tolist()
    assert abs(got[0] - math.log(0.6 / 0.4)) < 1e-12 and abs(got[1] - math.log(0.4 / 0.6)) < 1e-12
