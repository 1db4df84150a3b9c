"""``torch.profiler``: time each op a program calls (with its input shapes
when ``record_shapes=True``), the ranges it names with ``record_function``
and the backward nodes autograd runs; print ``key_averages().table()``
or write a Chrome/Perfetto trace. Ops are timed at the dispatcher (Note
[Profiling at the dispatcher] in ``crates/ferrotorch-core``)::

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

Only CPU activity exists (there is no other device); memory, stack, FLOP
and module recording are not collected, and their flags are accepted and
ignored, as PyTorch ignores what a build cannot record."""

import enum
import functools
import os
import socket
import time

from .. import _C

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class DeviceType(enum.Enum):
    """Device kinds as the profiler names them (torch's c10 device codes)."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


class RecordScope(enum.Enum):
    """The kinds of ranges the recorder knows (``record_function`` ranges
    are ``USER_SCOPE``; ops are ``FUNCTION``, backward nodes
    ``BACKWARD_FUNCTION``)."""

    FUNCTION = 0
    BACKWARD_FUNCTION = 1
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9


def kineto_available():
    """Whether torch's Kineto tracer is built in: no (this recorder is
    ferrotorch's own, at the dispatcher)."""
    return False


class ProfilerActivity(enum.Enum):
    """What a profile records: ``CPU`` (ops on the CPU); the device kinds
    exist for scripts that name them, and are not supported here."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities():
    """The activities this build records: ``{ProfilerActivity.CPU}``."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (a ``schedule``'s answer)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step → action function: skip ``skip_first`` steps, then cycles of
    ``wait`` idle, ``warmup`` and ``active`` recording steps (the last one
    saves: ``on_trace_ready``), ``repeat`` cycles (0: forever);
    ``skip_first_wait`` starts the first cycle at its warmup."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        import warnings

        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        period = wait + warmup + active
        if skip_first_wait:
            # the first cycle starts at its warmup
            step += wait
        if repeat > 0 and step // period >= repeat:
            return ProfilerAction.NONE
        at = step % period
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < period - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(_step):
    return ProfilerAction.RECORD


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class Interval:
    """An event's start and end (µs since the profile began)."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class FunctionEvent:
    """One timed op call, named range or backward node."""

    def __init__(self, id, name, kind, thread, start, end, input_shapes):  # noqa: A002
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self.time_range = Interval(start, end)
        self.input_shapes = input_shapes
        self.is_user_annotation = kind == "user_annotation"
        self.device_type = "CPU"

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return f"<FunctionEvent name={self.name} thread={self.thread} cpu_time={_format_time(self.cpu_time_total)}>"


class FunctionEventAvg:
    """A ``key_averages()`` row: the calls of one name (and input shapes)."""

    def __init__(self, key, input_shapes, count, cpu_time_total, self_cpu_time_total):
        self.key = key
        self.input_shapes = input_shapes
        self.count = count
        self.cpu_time_total = cpu_time_total
        self.self_cpu_time_total = self_cpu_time_total
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.flops = 0

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events or rows that prints as PyTorch's table."""

    def __init__(self, items=(), result=None, group_by_input_shape=False):
        super().__init__(items)
        self._result = result
        self._by_shape = group_by_input_shape

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        """The table: name, self and total CPU time and their shares,
        average, calls (and input shapes when grouped by them)."""
        if self._result is None:
            return ""
        text = self._result.table(self._by_shape, sort_by, row_limit)
        return (header + "\n" + text) if header else text

    def __str__(self):
        return self.table()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        if self._result is None:
            return EventList()
        return _averages(self._result, group_by_input_shape)

    def export_chrome_trace(self, path):
        if self._result is None:
            raise RuntimeError("no profile results to export")
        self._result.export_chrome_trace(os.fspath(path))

    def total_average(self):
        total = FunctionEventAvg("Total", [], 0, 0.0, 0.0)
        for r in self:
            total.count += getattr(r, "count", 1)
            total.cpu_time_total += r.cpu_time_total
            total.self_cpu_time_total += getattr(r, "self_cpu_time_total", r.cpu_time_total)
        return total


def _averages(result, group_by_input_shape):
    rows = [FunctionEventAvg(*row) for row in result.key_averages(group_by_input_shape)]
    return EventList(rows, result, group_by_input_shape)


class _KinetoProfile:
    """The recording half of ``profile`` (start, stop, results)."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, custom_trace_id_callback=None):
        activities = set(activities) if activities else supported_activities()
        unsupported = [a for a in activities if a not in supported_activities()]
        if unsupported:
            import warnings

            warnings.warn(f"Unsupported profiler activities {unsupported}: only CPU is recorded", stacklevel=3)
        self.activities = activities
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self._session = None
        self._result = None

    def start(self):
        self._start_trace()

    def stop(self):
        self._stop_trace()

    def _start_trace(self):
        if self._session is None:
            self._session = _C._profiler_start(bool(self.record_shapes))

    def _stop_trace(self):
        if self._session is not None:
            session, self._session = self._session, None
            self._result = session.stop()

    def _results(self):
        if self._result is None:
            raise AssertionError("Profiler must be stopped (or a step saved) before reading results")
        return self._result

    def events(self):
        """Every recorded event (``FunctionEvent``), in the order they ended."""
        rows = self._results().events()
        return EventList([FunctionEvent(i, *r) for i, r in enumerate(rows)], self._result)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events grouped by name (and input shapes), with counts and times."""
        return _averages(self._results(), group_by_input_shape)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (opens in Perfetto and
        ``chrome://tracing``)."""
        self._results().export_chrome_trace(os.fspath(path))


class profile(_KinetoProfile):  # noqa: N801 - torch's name
    """Profile the ops run inside the ``with`` block, optionally on a
    ``schedule`` advanced by ``step()``, calling ``on_trace_ready(prof)``
    when a recording cycle ends."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, custom_trace_id_callback=None, post_processing_timeout_s=None):
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_range = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    def start(self):
        self._transit(None, self.current_action)
        self._open_step()

    def stop(self):
        self._close_step()
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._stop_trace()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        else:
            self._stop_trace()

    def step(self):
        """End a training step: advance the schedule."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step()

    def _transit(self, prev, cur):
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE:
            self._stop_trace()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if cur in recording and self._session is None:
            self._start_trace()
        elif cur not in recording and self._session is not None:
            self._stop_trace()

    def _open_step(self):
        if self.record_steps and self._session is not None:
            self._step_range = _C._record_function_enter(f"ProfilerStep#{self.step_num}")

    def _close_step(self):
        if self._step_range is not None:
            self._step_range.exit()
            self._step_range = None


class record_function:  # noqa: N801 - torch's name
    """A named range in the profile (a context manager or a decorator)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._handle = None

    def __enter__(self):
        self._handle = _C._record_function_enter(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._handle is not None:
            self._handle.exit()
            self._handle = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes each saved cycle to
    ``dir_name/<worker>.<ms>.pt.trace.json[.gz]`` (what TensorBoard's
    profiler plugin reads)."""
    os.makedirs(dir_name, exist_ok=True)
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof):
        ms = time.time_ns() // 1_000_000
        path = os.path.join(dir_name, f"{worker}.{ms}.pt.trace.json")
        while os.path.exists(path) or os.path.exists(path + ".gz"):
            ms += 1  # two cycles saved within one millisecond
            path = os.path.join(dir_name, f"{worker}.{ms}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip

            with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                g.write(f.read())
            os.remove(path)

    return handler
