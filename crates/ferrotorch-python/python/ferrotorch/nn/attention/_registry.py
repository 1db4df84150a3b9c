"""The registry of flash-attention implementations
(``register_flash_attention_impl``): a name and a function that installs
the implementation and returns a handle whose ``remove()`` uninstalls it.
torch registers its CUDA kernels (FA3, FA4) here; a CPU build has none
until a program registers one."""

import logging

logger = logging.getLogger(__name__)

_FLASH_ATTENTION_IMPLS = {}
_FLASH_ATTENTION_ACTIVE = None


def register_flash_attention_impl(impl, *, register_fn):
    """Make ``impl`` available to ``activate_flash_attention_impl``."""
    _FLASH_ATTENTION_IMPLS[impl] = register_fn


def activate_flash_attention_impl(impl):
    """Install ``impl`` (the default first, if another one is active)."""
    global _FLASH_ATTENTION_ACTIVE
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _FLASH_ATTENTION_IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: "
                         f"{list_flash_attention_impls()}")
    handle = register_fn()
    if handle is not None:
        _FLASH_ATTENTION_ACTIVE = (impl, handle)


def list_flash_attention_impls():
    """The registered implementations' names, sorted."""
    return sorted(_FLASH_ATTENTION_IMPLS.keys())


def current_flash_attention_impl():
    """The active implementation's name, or None for the default."""
    return _FLASH_ATTENTION_ACTIVE[0] if _FLASH_ATTENTION_ACTIVE is not None else None


def restore_flash_attention_impl(_raise_warn=True):
    """Uninstall the active implementation (back to the default)."""
    global _FLASH_ATTENTION_ACTIVE
    handle = _FLASH_ATTENTION_ACTIVE[1] if _FLASH_ATTENTION_ACTIVE is not None else None
    if handle is not None:
        handle.remove()
    elif _raise_warn:
        logger.warning("Trying to restore default FA2 impl when no custom impl was activated")
    _FLASH_ATTENTION_ACTIVE = None
