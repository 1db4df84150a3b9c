"""Shared pytest setup: NumPy is the reference; PyTorch comparisons are
skipped when torch is not installed."""

import pytest

try:
    import torch as _torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")
