"""The smaller names of torch's library as torch's: optimizer state
swapping, Variable, the anomaly and multithreading switches,
KinetoStepTracker, LinAlgError, nn.utils.rnn.bind
(fixtures/surface.json from fixtures/gen_surface.py), and the helpers
checked here directly."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _close, load
import surface_cases as C

FIX = load("surface")


@pytest.mark.parametrize("name", list(C.CASES))
def test_surface_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)


def test_helpers_and_deprecated_names_behave_as_torchs():
    F = ft.nn.functional
    assert F.has_torch_function((ft.ones(1),)) is False
    F.assert_int_or_pair((2, 3), "kernel_size", "{} must be an int or a pair")
    with pytest.raises(AssertionError, match="kernel_size must be"):
        F.assert_int_or_pair((1, 2, 3), "kernel_size", "{} must be an int or a pair")
    assert ft.fft.Tensor is ft.Tensor
    assert ft.types.Storage.__args__ == (ft.storage.TypedStorage, ft.UntypedStorage)
    assert ft.random.thread_safe_generator() is None
    assert int(ft.utils.dlpack.DLDeviceType.kDLCPU) == 1
    assert ft.profiler.RecordScope.USER_SCOPE.value == 7 and ft.autograd.DeviceType.CPU.value == 0
    lib = ft.library.Library("ftsurf", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    with pytest.warns(DeprecationWarning, match="renamed to torch.library.register_fake"):
        ft.library.impl_abstract("ftsurf::twice", lambda x: x.new_empty(x.shape))
    with ft.autograd.set_multithreading_enabled(False):
        assert not ft.autograd.is_multithreading_enabled()
    assert ft.autograd.is_multithreading_enabled() and not ft.autograd.is_view_replay_enabled()
    d = ft.nn.PairwiseDistance(p=1.0, keepdim=True)  # torch keeps p as .norm
    assert (d.norm, d.eps, d.keepdim) == (1.0, 1e-6, True)
    assert d(ft.tensor([[0.0, 0.0]]), ft.tensor([[3.0, 4.0]])).tolist() == [[pytest.approx(7.0, abs=1e-5)]]
    with pytest.warns(UserWarning, match="SpawnContext is renamed to ProcessContext"):
        ft.multiprocessing.SpawnContext([], [])


def test_profile_hook_step_names_the_step_in_the_profiler():
    lin = ft.nn.Linear(2, 1)

    class Plain(ft.optim.SGD):
        pass

    opt = Plain(lin.parameters(), lr=0.1)
    step = ft.optim.Optimizer.profile_hook_step(ft.optim.SGD.step.__wrapped__)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append("pre"))
    lin(ft.ones(1, 2)).sum().backward()
    with ft.profiler.profile() as prof:
        step(opt)
    names = [e.name for e in prof.events()]
    assert "Optimizer.step#Plain.step" in names and seen == ["pre"]
