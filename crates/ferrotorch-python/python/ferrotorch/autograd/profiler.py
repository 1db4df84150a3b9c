"""``torch.autograd.profiler``: the older ``profile`` context manager and
``record_function``, over the same recorder as ``torch.profiler``."""

import enum
from collections import defaultdict

from ..profiler import (DeviceType, EventList, FunctionEvent, FunctionEventAvg, ProfilerActivity,  # noqa: F401
                        _KinetoProfile, kineto_available, record_function)

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function", "KinetoStepTracker",
           "EnforceUnique", "ProfilerState", "ProfilerConfig"]


class ProfilerState(enum.Enum):
    """Which recorder a profile uses (torch's enum; here only CPU ranges)."""

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_ONDEMAND = 9


class ProfilerConfig:
    """What a profile records (torch's ``_ProfilerConfig``)."""

    def __init__(self, state, report_input_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, trace_id=None):
        self.state = state
        self.report_input_shapes, self.profile_memory = report_input_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.experimental_config, self.trace_id = experimental_config, trace_id


class EnforceUnique:
    """Raises if a key is seen twice (what the profiler uses to check that
    event ids are unique)."""

    def __init__(self):
        self.seen = set()

    def see(self, *key):
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


class KinetoStepTracker:
    """Step counters the profiler's ``schedule`` follows: each requester
    (``"ProfilerStep"``, ``"Optimizer"``) increments its own; the global
    step is the largest of them."""

    _current_step = 0
    _step_dict = defaultdict(int)

    @classmethod
    def init_step_count(cls, requester):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester):
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester):
        """Count a step of ``requester``; returns the global step."""
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls):
        return cls._current_step


class profile(_KinetoProfile):  # noqa: N801 - torch's name
    """``with torch.autograd.profiler.profile() as prof:`` — records the
    block; ``prof.key_averages().table()``, ``prof.function_events``,
    ``prof.export_chrome_trace(path)``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.enabled:
            self.stop()
        return False

    @property
    def function_events(self):
        return self.events()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, header=header)

    def __str__(self):
        return self.table()
