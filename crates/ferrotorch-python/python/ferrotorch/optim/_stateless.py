"""``swap_in_optimizer_params_and_state``: run an optimizer for a while on
other parameters and another state (a ``state_dict()``-shaped dict), then
put its own back."""

import contextlib
from collections import defaultdict


def _check(optimizer, swapin_parameters, swapin_optim_state):
    if not optimizer.state:
        raise RuntimeError("swap_in_optimizer_params_and_state requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError("swap_in_optimizer_params_and_state requires a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    if not isinstance(state, dict):
        raise RuntimeError("swap_in_optimizer_params_and_state requires swapin_optim_state['state'] to be a dict.")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError("swap_in_optimizer_params_and_state requires swapin_optim_state['param_groups'] to be "
                           f"a list of param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    flat = list(swapin_parameters.values())
    offset, seen, plan = 0, set(), []
    for idx, (group, sg) in enumerate(zip(optimizer.param_groups, groups)):
        ids = sg.get("params") if isinstance(sg, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise RuntimeError("swap_in_optimizer_params_and_state requires optimizer.state_dict()-style "
                               "param_groups[*]['params'] entries keyed by packed parameter ids.")
        if len(group["params"]) != len(ids):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params than the "
                               "live optimizer param group.")
        only_swap = [k for k in sg if k not in group]
        only_live = [k for k in group if k not in sg]
        if only_swap or only_live:
            raise RuntimeError("swap_in_optimizer_params_and_state requires optimizer.state_dict()-style param "
                               f"group keys to exactly match the live optimizer group keys for group {idx}. Keys "
                               f"only in swap-in: {only_swap}. Keys only in live: {only_live}.")
        if offset + len(ids) > len(flat):
            raise RuntimeError("swap_in_optimizer_params_and_state requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        plan.append((group, sg, flat[offset:offset + len(ids)]))
        offset += len(ids)
        seen.update(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError("swap_in_optimizer_params_and_state requires swapin_optim_state['state'] to be keyed only "
                           f"by packed parameter ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the block, ``optimizer`` steps ``swapin_parameters`` (in its
    parameters' order) from ``swapin_optim_state`` (a ``state_dict()``,
    keyed by packed ids); its own parameters, settings and state come
    back on exit."""
    state, plan = _check(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for group, sg, params in plan:
            group["params"] = params
            for k, v in sg.items():
                if k != "params":
                    group[k] = v
            for p, pid in zip(params, sg["params"]):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snap in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snap)
        optimizer.state = original_state
