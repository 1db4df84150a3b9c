"""``torch.amp.GradScaler``: loss scaling for low-precision training, with
torch's growth/backoff schedule. On the CPU it scales and checks for
infs as torch's CPU scaler does; for another device type (the default
'cuda') there is no device, so it warns and disables itself as torch's
does without CUDA: ``scale`` returns its input and ``step`` calls the
optimizer's step."""

import warnings
from collections import defaultdict

from .. import _C

__all__ = ["GradScaler", "OptState"]


class OptState:
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _ft():
    import ferrotorch

    return ferrotorch


class GradScaler:
    """Scale the loss before backward, unscale the gradients (skipping the
    step when any is inf/NaN) and adjust the scale."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device != "cpu" and enabled:
            warnings.warn(f"torch.{device}.amp.GradScaler is enabled, but {device.upper()} is not available.  "
                          "Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(lambda: {"stage": OptState.READY, "found_inf_per_device": {}})

    def _lazy_init_scale_growth_tracker(self, dev=None):
        ft = _ft()
        self._scale = ft.full((), self._init_scale, dtype=ft.float32)
        self._growth_tracker = ft.full((), self._init_growth_tracker, dtype=ft.int32)

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        """``outputs`` times the current scale (tensors in nested sequences)."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        if isinstance(outputs, _C.Tensor):
            return outputs * self._scale.to(dtype=outputs.dtype)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        ft = _ft()
        with ft.no_grad():
            for g in optimizer.param_groups:
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    if (not allow_fp16) and repr(p.grad.dtype) == "torch.float16":
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grad = p.grad
                    if not ft.isfinite(grad).all():
                        found_inf.fill_(1.0)
                    grad.mul_(inv_scale.to(grad.dtype))
        return {"cpu": found_inf}

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (once per step)."""
        if not self._enabled:
            return
        ft = _ft()
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ft.full((), 0.0, dtype=ft.float32)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _check_scale_growth_tracker(self, funcname):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(float(v.item()) for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale if needed, then ``optimizer.step()`` unless a gradient was
        inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        ret = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return ret

    def update(self, new_scale=None):
        """Back the scale off after a step with infs, grow it after
        ``growth_interval`` clean steps (or set ``new_scale``)."""
        if not self._enabled:
            return
        ft = _ft()
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element torch.FloatTensor with "
                                         "requires_grad=False.")
                self._scale.copy_(new_scale)
        else:
            found = [f for s in self._per_optimizer_states.values() for f in s["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(float(f.item()) for f in found)
            if found_inf:
                self._scale.mul_(self._backoff_factor)
                self._growth_tracker.zero_()
            else:
                tracker = int(self._growth_tracker.item()) + 1
                if tracker == self._growth_interval:
                    self._scale.mul_(self._growth_factor)
                    tracker = 0
                self._growth_tracker.fill_(tracker)
        self._per_optimizer_states = defaultdict(lambda: {"stage": OptState.READY, "found_inf_per_device": {}})

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def state_dict(self):
        """The scale, the factors, the interval and the growth tracker."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
