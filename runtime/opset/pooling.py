"""Pooling operators, in float over ``(N, C, *spatial)`` values of any number of spatial axes
(NCHW in 2-D) and in int8 over NCHW values.

``pads`` are the begins and then the ends of the spatial axes ((top, left, bottom, right) in
2-D); ``ceil_mode`` is ONNX's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import NUMERIC, Operator, Origin, TensorType, need, same_dtype
from runtime.opset.integer import half, wrap32
from runtime.opset.windows import conv_windows, window_count

__all__ = [
    "AveragePool",
    "GlobalAveragePool",
    "MaxPool",
    "PoolAttrs",
    "QAvgPoolAttrs",
    "QGlobalAvgPool",
    "QMaxPool",
]

_F32 = np.float32


@dataclass(frozen=True)
class PoolAttrs:
    """A pooling window per spatial axis: ``kernel``, ``strides`` and ``dilations`` hold one
    value per axis, ``pads`` the begins and then the ends ((top, left, bottom, right) in 2-D).
    ``count_include_pad`` applies to averages."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...] = (1, 1)
    pads: tuple[int, ...] = (0, 0, 0, 0)
    ceil_mode: bool = False
    count_include_pad: bool = False
    dilations: tuple[int, ...] = (1, 1)


def _pool_type(attrs: PoolAttrs, x: TensorType) -> TensorType:
    rank = len(attrs.kernel)
    k, s, d, p = attrs.kernel, attrs.strides, attrs.dilations, attrs.pads
    need(
        rank >= 1 and len(x.shape) == rank + 2, f"needs a {rank + 2}-D input for a {rank}-D window"
    )
    need(
        len(s) == len(d) == rank and len(p) == 2 * rank,
        f"needs {rank} strides and dilations and {2 * rank} pads",
    )
    need(min(s) >= 1 and min(k) >= 1 and min(d) >= 1, "needs positive windows, strides, dilations")
    spans = [di * (ki - 1) + 1 for ki, di in zip(k, d, strict=True)]
    need(
        all(pi < span for pi, span in zip(p, spans * 2, strict=True)),
        "a padding as large as the window",
    )
    out = [
        window_count(size, ki, si, (p[i], p[i + rank]), di, ceil=attrs.ceil_mode)
        for i, (size, ki, si, di) in enumerate(zip(x.shape[2:], k, s, d, strict=True))
    ]
    need(min(out) >= 1, "the window is larger than the padded input")
    return TensorType((*x.shape[:2], *out), x.dtype)


def _global_type(x: TensorType) -> TensorType:
    need(len(x.shape) == 4, "needs a 4-D (NCHW) input")
    return TensorType((x.shape[0], x.shape[1], 1, 1), x.dtype)


class _FloatPool(Operator):
    Attrs = PoolAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "float32")
        return [_pool_type(attrs, inputs[0])]


def _cells(kernel: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of :func:`conv_windows`' view that hold a window's cells."""
    return tuple(range(-len(kernel), 0))


class MaxPool(_FloatPool):
    """The maximum of each window, in the input's dtype (a float or an integer); padding never
    wins (it is ``-inf``, or the integer's least value). ``count_include_pad`` only matters to
    averages."""

    name = "MaxPool"
    member = "MAX_POOL"

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, *NUMERIC)
        return [_pool_type(attrs, inputs[0])]

    @staticmethod
    def kernel(x, *, kernel, strides, pads, ceil_mode, count_include_pad, dilations):
        del count_include_pad  # an average's option, carried by the shared record
        x = np.asarray(x)
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        windows = conv_windows(x, kernel, strides, pads, dilations, lowest, ceil_mode=ceil_mode)
        return windows.max(axis=_cells(kernel))


class AveragePool(_FloatPool):
    """The mean of each window. The divisor counts the input elements the window covers, plus,
    with ``count_include_pad``, the explicit padding it covers (not the overhang that ceil mode
    adds past the padding), as onnxruntime does."""

    name = "AveragePool"
    member = "AVERAGE_POOL"

    @staticmethod
    def kernel(x, *, kernel, strides, pads, ceil_mode, count_include_pad, dilations):
        window = dict(
            kernel=kernel, strides=strides, pads=pads, dilations=dilations, ceil_mode=ceil_mode
        )
        total = conv_windows(np.asarray(x, _F32), pad_value=0.0, **window)
        ones = np.ones((1, 1, *x.shape[2:]), _F32)
        padding = 1.0 if count_include_pad else 0.0
        count = conv_windows(ones, pad_value=padding, overhang_value=0.0, **window)
        cells = _cells(kernel)
        return total.sum(axis=cells, dtype=_F32) / count.sum(axis=cells)


class GlobalAveragePool(Operator):
    name = "GlobalAveragePool"
    member = "GLOBAL_AVERAGE_POOL"

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "float32")
        return [_global_type(inputs[0])]

    @staticmethod
    def kernel(x):
        return np.asarray(x, _F32).mean(axis=(2, 3), keepdims=True, dtype=_F32)


class QMaxPool(Operator):
    """Max pooling of int8 NCHW values by an undilated 2-D window (the accelerator's); padding
    is -128 (the smallest int8, as -inf is for floats)."""

    name = "QMaxPool"
    member = "QMAX_POOL"
    origin = Origin.QUANTIZED
    Attrs = PoolAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        need(inputs[0].dtype == "int8", "needs an int8 input")
        need(len(attrs.kernel) == 2, f"needs a 2-D window, got {len(attrs.kernel)}-D")
        need(tuple(attrs.dilations) == (1, 1), f"needs no dilations, got {list(attrs.dilations)}")
        return [_pool_type(attrs, inputs[0])]

    @staticmethod
    def kernel(
        x, *, kernel, strides, pads, ceil_mode=False, count_include_pad=False, dilations=(1, 1)
    ):
        del count_include_pad  # an average's option, carried by the shared record
        windows = conv_windows(x, kernel, strides, pads, dilations, -128, ceil_mode=ceil_mode)
        return windows.max(axis=(4, 5)).astype(np.int8)


@dataclass(frozen=True)
class QAvgPoolAttrs:
    """Integer global average ``(sum * multiplier + 2**(shift-1)) >> shift`` per channel, its
    low 8 bits as int8."""

    multiplier: int
    shift: int


class QGlobalAvgPool(Operator):
    """``(sum * multiplier + 2**(shift-1)) >> shift`` per channel (rounding to nearest), its
    low 8 bits as int8."""

    name = "QGlobalAvgPool"
    member = "QGLOBAL_AVG_POOL"
    origin = Origin.QUANTIZED
    Attrs = QAvgPoolAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        need(inputs[0].dtype == "int8", "needs an int8 input")
        return [_global_type(inputs[0])]

    @staticmethod
    def kernel(x, *, multiplier, shift):
        total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
        scaled = wrap32(wrap32(total) * np.int64(multiplier)) + half(shift)
        return (wrap32(scaled) >> np.int32(shift)).astype(np.int8)
