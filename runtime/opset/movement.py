"""Operators that only move data: they keep their input's dtype (so they move int8 values
too), and Flatten, Reshape and Identity may return their input or a view of it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import (
    DTYPES,
    MANY,
    AxisAttrs,
    Operator,
    TensorType,
    need,
    resolve_axis,
    same_dtype,
)

__all__ = [
    "PAD_MODES",
    "Concat",
    "Flatten",
    "Identity",
    "Pad",
    "PadAttrs",
    "Reshape",
    "ReshapeAttrs",
    "Transpose",
    "TransposeAttrs",
]


def _prod(dims) -> int:
    return int(np.prod(dims, dtype=np.int64))


class Flatten(Operator):
    """To 2-D: the axes before ``axis`` (which may equal the rank) and those from it."""

    name = "Flatten"
    member = "FLATTEN"
    Attrs = AxisAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        axis = resolve_axis(attrs, len(x) + 1)  # ONNX allows 0..rank
        return [TensorType((_prod(x[:axis]), _prod(x[axis:])), inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, axis):
        return x.reshape(_prod(x.shape[:axis]), _prod(x.shape[axis:]))


@dataclass(frozen=True)
class ReshapeAttrs:
    """The target shape, static (``-1`` and ``0`` resolved by the frontend)."""

    shape: tuple[int, ...]


class Reshape(Operator):
    name = "Reshape"
    member = "RESHAPE"
    Attrs = ReshapeAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        size = inputs[0].size
        need(all(d >= 0 for d in attrs.shape), f"target shape {list(attrs.shape)} is not static")
        need(_prod(attrs.shape) == size, f"cannot reshape {size} elements to {list(attrs.shape)}")
        return [TensorType(attrs.shape, inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, shape):
        return x.reshape(tuple(shape))


@dataclass(frozen=True)
class TransposeAttrs:
    perm: tuple[int, ...]


class Transpose(Operator):
    name = "Transpose"
    member = "TRANSPOSE"
    Attrs = TransposeAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        rank = len(x)
        need(sorted(attrs.perm) == list(range(rank)), f"perm {list(attrs.perm)} for rank {rank}")
        return [TensorType(tuple(x[p] for p in attrs.perm), inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, perm):
        return np.ascontiguousarray(x.transpose(tuple(perm)))


class Concat(Operator):
    """The inputs (of one dtype, any) joined along ``axis``."""

    name = "Concat"
    member = "CONCAT"
    Attrs = AxisAttrs
    arity = (1, MANY)

    @staticmethod
    def infer(attrs, inputs, consts):
        first = inputs[0].shape
        axis = resolve_axis(attrs, len(first))
        rest = [d for i, d in enumerate(first) if i != axis]
        for t in inputs[1:]:
            need(
                len(t.shape) == len(first)
                and [d for i, d in enumerate(t.shape) if i != axis] == rest,
                "needs inputs equal in every dimension but the axis",
            )
        shape = list(first)
        shape[axis] = sum(t.shape[axis] for t in inputs)
        return [TensorType(tuple(shape), same_dtype(inputs, *DTYPES))]

    @staticmethod
    def kernel(*xs, axis):
        return np.concatenate(xs, axis=axis)


#: Pad's modes.
PAD_MODES = ("constant", "reflect", "edge", "wrap")


@dataclass(frozen=True)
class PadAttrs:
    """ONNX order: the begin of every axis, then the end of every axis."""

    pads: tuple[int, ...]
    value: float = 0.0
    mode: str = "constant"


class Pad(Operator):
    """ONNX Pad: ``pads`` holds every axis's begin, then every axis's end; negative pads crop.
    ``mode`` is one of :data:`PAD_MODES`: ``constant`` (with ``value``), ``reflect``, ``edge``
    or ``wrap`` (numpy's modes of the same names; negative pads crop first)."""

    name = "Pad"
    member = "PAD"
    Attrs = PadAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        rank = len(x)
        need(len(attrs.pads) == 2 * rank, f"needs {2 * rank} pads for rank {rank}")
        need(attrs.mode in PAD_MODES, f"mode {attrs.mode!r} is not one of {', '.join(PAD_MODES)}")
        shape = tuple(d + attrs.pads[i] + attrs.pads[i + rank] for i, d in enumerate(x))
        need(all(d >= 0 for d in shape), "negative pads remove more than the input has")
        return [TensorType(shape, inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, pads, value, mode):
        rank = x.ndim
        begins, ends = pads[:rank], pads[rank:]
        crop = tuple(
            slice(max(-b, 0), d - max(-e, 0)) for b, e, d in zip(begins, ends, x.shape, strict=True)
        )
        widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
        x = x[crop]
        if mode == "constant":
            return np.pad(x, widths, mode="constant", constant_values=value)
        return np.pad(x, widths, mode=mode)


class Identity(Operator):
    name = "Identity"
    member = "IDENTITY"

    @staticmethod
    def infer(attrs, inputs, consts):
        return [inputs[0]]

    @staticmethod
    def kernel(x):
        return x
