"""``SummaryWriter`` and ``FileWriter`` with torch's API, over the
``tensorboard`` package's ``EventFileWriter``."""

import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _summary
from ._convert_np import make_np

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes ``Event`` protocol buffers (summaries, graphs, session logs)
    to one event file in ``log_dir``."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """Write ``event``, stamping its time (now unless ``walltime``) and
        ``step``."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        """Write a ``Summary`` protocol buffer as an event."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """Write a graph: ``(GraphDef, RunMetadata)`` as ``add_graph``
        builds it."""
        graph, run_metadata = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)
        tagged = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph, walltime=None):
        """Write a ``GraphDef`` built from an ONNX model."""
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self):
        """Write what is queued to disk."""
        self.event_writer.flush()

    def close(self):
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self):
        """Start a new event file after ``close`` (tensorboard's writer
        cannot reopen a closed file, so this makes a new one)."""
        self.event_writer = EventFileWriter(self.get_logdir())


class SummaryWriter:
    """Writes entries for TensorBoard to event files in ``log_dir``
    (default ``runs/<month><day>_<H-M-S>_<host><comment>``), as
    ``torch.utils.tensorboard.SummaryWriter``::

        writer = SummaryWriter()
        for step in range(100):
            writer.add_scalar("Loss/train", loss.item(), step)
        writer.close()
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        # TensorFlow's default histogram buckets: ±1e-12·1.1^k up to 1e20, and 0
        v = 1e-12
        buckets = []
        while v < 1e20:
            buckets.append(v)
            v *= 1.1
        self.default_bins = [-b for b in reversed(buckets)] + [0] + buckets

    def _get_file_writer(self):
        """The writer of ``log_dir``, reopened after ``close``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # events after purge_step from an earlier run are dropped
                # by TensorBoard when it reads this marker
                most_recent_step = self.purge_step
                self.file_writer.add_event(Event(step=most_recent_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=most_recent_step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory the event files are written to."""
        return self.log_dir

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """Hyperparameters and their metrics for the HParams dashboard,
        written to a sub-run (``run_name``, default the time) as torch's."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w:
            w.file_writer.add_summary(exp, global_step)
            w.file_writer.add_summary(ssi, global_step)
            w.file_writer.add_summary(sei, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False, double_precision=False):
        """One value of the series ``tag`` at ``global_step``."""
        s = _summary.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(s, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several series in one chart: each in its own run directory
        ``<log_dir>/<main_tag>_<tag>``, all under the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(base, main_tag.replace("/", "_") + "_" + tag)
            writer = self.all_writers.get(path)
            if writer is None:
                writer = FileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[path] = writer
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """A whole tensor (the ``tensor`` plugin)."""
        self._get_file_writer().add_summary(_summary.tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """A histogram of ``values``; ``bins`` is NumPy's (a count, edges or
        a method name) or ``"tensorflow"`` (TensorFlow's buckets, the
        default)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(_summary.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,  # noqa: A002
                          global_step=None, walltime=None):
        """A histogram from statistics you computed."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        s = _summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(s, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """An image: ``CHW`` (default), ``HWC`` or ``HW``; floats in [0, 1]
        or uint8 in [0, 255]."""
        s = _summary.image(tag, img_tensor, dataformats=dataformats)
        self._get_file_writer().add_summary(s, global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images (``NCHW`` or ``NHWC``), tiled into one."""
        s = _summary.image(tag, img_tensor, dataformats=dataformats)
        self._get_file_writer().add_summary(s, global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them), rendered to an image."""
        figures = figure if isinstance(figure, list) else [figure]
        images = np.stack([_render_figure(f, close) for f in figures])
        if isinstance(figure, list):
            self.add_images(tag, images, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, images[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Text (Markdown) under ``tag``."""
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of ``model`` traced on ``input_to_model`` (with
        ``ferrotorch.jit.trace``), for the Graphs dashboard."""
        from ._graph import graph

        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    def flush(self):
        """Write every pending event to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        """Flush and close every event file; a later ``add_*`` opens a new
        one."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _render_figure(figure, close):
    """A matplotlib figure as a CHW uint8 array."""
    import matplotlib.backends.backend_agg as agg
    import matplotlib.pyplot as plt

    canvas = agg.FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    if close:
        plt.close(figure)
    return np.moveaxis(rgba[:, :, :3], 2, 0)
