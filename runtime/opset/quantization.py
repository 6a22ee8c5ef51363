"""QuantizeLinear and DequantizeLinear, per tensor, as ONNX defines them, between float32 and
the 8- and 16-bit integers (the quantize pass uses int8) and, where ml_dtypes is installed,
the 4- and 2-bit integers and the float8 and float4 types."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import (
    FLOAT8,
    NARROW_FLOATS,
    NARROW_INTEGERS,
    Operator,
    TensorType,
    limits,
    need,
    same_dtype,
)

__all__ = ["QUANTIZED", "QUANTIZED_FLOATS", "DequantizeLinear", "QuantAttrs", "QuantizeLinear"]

_F32 = np.float32

#: The quantized float types (empty without ml_dtypes): their zero point is 0.
QUANTIZED_FLOATS = tuple(d for d in (*FLOAT8, "float4_e2m1fn") if d in NARROW_FLOATS)
#: The quantized dtypes.
QUANTIZED = ("int8", "uint8", "int16", "uint16", *NARROW_INTEGERS, *QUANTIZED_FLOATS)


@dataclass(frozen=True)
class QuantAttrs:
    """QuantizeLinear / DequantizeLinear, per tensor: ``q = clip(round(x / scale) +
    zero_point)`` in ``dtype``'s range (one of :data:`QUANTIZED`; a float type's zero point is
    0); the quantize pass uses int8, power-of-two scales and zero points of 0."""

    scale: float
    zero_point: int = 0
    dtype: str = "int8"


def _check_scale(attrs: QuantAttrs) -> None:
    """Refuse a scale that is not positive, and a float type's zero point other than 0."""
    need(attrs.scale > 0, f"scale {attrs.scale} must be positive")
    need(
        attrs.dtype not in QUANTIZED_FLOATS or attrs.zero_point == 0,
        f"the zero point of {attrs.dtype} is 0, not {attrs.zero_point}",
    )


class QuantizeLinear(Operator):
    """``saturate(round(x / scale) + zero_point)`` in ``dtype``, rounding half to even and
    dividing in float32 (as onnxruntime does); to a float type, ``x / scale`` rounded to it
    (to nearest even) after saturating to its largest finite value (ONNX's ``saturate``, its
    default; NaN stays NaN)."""

    name = "QuantizeLinear"
    member = "QUANTIZE"
    Attrs = QuantAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "float32")
        need(attrs.dtype in QUANTIZED, f"quantizes to {', '.join(QUANTIZED)}, not {attrs.dtype}")
        _check_scale(attrs)
        return [TensorType(inputs[0].shape, attrs.dtype)]

    @staticmethod
    def kernel(x, *, scale, zero_point, dtype):
        q = np.asarray(x, _F32) / _F32(scale)
        if dtype not in QUANTIZED_FLOATS:
            q = np.rint(q) + zero_point
        return np.clip(q, *limits(dtype)).astype(dtype)


class DequantizeLinear(Operator):
    """``(x - zero_point) * scale`` in float32 (the difference in int32); ``dtype`` is the
    quantized input's."""

    name = "DequantizeLinear"
    member = "DEQUANTIZE"
    Attrs = QuantAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        need(
            inputs[0].dtype == attrs.dtype and attrs.dtype in (*QUANTIZED, "int32"),
            f"needs an {attrs.dtype} input, of {', '.join(QUANTIZED)} or int32",
        )
        _check_scale(attrs)
        return [TensorType(inputs[0].shape, "float32")]

    @staticmethod
    def kernel(x, *, scale, zero_point, dtype):
        if dtype in QUANTIZED_FLOATS:
            return x.astype(_F32) * _F32(scale)
        return (x.astype(np.int32) - zero_point).astype(_F32) * _F32(scale)
