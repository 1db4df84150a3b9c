"""``nn.utils.spectral_norm``: the forward-pre-hook spectral norm torch
keeps beside the parametrization: ``weight_orig`` with power-iteration
buffers ``weight_u``/``weight_v``, state dicts versioned in ``_metadata``
as torch's."""

from ...autograd.grad_mode import no_grad
from .. import functional as F

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]


def _ft():
    import ferrotorch

    return ferrotorch


class SpectralNorm:
    """The hook: ``weight = weight_orig / σ``, σ by power iteration."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name, self.dim, self.eps = name, dim, eps
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight):
        w = weight
        if self.dim != 0:
            w = w.permute(self.dim, *[d for d in range(w.dim()) if d != self.dim])
        return w.reshape(w.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        ft = _ft()
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ft.mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ft.mv(mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        return weight / ft.dot(u, ft.mv(mat, v))

    def remove(self, module):
        from ..parameter import Parameter

        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        module.__dict__.pop(self.name, None)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        ft = _ft()
        v = ft.linalg.multi_dot([weight_mat.t().mm(weight_mat).pinverse(), weight_mat.t(), u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / ft.dot(u, ft.mv(weight_mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        object.__setattr__(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Loads state dicts of spectral norm before version 1 (which saved
    ``weight`` and no ``weight_v``)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is None or version < 1:
            key = prefix + fn.name
            if version is None and all(key + s in state_dict for s in ("_orig", "_u", "_v")) and key not in state_dict:
                return
            missing = False
            for suffix in ("_orig", "", "_u"):
                if key + suffix not in state_dict:
                    missing = True
                    if strict:
                        missing_keys.append(key + suffix)
            if missing:
                return
            with no_grad():
                orig = state_dict[key + "_orig"]
                weight = state_dict.pop(key)
                sigma = (orig / weight).mean()
                mat = fn.reshape_weight_to_matrix(orig)
                state_dict[key + "_v"] = fn._solve_v_and_rescale(mat, state_dict[key + "_u"], sigma)


class SpectralNormStateDictHook:
    """Records the spectral norm's version in the state dict's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before each forward."""
    from ..modules.conv import ConvTranspose2d
    from ..modules.volumetric import ConvTranspose1d, ConvTranspose3d

    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo ``spectral_norm``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for table in (module._state_dict_hooks, module._load_state_dict_pre_hooks):
        for k, hook in list(table.items()):
            inner = getattr(hook, "hook", hook)
            if isinstance(inner, (SpectralNormStateDictHook, SpectralNormLoadStateDictPreHook)) and inner.fn.name == name:
                del table[k]
    return module
