"""torch.overrides and __torch_function__ as torch's: subclasses keep
their type through ops (Parameter does not), a logging subclass and a
TorchFunctionMode see the functions torch names (``add`` for ``+``,
``F.softmax``, factories under a mode), duck types override ops and
Python-level functions, handle_torch_function / redispatch_function /
wrap_torch_function / DisableTorchFunctionSubclass behave as torch's
(fixtures/overrides.json from fixtures/gen_overrides.py)."""

import pytest

import ferrotorch as ft
from fixture_compare import close as _same, load
import overrides_cases as C

FIX = load("overrides")


@pytest.mark.parametrize("name", list(C.CASES))
def test_torch_function_case_is_torchs(name):
    _same(C.run(ft, name), FIX[name], name)


def test_a_mode_leaves_tensor_as_it_was_and_an_exception_inside_pops_it():
    class Boom(ft.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")

    before = ft.Tensor.__add__
    with pytest.raises(ValueError, match="boom"):
        with Boom():
            ft.ones(1) + 1
    assert ft.Tensor.__add__ is before
    assert not ft.overrides.has_torch_function((ft.ones(1),))
    assert (ft.ones(1) + 1).item() == 2.0


def test_overridable_functions_cover_the_namespaces():
    table = ft.overrides.get_overridable_functions()
    assert ft.add in table[ft] and ft.nn.functional.relu in table[ft.nn.functional]
    assert ft.Tensor.add in table[ft.Tensor]
    assert ft.overrides.is_tensor_method_or_property(ft.Tensor.add)
    overrides = ft.overrides.get_testing_overrides()
    assert overrides[ft.add](1, 2) == -1
    assert ft.zeros in ft.overrides.get_ignored_functions()
