"""Linear operators: convolution, Gemm and MatMul in float, and their integer forms.

Layouts are ONNX's: NCHW activations, OIHW weights; a convolution's ``pads`` are (top, left,
bottom, right). The integer forms compute the accelerator's arithmetic exactly
(:mod:`runtime.opset.integer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import (
    Operator,
    Origin,
    TensorType,
    broadcast,
    f32,
    need,
    same_dtype,
)
from runtime.opset.integer import MAX_SHIFT, product, requantize
from runtime.opset.windows import conv_windows, window_count

__all__ = [
    "Conv",
    "ConvAttrs",
    "Gemm",
    "GemmAttrs",
    "MatMul",
    "QBatchMatMul",
    "QConv",
    "QConvAttrs",
    "QDense",
    "QDenseAttrs",
]

_F32 = np.float32


@dataclass(frozen=True)
class ConvAttrs:
    """``pads`` are (top, left, bottom, right); ``groups`` equal to the input channels (and
    the output channels a multiple of them) is a depthwise convolution."""

    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    groups: int = 1


def _conv_type(attrs: ConvAttrs, inputs: Sequence[TensorType]) -> tuple[int, ...]:
    """The output shape of a convolution of ``inputs`` (data, weights[, bias])."""
    x, w = inputs[0].shape, inputs[1].shape
    need(len(x) == 4 and len(w) == 4, "needs a 4-D input and 4-D weights (NCHW, OIHW)")
    groups = attrs.groups
    need(groups >= 1 and x[1] % groups == 0, f"{x[1]} input channels in {groups} groups")
    need(w[1] * groups == x[1], f"weights expect {w[1] * groups} input channels, got {x[1]}")
    need(w[0] % groups == 0, f"{w[0]} output channels in {groups} groups")
    need(min(attrs.strides) >= 1 and min(attrs.dilations) >= 1, "needs positive strides")
    if len(inputs) == 3:
        need(inputs[2].shape == (w[0],), f"the bias must have shape [{w[0]}]")
    s, p, d = attrs.strides, attrs.pads, attrs.dilations
    oh = window_count(x[2], w[2], s[0], (p[0], p[2]), d[0])
    ow = window_count(x[3], w[3], s[1], (p[1], p[3]), d[1])
    need(oh >= 1 and ow >= 1, "the kernel is larger than the padded input")
    return (x[0], w[0], oh, ow)


def _conv_macs(inputs: Sequence[TensorType], outputs: Sequence[TensorType]) -> int:
    w = inputs[1].shape
    return outputs[0].size * w[1] * w[2] * w[3]


class Conv(Operator):
    """2-D grouped convolution (depthwise when ``groups`` is the input channel count)."""

    name = "Conv"
    member = "CONV"
    Attrs = ConvAttrs
    arity = (2, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        return [TensorType(_conv_type(attrs, inputs), same_dtype(inputs[:2], "float32"))]

    @staticmethod
    def kernel(x, w, b=None, *, strides, pads, dilations, groups):
        """By im2col: one batched matrix product per group."""
        n = x.shape[0]
        m, cg, kh, kw = w.shape
        windows = conv_windows(f32(x), (kh, kw), strides, pads, dilations, 0.0)
        oh, ow = windows.shape[2:4]
        # (N, C, OH, OW, KH, KW) -> (N, G, C/G * KH*KW, OH*OW), matching OIHW's (O, C/G, KH, KW)
        cols = windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, groups, cg * kh * kw, oh * ow)
        weights = f32(w).reshape(groups, m // groups, cg * kh * kw)
        y = np.matmul(weights, cols).reshape(n, m, oh, ow)
        if b is not None:
            y += f32(b).reshape(1, m, 1, 1)
        return y

    @staticmethod
    def macs(attrs, inputs, outputs):
        return _conv_macs(inputs, outputs)


@dataclass(frozen=True)
class GemmAttrs:
    """ONNX Gemm: ``alpha * A' @ B' + beta * C`` with ``'`` a transpose where asked."""

    alpha: float = 1.0
    beta: float = 1.0
    trans_a: bool = False
    trans_b: bool = False


class Gemm(Operator):
    """``alpha * A' @ B' + beta * C`` (``C`` broadcast to the product's shape)."""

    name = "Gemm"
    member = "GEMM"
    Attrs = GemmAttrs
    arity = (2, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        a, b = inputs[0].shape, inputs[1].shape
        need(len(a) == 2 and len(b) == 2, "needs 2-D operands")
        m, k = (a[1], a[0]) if attrs.trans_a else a
        k2, n = (b[1], b[0]) if attrs.trans_b else b
        need(k == k2, f"inner dimensions {k} and {k2} differ")
        if len(inputs) == 3:
            need(broadcast(inputs[2].shape, (m, n)) == (m, n), "C does not broadcast to the output")
        return [TensorType((m, n), same_dtype(inputs[:2], "float32"))]

    @staticmethod
    def kernel(a, b, c=None, *, alpha, beta, trans_a, trans_b):
        a = f32(a).T if trans_a else f32(a)
        b = f32(b).T if trans_b else f32(b)
        y = a @ b
        if alpha != 1.0:
            y *= _F32(alpha)
        if c is not None:
            y += _F32(beta) * f32(c)
        return y

    @staticmethod
    def macs(attrs, inputs, outputs):
        a = inputs[0].shape
        return outputs[0].size * (a[0] if attrs.trans_a else a[1])


class MatMul(Operator):
    """numpy's (and ONNX's) matrix product, batch dimensions broadcast."""

    name = "MatMul"
    member = "MATMUL"
    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        a, b = inputs[0].shape, inputs[1].shape
        need(len(a) >= 1 and len(b) >= 1, "needs operands of rank >= 1")
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        need(a2[-1] == b2[-2], f"inner dimensions {a2[-1]} and {b2[-2]} differ")
        batch = broadcast(a2[:-2], b2[:-2])
        shape = (*batch, a2[-2], b2[-1])
        if len(a) == 1:
            shape = shape[:-2] + shape[-1:]
        if len(b) == 1:
            shape = shape[:-1]
        return [TensorType(shape, same_dtype(inputs, "float32"))]

    @staticmethod
    def kernel(a, b):
        return np.matmul(f32(a), f32(b))

    @staticmethod
    def macs(attrs, inputs, outputs):
        return outputs[0].size * inputs[0].shape[-1]


def _check_requantisation(attrs, inputs, consts, channels: int) -> None:
    """The operands after the weights: an int32 bias ``[channels]``; with five, also an int8
    multiplier and int8 shifts ``[channels]``, constant, the shifts (and ``attrs.shift``) in
    ``0..31``."""
    need(len(inputs) != 4, "needs a multiplier and its shifts together (five inputs)")
    need(len(inputs) < 3 or inputs[2].dtype == "int32", "needs an int32 bias")
    need(0 <= attrs.shift <= MAX_SHIFT, f"shift {attrs.shift} is not in 0..{MAX_SHIFT}")
    if len(inputs) < 5:
        return
    for index, (what, dtype) in enumerate(
        (("bias", "int32"), ("multiplier", "int8"), ("shifts", "int8")), 2
    ):
        need(inputs[index].dtype == dtype, f"needs an {dtype} {what}")
        need(inputs[index].shape == (channels,), f"the {what} must have shape [{channels}]")
    shifts = consts[4] if len(consts) > 4 else None
    need(shifts is not None, "the shifts must be a constant")
    need(
        bool(np.all((shifts >= 0) & (shifts <= MAX_SHIFT))),
        f"the shifts must be in 0..{MAX_SHIFT}",
    )


@dataclass(frozen=True)
class QConvAttrs:
    """Integer convolution: ``clip((x * w + bias) >> shift, lo, hi)`` as int8, the products
    accumulated in int32, the bias at the accumulator's scale (the quantizer folds the rounding
    constant ``2**(shift-1)`` into it), ``>>`` an arithmetic shift, as the accelerator runs it.
    With five inputs (data, weights, bias, an int8 multiplier and an int8 shift per output
    channel), the fixed-point form ``clip((((x * w) >> shift) * multiplier + bias) >> shifts,
    lo, hi)`` (:func:`runtime.opset.integer.requantize`): per-channel weight scales.
    The geometry fields are :class:`ConvAttrs`'s (records stay flat: they travel as JSON)."""

    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    groups: int
    shift: int
    lo: int = -128
    hi: int = 127

    @property
    def conv(self) -> ConvAttrs:
        return ConvAttrs(self.strides, self.pads, self.dilations, self.groups)


class QConv(Operator):
    """``clip((x * w + bias) >> shift, lo, hi)`` as int8 (NCHW, OIHW, an int32 bias per
    channel at the accumulator's scale)."""

    name = "QConv"
    member = "QCONV"
    origin = Origin.QUANTIZED
    Attrs = QConvAttrs
    arity = (2, 5)

    @staticmethod
    def infer(attrs, inputs, consts):
        need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 data and weights")
        _check_requantisation(attrs, inputs, consts, inputs[1].shape[0])
        return [TensorType(_conv_type(attrs.conv, inputs[:3]), "int8")]

    @staticmethod
    def kernel(
        x,
        w,
        bias=None,
        multiplier=None,
        shifts=None,
        *,
        strides,
        pads,
        dilations,
        groups,
        shift,
        lo=-128,
        hi=127,
    ):
        n = x.shape[0]
        o, cg, kh, kw = w.shape
        windows = conv_windows(x, (kh, kw), strides, pads, dilations, 0)
        oh, ow = windows.shape[2:4]
        og = o // groups
        out = np.empty((n, o, oh, ow), np.int64)
        for g in range(groups):
            # (N, OH, OW, C*KH*KW) @ (C*KH*KW, O): an exact integer product through float BLAS
            part = windows[:, g * cg : (g + 1) * cg].transpose(0, 2, 3, 1, 4, 5)
            cols = part.reshape(n * oh * ow, cg * kh * kw)
            weights = w[g * og : (g + 1) * og].reshape(og, cg * kh * kw)
            result = product(cols, weights.T)
            out[:, g * og : (g + 1) * og] = result.reshape(n, oh, ow, og).transpose(0, 3, 1, 2)
        per_channel = [
            None if v is None else v.reshape(1, -1, 1, 1) for v in (bias, multiplier, shifts)
        ]
        return requantize(out, per_channel[0], shift, lo, hi, *per_channel[1:])

    @staticmethod
    def macs(attrs, inputs, outputs):
        return _conv_macs(inputs, outputs)


@dataclass(frozen=True)
class QDenseAttrs:
    """Integer dense layer ``clip((x @ w.T + bias) >> shift, lo, hi)`` as int8 (the bias as
    :class:`QConvAttrs`'s); also the requantisation of :class:`QBatchMatMul`."""

    shift: int
    lo: int = -128
    hi: int = 127


class QDense(Operator):
    """``clip((x @ w.T + bias) >> shift, lo, hi)`` as int8 (x ``[N, K]``, w ``[M, K]``)."""

    name = "QDense"
    member = "QDENSE"
    origin = Origin.QUANTIZED
    Attrs = QDenseAttrs
    arity = (2, 5)

    @staticmethod
    def infer(attrs, inputs, consts):
        x, w = inputs[0].shape, inputs[1].shape
        need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 data and weights")
        need(len(x) == 2 and len(w) == 2 and x[1] == w[1], "needs x[N, K] and w[M, K]")
        _check_requantisation(attrs, inputs, consts, w[0])
        return [TensorType((x[0], w[0]), "int8")]

    @staticmethod
    def kernel(x, w, bias=None, multiplier=None, shifts=None, *, shift, lo=-128, hi=127):
        return requantize(product(x, w.T), bias, shift, lo, hi, multiplier, shifts)

    @staticmethod
    def macs(attrs, inputs, outputs):
        return outputs[0].size * inputs[0].shape[1]


class QBatchMatMul(QDense):
    """A batched integer matrix product of two activations (attention's ``Q @ K^T`` and
    ``P @ V``): ``x`` holds the ``[M, K]`` rows of ``G`` groups stacked, ``[G*M, K]``; ``w`` is
    ``[G, K, N]``; group ``g``'s rows of the output ``[G*M, N]`` are
    ``clip((x_g @ w_g + bias) >> shift, lo, hi)`` as int8 (``bias`` ``[N]``, shared). Its
    record and MAC count are :class:`QDense`'s (its requantisation is the power-of-two one)."""

    name = "QBatchMatMul"
    member = "QBATCH_MATMUL"
    arity = (2, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        x, w = inputs[0].shape, inputs[1].shape
        need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 operands")
        need(len(x) == 2 and len(w) == 3 and x[1] == w[1], "needs x[G*M, K] and w[G, K, N]")
        need(w[0] >= 1 and x[0] % w[0] == 0, f"{x[0]} rows are not {w[0]} groups of rows")
        return [TensorType((x[0], w[2]), "int8")]

    @staticmethod
    def kernel(x, w, bias=None, *, shift, lo=-128, hi=127):
        groups, depth, columns = w.shape
        acc = product(x.reshape(groups, -1, depth), w).reshape(-1, columns)
        return requantize(acc, bias, shift, lo, hi)
