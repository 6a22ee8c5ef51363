"""Elementwise operators: float arithmetic and activations, and the integer addition.

Binary operators broadcast their operands as numpy (and ONNX's multidirectional broadcast) do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, Origin, TensorType, broadcast, need, same_dtype
from runtime.opset.integer import half, requantize

__all__ = [
    "Add",
    "Clip",
    "ClipAttrs",
    "LeakyRelu",
    "LeakyReluAttrs",
    "Mul",
    "QAdd",
    "QAddAttrs",
    "Relu",
    "Sigmoid",
    "Sub",
]

_F32 = np.float32


def _f32(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=_F32)


class _Binary(Operator):
    """A float operator of two operands, broadcast."""

    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        shape = broadcast(inputs[0].shape, inputs[1].shape)
        return [TensorType(shape, same_dtype(inputs, "float32"))]


class _Unary(Operator):
    """A float operator of one operand, keeping its shape."""

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "float32")
        return [inputs[0]]


class Add(_Binary):
    name = "Add"
    member = "ADD"

    @staticmethod
    def kernel(a, b):
        return np.add(_f32(a), _f32(b))


class Sub(_Binary):
    name = "Sub"
    member = "SUB"

    @staticmethod
    def kernel(a, b):
        return np.subtract(_f32(a), _f32(b))


class Mul(_Binary):
    name = "Mul"
    member = "MUL"

    @staticmethod
    def kernel(a, b):
        return np.multiply(_f32(a), _f32(b))


class Relu(_Unary):
    name = "Relu"
    member = "RELU"

    @staticmethod
    def kernel(x):
        return np.maximum(_f32(x), _F32(0))


@dataclass(frozen=True)
class ClipAttrs:
    lo: float
    hi: float


class Clip(_Unary):
    """``min(max(x, lo), hi)``: with ``lo > hi`` every value becomes ``hi`` (as in ONNX)."""

    name = "Clip"
    member = "CLIP"
    Attrs = ClipAttrs

    @staticmethod
    def kernel(x, *, lo, hi):
        return np.minimum(np.maximum(_f32(x), _F32(lo)), _F32(hi))


@dataclass(frozen=True)
class LeakyReluAttrs:
    alpha: float = 0.01


class LeakyRelu(_Unary):
    name = "LeakyRelu"
    member = "LEAKY_RELU"
    Attrs = LeakyReluAttrs

    @staticmethod
    def kernel(x, *, alpha):
        x = _f32(x)
        return np.where(x >= 0, x, x * _F32(alpha))


class Sigmoid(_Unary):
    """The logistic function, computed without overflow for inputs of either sign."""

    name = "Sigmoid"
    member = "SIGMOID"

    @staticmethod
    def kernel(x):
        x = _f32(x)
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@dataclass(frozen=True)
class QAddAttrs:
    """Integer addition ``clip(((a << a_shift) + (b << b_shift) + 2**(shift-1)) >> shift,
    lo, hi)``: the shift rounds to nearest."""

    a_shift: int
    b_shift: int
    shift: int
    lo: int = -128
    hi: int = 127


class QAdd(Operator):
    """``clip(((a << a_shift) + (b << b_shift) + 2**(shift-1)) >> shift, lo, hi)`` as int8:
    the shift rounds to nearest."""

    name = "QAdd"
    member = "QADD"
    origin = Origin.QUANTIZED
    Attrs = QAddAttrs
    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 operands")
        need(inputs[0].shape == inputs[1].shape, "needs operands of one shape")
        return [inputs[0]]

    @staticmethod
    def kernel(a, b, *, a_shift, b_shift, shift, lo=-128, hi=127):
        total = (a.astype(np.int64) << a_shift) + (b.astype(np.int64) << b_shift) + half(shift)
        return requantize(total, None, shift, lo, hi)
