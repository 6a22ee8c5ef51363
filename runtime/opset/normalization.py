"""Normalisations: inference-mode batch normalisation, layer normalisation and softmax."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import (
    AxisAttrs,
    Operator,
    TensorType,
    broadcast,
    f32,
    need,
    resolve_axis,
    same_dtype,
)

__all__ = [
    "BatchNormAttrs",
    "BatchNormalization",
    "LayerNormAttrs",
    "LayerNormalization",
    "Softmax",
]

_F32 = np.float32


@dataclass(frozen=True)
class BatchNormAttrs:
    epsilon: float = 1e-5


class BatchNormalization(Operator):
    """Inference-mode batch normalisation over axis 1 (inputs x, scale, bias, mean,
    variance)."""

    name = "BatchNormalization"
    member = "BATCH_NORM"
    Attrs = BatchNormAttrs
    arity = (5, 5)

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        need(len(x) >= 2, "needs an input of rank >= 2")
        for t in inputs[1:]:
            need(t.shape == (x[1],), f"scale, bias, mean and variance must have shape [{x[1]}]")
        return [TensorType(x, same_dtype(inputs, "float32"))]

    @staticmethod
    def kernel(x, scale, bias, mean, var, *, epsilon):
        shape = (1, -1) + (1,) * (x.ndim - 2)
        factor = f32(scale) / np.sqrt(f32(var) + _F32(epsilon))
        shift = f32(bias) - f32(mean) * factor
        return f32(x) * factor.reshape(shape) + shift.reshape(shape)


class Softmax(Operator):
    """Softmax along ``axis`` alone (ONNX opset 13 semantics)."""

    name = "Softmax"
    member = "SOFTMAX"
    Attrs = AxisAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        resolve_axis(attrs, len(inputs[0].shape))
        same_dtype(inputs, "float32")
        return [inputs[0]]

    @staticmethod
    def kernel(x, *, axis):
        x = f32(x)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


@dataclass(frozen=True)
class LayerNormAttrs:
    """Normalisation over the axes from ``axis`` (non-negative) to the last."""

    axis: int
    epsilon: float = 1e-5


class LayerNormalization(Operator):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` over the axes from ``axis`` on
    (inputs x, scale[, bias], the last two broadcast to those axes), in float32 as
    onnxruntime computes it."""

    name = "LayerNormalization"
    member = "LAYER_NORM"
    Attrs = LayerNormAttrs
    arity = (2, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        axis = resolve_axis(AxisAttrs(attrs.axis), len(x))
        normalised = x[axis:]
        for t in inputs[1:]:
            need(
                len(t.shape) <= len(normalised) and broadcast(t.shape, normalised) == normalised,
                f"scale and bias must broadcast to {list(normalised)}",
            )
        return [TensorType(x, same_dtype(inputs, "float32"))]

    @staticmethod
    def kernel(x, scale, bias=None, *, axis, epsilon):
        x = f32(x)
        axes = tuple(range(axis, x.ndim))
        mean = x.mean(axis=axes, keepdims=True, dtype=_F32)
        centred = x - mean
        var = (centred * centred).mean(axis=axes, keepdims=True, dtype=_F32)
        y = centred / np.sqrt(var + _F32(epsilon)) * f32(scale)
        return y if bias is None else y + f32(bias)
