"""``ferrotorch.cuda.amp``: mixed precision on CUDA. With no CUDA device,
``autocast`` is a context manager that changes nothing (torch warns and
disables it the same way), and ``GradScaler`` is disabled: ``scale``
returns its input and ``step`` calls the optimizer's ``step``."""

import warnings


class autocast:
    """``with autocast():`` runs the block unchanged: no CUDA here."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        if enabled:
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                          "Disabling")
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


class GradScaler:
    """Loss scaling for float16 training on CUDA; disabled without CUDA."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.")
        self._enabled = False

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass
