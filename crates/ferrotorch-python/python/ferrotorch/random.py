"""``torch.random``: the default generator's seed and state, and
``fork_rng``. States are torch's 5,056-byte layout (Note [Generator state
bytes] in the core), so a state saved by torch restores here."""

import contextlib

from . import _C

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]

default_generator = _C._default_generator()


def set_rng_state(new_state):
    """Restore the default generator's state (a uint8 tensor from
    ``get_rng_state``, here or in torch)."""
    default_generator.set_state(new_state)


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def manual_seed(seed):
    """Seed the default generator; returns it."""
    seed = int(seed)
    if not -0x8000_0000_0000_0000 <= seed <= 0xFFFF_FFFF_FFFF_FFFF:
        raise ValueError(f"Overflow when unpacking long long: {seed}")
    _C.manual_seed(seed & 0xFFFF_FFFF_FFFF_FFFF if seed < 0 else seed)
    return default_generator


def seed():
    """Seed the default generator non-deterministically; return the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Run the block with the random state forked: the default generator's
    state is restored when it ends. Only the CPU has one here (a device
    list or a device type names accelerators, which there are none of)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def thread_safe_generator():
    """The generator a DataLoader *thread* worker should draw from, or None
    (the default generator) in the main process and in process workers:
    DataLoader workers here are processes, so always None."""
    return None
