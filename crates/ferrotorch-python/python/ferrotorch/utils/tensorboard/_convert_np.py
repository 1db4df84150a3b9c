"""Values given to the writer as NumPy arrays (torch's ``make_np``)."""

import numpy as np


def make_np(x):
    """A NumPy array of ``x``: a tensor (detached, on the CPU), an array,
    or a Python number (a 1-element array)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    from ... import Tensor

    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")
