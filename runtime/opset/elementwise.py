"""Elementwise operators of one float operand: activations and the math functions.

They keep their operand's shape and dtype (any of :data:`~runtime.opset.base.FLOATS`); the
kernels compute in that dtype where numpy does, and in float64 rounded once to it where a
function has no other form here (the error function). Clip takes integers too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import FLOATS, NUMERIC, Operator, floating, same_dtype

__all__ = [
    "Ceil",
    "Clip",
    "ClipAttrs",
    "Erf",
    "Exp",
    "Floor",
    "LeakyRelu",
    "LeakyReluAttrs",
    "Log",
    "Reciprocal",
    "Relu",
    "Sigmoid",
    "Sqrt",
    "Tanh",
    "erf",
]


class _Unary(Operator):
    """A float operator of one operand, keeping its shape and dtype."""

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, *FLOATS)
        return [inputs[0]]


class Relu(_Unary):
    name = "Relu"
    member = "RELU"

    @staticmethod
    def kernel(x):
        x = floating(x)
        return np.maximum(x, x.dtype.type(0))


@dataclass(frozen=True)
class ClipAttrs:
    lo: float
    hi: float


class Clip(Operator):
    """``min(max(x, lo), hi)`` in ``x``'s dtype (a float or an integer; bounds past an
    integer's range are its extremes): with ``lo > hi`` every value becomes ``hi`` (as in
    ONNX)."""

    name = "Clip"
    member = "CLIP"
    Attrs = ClipAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, *NUMERIC)
        return [inputs[0]]

    @staticmethod
    def kernel(x, *, lo, hi):
        x = np.asarray(x)
        if x.dtype.kind == "f":
            lo, hi = x.dtype.type(lo), x.dtype.type(hi)
        else:
            info = np.iinfo(x.dtype)
            lo, hi = (x.dtype.type(min(max(v, info.min), info.max)) for v in (lo, hi))
        return np.minimum(np.maximum(x, lo), hi)


@dataclass(frozen=True)
class LeakyReluAttrs:
    alpha: float = 0.01


class LeakyRelu(_Unary):
    name = "LeakyRelu"
    member = "LEAKY_RELU"
    Attrs = LeakyReluAttrs

    @staticmethod
    def kernel(x, *, alpha):
        x = floating(x)
        return np.where(x >= 0, x, x * x.dtype.type(alpha))


class Sigmoid(_Unary):
    """The logistic function, computed without overflow for inputs of either sign."""

    name = "Sigmoid"
    member = "SIGMOID"

    @staticmethod
    def kernel(x):
        x = floating(x)
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def erf(x: np.ndarray) -> np.ndarray:
    """The error function in float64, to about 1e-7 relative everywhere: its Maclaurin series
    below 0.5 in magnitude, and above it ``1 - erfc`` with the Chebyshev-fitted ``erfc`` of
    Numerical Recipes (fractional error below 1.2e-7); numpy has no erf of its own."""
    x = np.asarray(x, np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = 0.17087277
    for c in (
        -0.82215223,
        1.48851587,
        -1.13520398,
        0.27886807,
        -0.18628806,
        0.09678418,
        0.37409196,
        1.00002368,
        -1.26551223,
    ):
        poly = c + t * poly
    tail = 1.0 - t * np.exp(-z * z + poly)
    small = np.minimum(z, 0.5)
    square, term, series = small * small, small, small
    for k in range(1, 12):
        term = -term * square / k
        series = series + term / (2 * k + 1)
    near = series * (2.0 / np.sqrt(np.pi))
    return np.sign(x) * np.where(z < 0.5, near, tail)


def _unary(name: str, member: str, function, doc: str) -> type[Operator]:
    """A float operator ``function`` of one operand, registered as ``name``."""

    def kernel(x):
        x = floating(x)
        return np.asarray(function(x), x.dtype)

    return type(
        name,
        (_Unary,),
        {
            "__doc__": doc,
            "__module__": __name__,
            "name": name,
            "member": member,
            "kernel": staticmethod(kernel),
        },
    )


Tanh = _unary("Tanh", "TANH", np.tanh, "The hyperbolic tangent.")
Exp = _unary("Exp", "EXP", np.exp, "``e ** x``.")
Log = _unary("Log", "LOG", np.log, "The natural logarithm (``-inf`` at 0, NaN below).")
Sqrt = _unary("Sqrt", "SQRT", np.sqrt, "The square root (NaN below 0).")
Reciprocal = _unary("Reciprocal", "RECIPROCAL", np.reciprocal, "``1 / x``.")
Erf = _unary("Erf", "ERF", erf, "The error function (:func:`erf`).")
Floor = _unary("Floor", "FLOOR", np.floor, "Rounding toward minus infinity.")
Ceil = _unary("Ceil", "CEIL", np.ceil, "Rounding toward plus infinity.")
