"""QuantizeLinear and DequantizeLinear, per tensor, as ONNX defines them, between float32 and
the 8- and 16-bit integers (the quantize pass uses int8)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, TensorType, need, same_dtype

__all__ = ["QUANTIZED", "DequantizeLinear", "QuantAttrs", "QuantizeLinear"]

_F32 = np.float32

#: The quantized dtypes.
QUANTIZED = ("int8", "uint8", "int16", "uint16")


@dataclass(frozen=True)
class QuantAttrs:
    """QuantizeLinear / DequantizeLinear, per tensor: ``q = clip(round(x / scale) +
    zero_point)`` in ``dtype``'s range (one of :data:`QUANTIZED`); the quantize pass uses int8,
    power-of-two scales and zero points of 0."""

    scale: float
    zero_point: int = 0
    dtype: str = "int8"


class QuantizeLinear(Operator):
    """``saturate(round(x / scale) + zero_point)`` in ``dtype``, rounding half to even and
    dividing in float32 (as onnxruntime does)."""

    name = "QuantizeLinear"
    member = "QUANTIZE"
    Attrs = QuantAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "float32")
        need(attrs.dtype in QUANTIZED, f"quantizes to {', '.join(QUANTIZED)}, not {attrs.dtype}")
        need(attrs.scale > 0, f"scale {attrs.scale} must be positive")
        return [TensorType(inputs[0].shape, attrs.dtype)]

    @staticmethod
    def kernel(x, *, scale, zero_point, dtype):
        info = np.iinfo(dtype)
        q = np.rint(np.asarray(x, _F32) / _F32(scale)) + zero_point
        return np.clip(q, info.min, info.max).astype(dtype)


class DequantizeLinear(Operator):
    """``(x - zero_point) * scale`` in float32; ``dtype`` is the quantized input's."""

    name = "DequantizeLinear"
    member = "DEQUANTIZE"
    Attrs = QuantAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        need(
            inputs[0].dtype == attrs.dtype and attrs.dtype in (*QUANTIZED, "int32"),
            f"needs an {attrs.dtype} input, of {', '.join(QUANTIZED)} or int32",
        )
        need(attrs.scale > 0, f"scale {attrs.scale} must be positive")
        return [TensorType(inputs[0].shape, "float32")]

    @staticmethod
    def kernel(x, *, scale, zero_point, dtype):
        del dtype  # the input's own
        return (x.astype(np.int32) - zero_point).astype(_F32) * _F32(scale)
