"""Reductions over axes: ReduceMean, ReduceSum and ReduceMax over any set of axes, and ArgMax
along one.

Records hold the axes resolved by the frontends (non-negative, ONNX's "no axes" already read
as "every axis" or as no node at all under ``noop_with_empty_axes``). Reductions that have no
value over an empty set (mean, max, argmax) refuse a reduced axis of size 0 in their type
rule, so their kernels never meet one. ONNX's TopK has no operator here (its two outputs do
not fit the one-output kernels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, TensorType, need, same_dtype

__all__ = [
    "ArgMax",
    "ArgMaxAttrs",
    "ReduceAttrs",
    "ReduceMax",
    "ReduceMean",
    "ReduceSum",
]


@dataclass(frozen=True)
class ReduceAttrs:
    """The axes reduced (non-negative, distinct; empty: none, the input passes through) and
    whether they stay as axes of size 1 (``keepdims``) or are dropped."""

    axes: tuple[int, ...]
    keepdims: bool = True


def _reduced_shape(
    shape: Sequence[int], axes: Sequence[int], keepdims: bool, *, nonempty: bool
) -> tuple[int, ...]:
    """The shape of a reduction of ``shape`` over ``axes`` (checked)."""
    rank = len(shape)
    need(
        all(0 <= a < rank for a in axes) and len(set(axes)) == len(axes),
        f"axes {list(axes)} are not distinct axes of rank {rank}",
    )
    if nonempty:
        empty = [a for a in axes if shape[a] == 0]
        need(not empty, f"reduces axis {empty[0] if empty else 0} of size 0, which has no value")
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class _Reduce(Operator):
    """A reduction of one operand over ``axes``, of the dtypes ``dtypes``."""

    Attrs = ReduceAttrs
    dtypes: tuple[str, ...] = ("float32",)
    nonempty = True

    @classmethod
    def infer(cls, attrs, inputs, consts):
        dtype = same_dtype(inputs, *cls.dtypes)
        shape = _reduced_shape(
            inputs[0].shape, tuple(attrs.axes), attrs.keepdims, nonempty=cls.nonempty
        )
        return [TensorType(shape, dtype)]


class ReduceMean(_Reduce):
    """The float32 mean over ``axes``."""

    name = "ReduceMean"
    member = "REDUCE_MEAN"

    @staticmethod
    def kernel(x, *, axes, keepdims):
        x = np.asarray(x, np.float32)
        return np.mean(x, axis=tuple(axes), keepdims=bool(keepdims), dtype=np.float32)


class ReduceSum(_Reduce):
    """The sum over ``axes`` in the operand's dtype (float32, int32 or int64; integers wrap
    as ONNX's do); an empty set sums to 0."""

    name = "ReduceSum"
    member = "REDUCE_SUM"
    dtypes = ("float32", "int32", "int64")
    nonempty = False

    @staticmethod
    def kernel(x, *, axes, keepdims):
        return np.sum(x, axis=tuple(axes), keepdims=bool(keepdims), dtype=x.dtype)


class ReduceMax(_Reduce):
    """The greatest element over ``axes`` (of any dtype but int8's neighbours: float32,
    int8, int32, int64 or bool; a NaN wins)."""

    name = "ReduceMax"
    member = "REDUCE_MAX"
    dtypes = ("float32", "int8", "int32", "int64", "bool")

    @staticmethod
    def kernel(x, *, axes, keepdims):
        axes = tuple(axes)
        if not axes:  # numpy's max over no axes is the input itself, as ours
            return x
        return np.max(x, axis=axes, keepdims=bool(keepdims))


@dataclass(frozen=True)
class ArgMaxAttrs:
    """The axis (non-negative), whether it stays as an axis of size 1, and whether ties go to
    the last index rather than the first."""

    axis: int
    keepdims: bool = True
    select_last_index: bool = False


class ArgMax(Operator):
    """ONNX ArgMax: the int64 index of the greatest element along ``axis`` (of float32, int8,
    int32 or int64 operands); ties resolve to the first index, or to the last with
    ``select_last_index``."""

    name = "ArgMax"
    member = "ARG_MAX"
    Attrs = ArgMaxAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, "float32", "int8", "int32", "int64")
        shape = _reduced_shape(inputs[0].shape, (attrs.axis,), attrs.keepdims, nonempty=True)
        return [TensorType(shape, "int64")]

    @staticmethod
    def kernel(x, *, axis, keepdims, select_last_index):
        if select_last_index:
            flipped = np.flip(x, axis=axis)
            index = x.shape[axis] - 1 - np.argmax(flipped, axis=axis, keepdims=bool(keepdims))
        else:
            index = np.argmax(x, axis=axis, keepdims=bool(keepdims))
        return np.asarray(index, np.int64)
