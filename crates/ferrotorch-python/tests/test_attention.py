"""torch.nn.attention as torch's on a CPU: sdpa_kernel chooses among the
backends (MATH and FLASH_ATTENTION run; with neither, torch's error), the
flags read through torch.backends.cuda, the previous choice comes back
after the block, the flash-implementation registry, and grouped-query
attention (enable_gqa) against values torch 2.15 gives."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.nn.attention import (SDPBackend, activate_flash_attention_impl, current_flash_attention_impl,
                                     list_flash_attention_impls, register_flash_attention_impl,
                                     restore_flash_attention_impl, sdpa_kernel)

F = ft.nn.functional


def test_backend_values_and_names_are_torchs():
    assert [int(b) for b in SDPBackend] == [-1, 0, 1, 2, 3, 4]
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and repr(SDPBackend.MATH) == "<SDPBackend.MATH: 0>"


def test_sdpa_kernel_chooses_and_restores_the_backends():
    q = ft.randn(1, 2, 3, 4)
    ref = F.scaled_dot_product_attention(q, q, q)
    for ok in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        with sdpa_kernel(ok):
            assert ft.equal(F.scaled_dot_product_attention(q, q, q), ref)
    for none_here in ([SDPBackend.EFFICIENT_ATTENTION], [SDPBackend.CUDNN_ATTENTION]):
        with sdpa_kernel(none_here):
            with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention"):
                F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel(SDPBackend.MATH):
        assert not ft.backends.cuda.flash_sdp_enabled() and ft.backends.cuda.math_sdp_enabled()
    assert ft.backends.cuda.flash_sdp_enabled() and ft.backends.cuda.mem_efficient_sdp_enabled()
    with pytest.raises(AssertionError, match="got str"):
        with sdpa_kernel("math"):
            pass
    ft.backends.cuda.enable_math_sdp(False)
    ft.backends.cuda.enable_flash_sdp(False)
    try:
        with pytest.raises(RuntimeError, match="No viable backend"):
            F.scaled_dot_product_attention(q, q, q)
    finally:
        ft.backends.cuda.enable_math_sdp(True)
        ft.backends.cuda.enable_flash_sdp(True)


def test_the_flash_registry_installs_and_removes_an_implementation():
    events = []

    class Handle:
        def remove(self):
            events.append("removed")

    register_flash_attention_impl("MINE", register_fn=lambda: events.append("installed") or Handle())
    assert "MINE" in list_flash_attention_impls() and current_flash_attention_impl() is None
    activate_flash_attention_impl("MINE")
    assert current_flash_attention_impl() == "MINE"
    restore_flash_attention_impl()
    assert events == ["installed", "removed"] and current_flash_attention_impl() is None
    with pytest.raises(ValueError, match="Unknown flash attention impl 'FA9'"):
        activate_flash_attention_impl("FA9")


def test_grouped_query_attention_repeats_key_value_heads_as_torch():
    rng = np.random.default_rng(0)
    q = ft.tensor(rng.standard_normal((2, 4, 3, 5)).astype("float32"))
    k = ft.tensor(rng.standard_normal((2, 2, 3, 5)).astype("float32"))
    v = ft.tensor(rng.standard_normal((2, 2, 3, 5)).astype("float32"))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    # torch 2.15, the same call
    torch_first = [-0.20452, -1.04286, 0.61312, -0.20033, -0.43687, -0.04446, -0.91773, 0.78456, -0.0784, -0.44515,
                   -0.25382, -0.82387]
    assert y.reshape(-1).tolist()[:12] == pytest.approx(torch_first, abs=2e-5)
    with pytest.raises(RuntimeError, match="must divide"):
        F.scaled_dot_product_attention(q, k[:, :1].expand(2, 3, 3, 5), v[:, :1].expand(2, 3, 3, 5), enable_gqa=True)
