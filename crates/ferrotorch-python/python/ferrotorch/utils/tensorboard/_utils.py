"""Image layouts and PNG encoding for the writer."""

import struct
import zlib

import numpy as np


def convert_to_HWC(tensor, input_format):  # noqa: N802 - torch's name
    """Bring an image (or a batch of images, tiled into one) to HWC."""
    input_format = input_format.upper()
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shordhand twice. input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(
            f"size of input tensor and input format are different. "
            f"tensor shape: {tensor.shape}, input_format: {input_format}"
        )
    if len(input_format) == 4:
        index = [input_format.find(c) for c in "NCHW"]
        return make_grid(tensor.transpose(index)).transpose(1, 2, 0)
    if len(input_format) == 3:
        index = [input_format.find(c) for c in "HWC"]
        hwc = tensor.transpose(index)
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    if len(input_format) == 2:
        index = [input_format.find(c) for c in "HW"]
        hw = tensor.transpose(index)
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"dataformats {input_format} is not one of HW, CHW, HWC, NCHW, NHWC")


def make_grid(images, ncols=8):
    """Tile an NCHW batch into one CHW image, ``ncols`` across."""
    if images.ndim != 4:
        raise AssertionError("make_grid expects an NCHW batch")
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.shape[1] not in (3, 4):
        raise AssertionError(f"images must have 1, 3 or 4 channels, got {images.shape[1]}")
    n, c, h, w = images.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(float(n) / ncols))
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = images[i]
    return canvas


def _chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode_png(hwc):
    """PNG bytes of a ``uint8`` HWC array with 1, 3 or 4 channels.

    torch encodes with PIL; this writes the same image with zlib so that
    PIL is not needed (PIL, when installed, is used only to rescale)."""
    hwc = np.ascontiguousarray(hwc, dtype=np.uint8)
    height, width, channels = hwc.shape
    color_type = {1: 0, 3: 2, 4: 6}[channels]
    rows = np.concatenate([np.zeros((height, 1), np.uint8), hwc.reshape(height, width * channels)], 1)
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )
