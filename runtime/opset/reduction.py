"""Reductions over axes: ReduceMean, ReduceSum and ReduceMax over any set of axes, and ArgMax
and TopK along one.

Records hold the axes resolved by the frontends (non-negative, ONNX's "no axes" already read
as "every axis" or as no node at all under ``noop_with_empty_axes``). Reductions that have no
value over an empty set (mean, max, argmax) refuse a reduced axis of size 0 in their type
rule, so their kernels never meet one. ONNX's TopK has two outputs, which do not fit the one-output
kernels: its operator computes one of them (its record's ``output``), and the frontends add one
node per output that the model reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import FLOATS, NATIVE, NUMERIC, Operator, TensorType, need, same_dtype

__all__ = [
    "ArgMax",
    "ArgMaxAttrs",
    "ReduceAttrs",
    "ReduceMax",
    "ReduceMean",
    "ReduceSum",
    "TopK",
    "TopKAttrs",
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
    dtypes: tuple[str, ...] = FLOATS
    nonempty = True

    @classmethod
    def infer(cls, attrs, inputs, consts):
        dtype = same_dtype(inputs, *cls.dtypes)
        shape = _reduced_shape(
            inputs[0].shape, tuple(attrs.axes), attrs.keepdims, nonempty=cls.nonempty
        )
        return [TensorType(shape, dtype)]


class ReduceMean(_Reduce):
    """The mean over ``axes`` in the operand's float dtype (float16 summed in float32, as
    numpy does, then rounded)."""

    name = "ReduceMean"
    member = "REDUCE_MEAN"

    @staticmethod
    def kernel(x, *, axes, keepdims):
        mean = np.mean(x, axis=tuple(axes), keepdims=bool(keepdims))
        return np.asarray(mean, x.dtype)


class ReduceSum(_Reduce):
    """The sum over ``axes`` in the operand's dtype (any numeric one; integers wrap as ONNX's
    do); an empty set sums to 0."""

    name = "ReduceSum"
    member = "REDUCE_SUM"
    dtypes = NUMERIC
    nonempty = False

    @staticmethod
    def kernel(x, *, axes, keepdims):
        return np.sum(x, axis=tuple(axes), keepdims=bool(keepdims), dtype=x.dtype)


class ReduceMax(_Reduce):
    """The greatest element over ``axes`` (of any of numpy's dtypes; a NaN wins)."""

    name = "ReduceMax"
    member = "REDUCE_MAX"
    dtypes = NATIVE

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
    """ONNX ArgMax: the int64 index of the greatest element along ``axis`` (of a numeric
    operand); ties resolve to the first index, or to the last with
    ``select_last_index``."""

    name = "ArgMax"
    member = "ARG_MAX"
    Attrs = ArgMaxAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        same_dtype(inputs, *NUMERIC)
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


@dataclass(frozen=True)
class TopKAttrs:
    """The axis (non-negative), how many elements (``k``, at most the axis' size), the largest
    or the smallest ones, whether sorted (ours always are), and which of ONNX's two outputs the
    node computes: ``"values"`` or ``"indices"``."""

    axis: int
    k: int
    largest: bool = True
    sorted: bool = True
    output: str = "values"


#: TopK's outputs, in ONNX's order.
TOPK_OUTPUTS = ("values", "indices")


class TopK(Operator):
    """ONNX TopK, one output of it: the ``k`` largest (or smallest) elements along ``axis`` of
    a numeric operand, greatest (or least) first, as ``output`` says their
    values (the operand's dtype) or their int64 indices along ``axis``. Equal elements come in
    the order of their indices, the lower first (as ONNX defines it), in both directions; the
    result is sorted even where ``sorted`` is false (ONNX leaves that order open). A NaN counts
    as greater than any number."""

    name = "TopK"
    member = "TOP_K"
    Attrs = TopKAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        dtype = same_dtype(inputs, *NUMERIC)
        shape = inputs[0].shape
        need(attrs.output in TOPK_OUTPUTS, f"output {attrs.output!r} is not values or indices")
        need(
            0 <= attrs.axis < len(shape), f"axis {attrs.axis} is out of range for rank {len(shape)}"
        )
        size = shape[attrs.axis]
        need(0 <= attrs.k <= size, f"k {attrs.k} is not in [0, {size}] (axis {attrs.axis})")
        out = tuple(attrs.k if i == attrs.axis else d for i, d in enumerate(shape))
        return [TensorType(out, dtype if attrs.output == "values" else "int64")]

    @staticmethod
    def kernel(x, *, axis, k, largest, sorted, output):
        del sorted  # always sorted: one order that every consumer accepts
        if largest:
            # a stable ascending sort of the reversed axis, read backwards: descending, and
            # equal elements by ascending index (no negation: it would overflow integers)
            size = x.shape[axis]
            order = np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable")
            index = np.flip(size - 1 - order, axis=axis)
        else:
            index = np.argsort(x, axis=axis, kind="stable")
        index = np.take(index, np.arange(k), axis=axis).astype(np.int64)
        if output == "indices":
            return index
        return np.take_along_axis(x, index, axis=axis)
