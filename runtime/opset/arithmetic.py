"""Arithmetic, comparison and logic, elementwise over broadcast operands (numpy's and ONNX's
multidirectional broadcast), and the integer addition of the quantized graph.

Arithmetic keeps its operands' dtype (one dtype for all operands, any of
:data:`~runtime.opset.base.NUMERIC`): floats in their own precision, integers (signed and
unsigned) with two's-complement wrap-around; integer division truncates toward zero (as
onnxruntime and C do), Mod follows the divisor's sign unless ``fmod`` (floats too). Comparisons
give bool; logic takes bool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import (
    DTYPES,
    FLOAT8,
    FLOATS,
    MANY,
    NATIVE,
    NUMERIC,
    Operator,
    Origin,
    TensorType,
    broadcast,
    limits,
    need,
    same_dtype,
)
from runtime.opset.integer import half, requantize

__all__ = [
    "ROUND_MODES",
    "Abs",
    "Add",
    "And",
    "Cast",
    "CastAttrs",
    "Div",
    "Equal",
    "Greater",
    "GreaterOrEqual",
    "Less",
    "LessOrEqual",
    "Max",
    "Min",
    "Mod",
    "ModAttrs",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pow",
    "QAdd",
    "QAddAttrs",
    "Sub",
    "Where",
    "Xor",
    "broadcast_all",
]


def broadcast_all(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The broadcast of every shape in ``shapes``."""
    return functools.reduce(broadcast, shapes, ())


def _same(inputs: Sequence[TensorType], allowed: Sequence[str]) -> TensorType:
    """The broadcast type of ``inputs``, which share one dtype of ``allowed``."""
    dtype = same_dtype(inputs, *allowed)
    return TensorType(broadcast_all([t.shape for t in inputs]), dtype)


class _Arithmetic(Operator):
    """A binary operator whose result has its operands' (shared) dtype."""

    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        return [_same(inputs, NUMERIC)]


def _binary(ufunc: Callable) -> Callable:
    """A kernel applying the binary ``ufunc``, without numpy's overflow warnings (integers
    wrap, as two's complement does)."""

    def kernel(a, b):
        with np.errstate(over="ignore"):
            return ufunc(a, b)

    return kernel


class Add(_Arithmetic):
    name = "Add"
    member = "ADD"
    kernel = staticmethod(_binary(np.add))


class Sub(_Arithmetic):
    name = "Sub"
    member = "SUB"
    kernel = staticmethod(_binary(np.subtract))


class Mul(_Arithmetic):
    name = "Mul"
    member = "MUL"
    kernel = staticmethod(_binary(np.multiply))


class Div(_Arithmetic):
    """Division; of integers, truncating toward zero (a zero divisor gives 0, as no error can
    be raised midway through a model: a typed error is raised where it is a constant)."""

    name = "Div"
    member = "DIV"

    @staticmethod
    def infer(attrs, inputs, consts):
        out = _same(inputs, NUMERIC)
        divisor = consts[1]
        if out.dtype not in FLOATS and divisor is not None:
            need(bool(np.all(divisor != 0)), "divides integers by zero")
        return [out]

    @staticmethod
    def kernel(a, b):
        if a.dtype.kind == "f":
            return np.divide(a, b)
        safe = np.where(b == 0, 1, b).astype(b.dtype)
        if a.dtype.kind == "u":
            return np.where(b == 0, 0, a // safe).astype(a.dtype)
        quotient = np.abs(a.astype(np.int64)) // np.abs(safe.astype(np.int64))
        signed = np.where((a < 0) != (safe < 0), -quotient, quotient)
        return np.where(b == 0, 0, signed).astype(a.dtype)


@dataclass(frozen=True)
class ModAttrs:
    """``fmod``: the remainder takes the dividend's sign (C's fmod), else the divisor's
    (Python's ``%``, of floats too)."""

    fmod: bool = False


class Mod(_Arithmetic):
    name = "Mod"
    member = "MOD"
    Attrs = ModAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        out = _same(inputs, NUMERIC)
        if out.dtype not in FLOATS and consts[1] is not None:
            need(bool(np.all(consts[1] != 0)), "takes integers modulo zero")
        return [out]

    @staticmethod
    def kernel(a, b, *, fmod):
        if a.dtype.kind == "f":
            return np.fmod(a, b) if fmod else np.mod(a, b)
        safe = np.where(b == 0, 1, b).astype(b.dtype)
        rest = np.fmod(a, safe) if fmod else np.mod(a, safe)
        return np.where(b == 0, 0, rest).astype(a.dtype)


class Pow(Operator):
    """``a ** b`` in ``a``'s dtype (a float or a signed integer of 32 or 64 bits); the
    exponent may have any numeric dtype."""

    name = "Pow"
    member = "POW"
    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        base = same_dtype(inputs[:1], *FLOATS, "int32", "int64")
        same_dtype(inputs[1:], *NUMERIC)
        if base not in FLOATS and consts[1] is not None:
            need(bool(np.all(consts[1] >= 0)), "raises integers to negative powers")
        return [TensorType(broadcast(inputs[0].shape, inputs[1].shape), base)]

    @staticmethod
    def kernel(a, b):
        if a.dtype.kind == "f":
            return np.power(a, b.astype(a.dtype)).astype(a.dtype)
        exponent = np.where(b > 0, b, 0).astype(np.int64)
        with np.errstate(over="ignore"):
            return np.power(a.astype(np.int64), exponent).astype(a.dtype)


class _Extreme(Operator):
    """The elementwise extreme of one or more operands, broadcast."""

    arity = (1, MANY)

    @staticmethod
    def infer(attrs, inputs, consts):
        return [_same(inputs, NUMERIC)]


class Max(_Extreme):
    name = "Max"
    member = "MAX"

    @staticmethod
    def kernel(*xs):
        return functools.reduce(np.maximum, xs)


class Min(_Extreme):
    name = "Min"
    member = "MIN"

    @staticmethod
    def kernel(*xs):
        return functools.reduce(np.minimum, xs)


class _Sign(Operator):
    """A numeric operator of one operand, keeping its type."""

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, *NUMERIC)
        return [inputs[0]]


class Neg(_Sign):
    """``-x`` (the most negative integer is its own negation, as in two's complement)."""

    name = "Neg"
    member = "NEG"

    @staticmethod
    def kernel(x):
        return np.negative(x)


class Abs(_Sign):
    """``|x|`` (the most negative integer is its own magnitude, as in two's complement)."""

    name = "Abs"
    member = "ABS"

    @staticmethod
    def kernel(x):
        return np.abs(x)


class _Comparison(Operator):
    """A comparison of two operands of one dtype: bool."""

    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        return [TensorType(_same(inputs, NATIVE).shape, "bool")]


class Equal(_Comparison):
    name = "Equal"
    member = "EQUAL"
    kernel = staticmethod(_binary(np.equal))


class Less(_Comparison):
    name = "Less"
    member = "LESS"
    kernel = staticmethod(_binary(np.less))


class LessOrEqual(_Comparison):
    name = "LessOrEqual"
    member = "LESS_OR_EQUAL"
    kernel = staticmethod(_binary(np.less_equal))


class Greater(_Comparison):
    name = "Greater"
    member = "GREATER"
    kernel = staticmethod(_binary(np.greater))


class GreaterOrEqual(_Comparison):
    name = "GreaterOrEqual"
    member = "GREATER_OR_EQUAL"
    kernel = staticmethod(_binary(np.greater_equal))


class _Logic(Operator):
    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        return [_same(inputs, ("bool",))]


class And(_Logic):
    name = "And"
    member = "AND"
    kernel = staticmethod(_binary(np.logical_and))


class Or(_Logic):
    name = "Or"
    member = "OR"
    kernel = staticmethod(_binary(np.logical_or))


class Xor(_Logic):
    name = "Xor"
    member = "XOR"
    kernel = staticmethod(_binary(np.logical_xor))


class Not(Operator):
    name = "Not"
    member = "NOT"

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "bool")
        return [inputs[0]]

    @staticmethod
    def kernel(x):
        return np.logical_not(x)


class Where(Operator):
    """``x`` where ``condition`` holds, else ``y``; all three broadcast."""

    name = "Where"
    member = "WHERE"
    arity = (3, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs[:1], "bool")
        out = _same(inputs[1:], DTYPES)
        return [TensorType(broadcast(inputs[0].shape, out.shape), out.dtype)]

    @staticmethod
    def kernel(condition, x, y):
        return np.where(condition, x, y)


#: Cast's ``round_mode`` values (how a float rounds to float8_e8m0fnu, a power of two).
ROUND_MODES = ("up", "down", "nearest")


@dataclass(frozen=True)
class CastAttrs:
    """The dtype to convert to; ``saturate`` and ``round_mode`` are ONNX's (see :class:`Cast`)."""

    to: str
    saturate: bool = True
    round_mode: str = "up"


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """``x`` as float8_e8m0fnu (a biased exponent, no sign, no mantissa) as ONNX's reference
    converts it: the float32 exponent of ``|x|``, rounded by the mantissa per ``round_mode``
    ("up": any mantissa, "nearest": its guard bit with the round bit, sticky bits or a normal
    exponent, "down": never); past the largest exponent is NaN unless ``saturate``; NaN and
    infinities are NaN."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exponent == 0xFF
    if round_mode == "up":
        up = (bits & 0x7FFFFF) > 0
    elif round_mode == "nearest":
        guard = (bits & 0x400000) > 0
        up = guard & ((bits & 0x3FFFFF > 0) | (exponent > 0))
    else:
        up = np.zeros(bits.shape, bool)
    up &= ~special
    if saturate:
        up &= exponent != 0xFE
    exponent = np.where(special, 0xFF, exponent + up).astype(np.uint8)
    return exponent.view(np.dtype("float8_e8m0fnu"))


class Cast(Operator):
    """Conversion to ``to`` (any of :data:`~runtime.opset.base.DTYPES`), as numpy's (and
    ml_dtypes') ``astype`` and ONNX's Cast: floats round to nearest (even) in a narrower float
    and overflow to infinity (or NaN, in a type without infinities), floats to integers
    truncate toward zero (a value outside the integer's range, as NaN, is undefined in ONNX),
    integers wrap (int4 and int2 too), anything to bool is "not zero". With ``saturate`` (ONNX's
    default) a value past the range of one of the :data:`~runtime.opset.base.FLOAT8` types
    becomes its largest finite value (of that sign; NaN stays NaN); float8_e8m0fnu rounds per
    ``round_mode`` (one of :data:`ROUND_MODES`; see :func:`_to_e8m0`)."""

    name = "Cast"
    member = "CAST"
    Attrs = CastAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        need(attrs.to in DTYPES, f"cannot cast to {attrs.to!r}")
        need(
            attrs.round_mode in ROUND_MODES,
            f"round_mode {attrs.round_mode!r} is not one of {', '.join(ROUND_MODES)}",
        )
        return [TensorType(inputs[0].shape, attrs.to)]

    @staticmethod
    def kernel(x, *, to, saturate=True, round_mode="up"):
        x = np.asarray(x)
        with np.errstate(invalid="ignore", over="ignore"):
            if to == "float8_e8m0fnu":
                return _to_e8m0(x, bool(saturate), round_mode)
            if saturate and to in FLOAT8:
                x = np.clip(x, *limits(to))
            return x.astype(to)


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
