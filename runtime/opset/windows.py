"""Sliding windows over NCHW arrays: what convolutions and pooling kernels contract or reduce."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["conv_windows", "window_count"]


def window_count(
    size: int,
    kernel: int,
    stride: int,
    pads: tuple[int, int],
    dilation: int = 1,
    ceil: bool = False,
) -> int:
    """Output extent along one axis with ``pads`` (begin, end); ``ceil`` as ONNX's ceil_mode,
    where the last window must still start inside the input or its leading padding."""
    span = size + pads[0] + pads[1] - dilation * (kernel - 1) - 1
    if not ceil:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pads[0]:
        out -= 1
    return out


def conv_windows(
    x: np.ndarray,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilations: tuple[int, int],
    pad_value: float,
    *,
    ceil_mode: bool = False,
    overhang_value: float | None = None,
) -> np.ndarray:
    """A read-only view ``(N, C, OH, OW, KH, KW)`` of every window of ``x`` (NCHW), padded
    with ``pad_value`` (``pads`` are top, left, bottom, right); the cells that ceil mode's last
    windows reach past the padding hold ``overhang_value`` (default: ``pad_value``)."""
    top, left, bottom, right = pads
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    h, w = x.shape[2:]
    oh = window_count(h, kh, sh, (top, bottom), dh, ceil_mode)
    ow = window_count(w, kw, sw, (left, right), dw, ceil_mode)
    # ceil mode may need padding past the declared end
    need_h = (oh - 1) * sh + dh * (kh - 1) + 1
    need_w = (ow - 1) * sw + dw * (kw - 1) + 1
    extra_h = max(0, need_h - (h + top + bottom))
    extra_w = max(0, need_w - (w + left + right))
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=pad_value)
    if extra_h or extra_w:
        fill = pad_value if overhang_value is None else overhang_value
        padded = np.pad(padded, ((0, 0), (0, 0), (0, extra_h), (0, extra_w)), constant_values=fill)
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    view = sliding_window_view(padded, (span_h, span_w), axis=(2, 3))
    return view[:, :, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]
