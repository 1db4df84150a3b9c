"""The rest of torch.nn as torch's: init draws (trunc_normal_, orthogonal_,
dirac_, eye_, sparse_ and the deprecated aliases), 3-D padding modules,
lazy modules, ParameterList/ParameterDict, AdaptiveLogSoftmaxWithLoss,
LP pooling, CrossMapLRN2d, LinearCrossEntropyLoss, SyncBatchNorm and
NLLLoss2d give torch's values, shapes and state-dict keys
(fixtures/nn_more.json from fixtures/gen_nn_more.py)."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _close, load
import nn_more_cases as C

FIX = load("nn_more")


@pytest.mark.parametrize("name", list(C.CASES))
def test_nn_case_is_torchs(name):
    _close(C.run(ft, name), FIX[name], name)


def test_lazy_module_refuses_a_state_dict_before_its_first_call_shapes_it():
    m = ft.nn.LazyLinear(2)
    with pytest.raises(RuntimeError):
        m.weight.shape


def test_adaptive_softmax_rejects_bad_cutoffs_and_targets():
    with pytest.raises(ValueError, match="cutoffs"):
        ft.nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs=[5, 3])
    asm = ft.nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs=[3])
    with pytest.raises(RuntimeError, match="Target values should be in"):
        asm(ft.randn(2, 4), ft.tensor([1, 12]))


def test_cross_map_lrn_gradient_is_that_of_its_forward():
    # torch's hand-written backward assumes a symmetric channel window that
    # its forward does not use (its gradcheck fails); ours differentiates the
    # forward whose values test_nn_case_is_torchs[lp_pool_lrn] checks.
    x = ft.randn(1, 6, 2, 2, dtype=ft.float64, requires_grad=True)
    lrn = ft.nn.CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=1.5)
    assert ft.autograd.gradcheck(lrn, (x,))
