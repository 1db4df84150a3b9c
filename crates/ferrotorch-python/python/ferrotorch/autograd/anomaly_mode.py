"""``torch.autograd.detect_anomaly`` / ``set_detect_anomaly``: anomaly
mode records where each backward node's forward op ran, and an error in
backward names it (the engine's, Note [Anomaly mode] in the core)."""

import warnings

from .. import _C


class detect_anomaly:  # noqa: N801 - torch's name
    """Within the block, anomaly mode is on (``check_nan`` is accepted:
    the engine checks every backward result for NaN in anomaly mode)."""

    def __init__(self, check_nan=True):
        self.prev = _C._is_anomaly_enabled()
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _C._set_detect_anomaly(True)

    def __exit__(self, *args):
        _C._set_detect_anomaly(self.prev)
        return False


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Turn anomaly mode on or off from here (and back at the end of a
    ``with`` block)."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C._is_anomaly_enabled()
        _C._set_detect_anomaly(bool(mode))

    def __enter__(self):
        pass

    def __exit__(self, *args):
        _C._set_detect_anomaly(self.prev)
        return False
