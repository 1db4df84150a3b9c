"""``torch.autograd.profiler``: the older ``profile`` context manager and
``record_function``, over the same recorder as ``torch.profiler``."""

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, _KinetoProfile, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


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
