"""Sliding windows over ``(N, C, *spatial)`` arrays (NCHW in 2-D): what convolutions and pooling
kernels contract or reduce."""

from __future__ import annotations

from collections.abc import Sequence

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
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    pad_value: float,
    *,
    ceil_mode: bool = False,
    overhang_value: float | None = None,
) -> np.ndarray:
    """A read-only view ``(N, C, *out, *kernel)`` of every window of ``x`` (``(N, C,
    *spatial)``, any number of spatial axes: ``kernel``, ``strides`` and ``dilations`` give
    one value per spatial axis, ``pads`` the begins and then the ends, so (top, left, bottom,
    right) in 2-D), padded with ``pad_value``; the cells that ceil mode's last windows reach
    past the padding hold ``overhang_value`` (default: ``pad_value``)."""
    rank = len(kernel)
    spatial = x.shape[2:]
    begins, ends = pads[:rank], pads[rank:]
    out = [
        window_count(size, k, s, (b, e), d, ceil_mode)
        for size, k, s, b, e, d in zip(
            spatial, kernel, strides, begins, ends, dilations, strict=True
        )
    ]
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    # ceil mode may need padding past the declared end
    extra = [
        max(0, (o - 1) * s + span - (size + b + e))
        for o, s, span, size, b, e in zip(out, strides, spans, spatial, begins, ends, strict=True)
    ]
    padded = np.pad(x, [(0, 0), (0, 0), *zip(begins, ends, strict=True)], constant_values=pad_value)
    if any(extra):
        fill = pad_value if overhang_value is None else overhang_value
        padded = np.pad(padded, [(0, 0), (0, 0), *((0, e) for e in extra)], constant_values=fill)
    view = sliding_window_view(padded, spans, axis=tuple(range(2, 2 + rank)))
    starts = tuple(slice(None, (o - 1) * s + 1, s) for o, s in zip(out, strides, strict=True))
    cells = tuple(slice(None, None, d) for d in dilations)
    return view[(slice(None), slice(None), *starts, *cells)]
