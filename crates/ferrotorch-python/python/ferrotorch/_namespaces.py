"""``torch.linalg``, ``torch.special`` and ``torch.fft``: the ops declared
as ``linalg_solve``, ``special_ndtr``, ``fft_rfft`` (ATen's names), under
their namespace's short names, plus torch's aliases to top-level ops
(``special.expit`` is ``sigmoid``). Modules of their own, so
``import ferrotorch.linalg`` and ``from ferrotorch import special`` work."""

import sys
import types

from ._ops import _schemas, make_op

# torch.special names that are top-level ops under another name
_SPECIAL_ALIASES = {
    "expit": "sigmoid", "exp2": "exp2", "expm1": "expm1", "log1p": "log1p", "erf": "erf",
    "erfc": "erfc", "erfinv": "erfinv", "gammaln": "lgamma", "digamma": "digamma",
    "psi": "digamma", "polygamma": "polygamma", "logit": "logit", "round": "round",
    "sinc": "sinc", "xlogy": "xlogy", "logsumexp": "logsumexp", "i0": "i0",
    "multigammaln": "mvlgamma", "softmax": "softmax", "log_softmax": "log_softmax",
}
_LINALG_ALIASES = {"matmul": "matmul", "diagonal": "diagonal"}


def _module(name, prefix, aliases, namespace):
    mod = types.ModuleType(f"ferrotorch.{name}")
    mod.__doc__ = f"``torch.{name}``: the ``{prefix}*`` ops by their short names."
    for base, overloads in _schemas().items():
        if base.startswith(prefix):
            setattr(mod, base[len(prefix):], make_op(base, overloads))
    for short, full in aliases.items():
        if not hasattr(mod, short) and full in namespace:
            setattr(mod, short, namespace[full])
    sys.modules[mod.__name__] = mod
    return mod


def install(namespace):
    """Add ``linalg``, ``special`` and ``fft`` to the package ``namespace``."""
    namespace["linalg"] = _module("linalg", "linalg_", _LINALG_ALIASES, namespace)
    namespace["special"] = _module("special", "special_", _SPECIAL_ALIASES, namespace)
    namespace["fft"] = _module("fft", "fft_", {}, namespace)
    from . import _C

    # the exception torch.linalg's factorizations raise for singular or
    # not positive-definite input (a RuntimeError)
    namespace["linalg"].LinAlgError = _C._LinAlgError
    namespace["fft"].Tensor = _C.Tensor
