"""Operators that select or repeat data by index: Gather, Slice, Expand and Tile.

They keep their data input's dtype (any of :data:`~runtime.opset.base.DTYPES`). The other
ONNX indexing and shape operators need no operator of their own: the frontends read Split as
one Slice per output, Squeeze and Unsqueeze as a Reshape to the static shape, and fold Shape,
Size, Range and ConstantOfShape (whose results follow from static shapes and constants) to
parameters.

Records hold what the frontends resolved against the static shapes: non-negative axes,
per-axis slice bounds already clamped, the output shape of an Expand. Type rules reject every
operand the kernel could not compute, so a kernel raises nothing untyped; the one thing only
a run can see, a Gather index out of range in a computed (not constant) index tensor, is an
:class:`~runtime.opset.base.OperatorError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, OperatorError, TensorType, need

__all__ = [
    "Expand",
    "ExpandAttrs",
    "Gather",
    "GatherAttrs",
    "Slice",
    "SliceAttrs",
    "Tile",
    "TileAttrs",
    "slice_length",
]

_INDEX_DTYPES = ("int32", "int64")


# ----------------------------------------------------------------------------- Gather
@dataclass(frozen=True)
class GatherAttrs:
    """The axis of the data that the indices select along, non-negative."""

    axis: int = 0


def _out_of_range(indices: np.ndarray, axis: int, size: int) -> str | None:
    """What is wrong with the first entry of ``indices`` outside ``[-size, size)`` (None
    where there is none)."""
    bad = indices[(indices < -size) | (indices >= size)]
    if bad.size == 0:
        return None
    return f"index {int(bad[0])} is out of range for axis {axis} of size {size}"


class Gather(Operator):
    """ONNX Gather: ``out[i..., j..., k...] = data[i..., indices[j...], k...]`` along
    ``axis``; an index may be negative (counted from the end, ``-size <= index < size``). The
    output's shape is the data's with the axis replaced by the indices' shape (a scalar index
    drops the axis). Indices out of range are an :class:`OperandError` where the indices are a
    constant and an :class:`OperatorError` at run time otherwise (never clipped)."""

    name = "Gather"
    member = "GATHER"
    Attrs = GatherAttrs
    arity = (2, 2)

    @staticmethod
    def infer(attrs, inputs, consts):
        data, indices = inputs
        rank = len(data.shape)
        need(rank >= 1, "needs data of rank >= 1")
        need(0 <= attrs.axis < rank, f"axis {attrs.axis} is out of range for rank {rank}")
        need(indices.dtype in _INDEX_DTYPES, f"needs int32 or int64 indices, got {indices.dtype}")
        axis = attrs.axis
        if consts[1] is not None:
            complaint = _out_of_range(consts[1], axis, data.shape[axis])
            need(complaint is None, str(complaint))
        shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])
        return [TensorType(shape, data.dtype)]

    @staticmethod
    def kernel(data, indices, *, axis):
        indices = np.asarray(indices)
        complaint = _out_of_range(indices, axis, data.shape[axis])
        if complaint is not None:
            raise OperatorError(f"Gather: {complaint}")
        try:
            return np.take(data, indices.astype(np.int64), axis=axis, mode="raise")
        except IndexError as err:  # (the check above makes this unreachable)
            raise OperatorError(f"Gather: {err}") from None


# ----------------------------------------------------------------------------- Slice
@dataclass(frozen=True)
class SliceAttrs:
    """One (start, stop, step) per axis of the input, resolved and clamped as ONNX's Slice
    does: with a positive step ``0 <= start, stop <= size``; with a negative step
    ``0 <= start <= size - 1`` and ``-1 <= stop <= size - 1``, where a stop of ``-1`` means
    "through index 0" (not "the last element", as a Python slice would read it)."""

    starts: tuple[int, ...]
    stops: tuple[int, ...]
    steps: tuple[int, ...]

    @classmethod
    def along(cls, shape: Sequence[int], bounds: Mapping[int, tuple[int, int]]) -> SliceAttrs:
        """The record taking ``start:stop`` (step 1) along each axis of ``bounds``, every
        other axis of ``shape`` whole."""
        starts, stops = [0] * len(shape), list(shape)
        for axis, (start, stop) in bounds.items():
            starts[axis], stops[axis] = start, stop
        return cls(tuple(starts), tuple(stops), (1,) * len(shape))


def _slice(start: int, stop: int, step: int) -> slice:
    """The Python slice of a resolved (start, stop, step)."""
    return slice(start, None if stop < 0 else stop, step)


def slice_length(size: int, start: int, stop: int, step: int) -> int:
    """How many elements a resolved (start, stop, step) selects from an axis of ``size``."""
    return len(range(size)[_slice(start, stop, step)])


class Slice(Operator):
    """The elements ``start, start + step, ...`` before ``stop`` of every axis (a negative
    step walks backwards), the bounds resolved per axis in the record (:class:`SliceAttrs`)."""

    name = "Slice"
    member = "SLICE"
    Attrs = SliceAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        rank = len(x)
        need(
            len(attrs.starts) == len(attrs.stops) == len(attrs.steps) == rank,
            f"needs one start, stop and step per axis ({rank}), got {len(attrs.starts)}, "
            f"{len(attrs.stops)} and {len(attrs.steps)}",
        )
        shape = []
        for axis, (size, start, stop, step) in enumerate(
            zip(x, attrs.starts, attrs.stops, attrs.steps, strict=True)
        ):
            need(step != 0, f"axis {axis}: the step is 0")
            if step > 0:
                ok = 0 <= start <= size and 0 <= stop <= size
            else:
                ok = 0 <= start <= max(size - 1, 0) and -1 <= stop <= max(size - 1, 0)
            need(ok, f"axis {axis} of size {size}: bounds ({start}, {stop}, {step}) unresolved")
            shape.append(slice_length(size, start, stop, step))
        return [TensorType(tuple(shape), inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, starts, stops, steps):
        index = tuple(_slice(*bounds) for bounds in zip(starts, stops, steps, strict=True))
        return x[index]


# ----------------------------------------------------------------------------- Expand, Tile
@dataclass(frozen=True)
class ExpandAttrs:
    """The output shape: the input's broadcast (numpy's rule) to ONNX Expand's target shape,
    resolved by the frontend."""

    shape: tuple[int, ...]


class Expand(Operator):
    """The input broadcast to ``shape`` (which the input must broadcast to unchanged)."""

    name = "Expand"
    member = "EXPAND"
    Attrs = ExpandAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x, shape = inputs[0].shape, tuple(attrs.shape)
        need(all(d >= 0 for d in shape), f"target shape {list(shape)} has a negative dimension")
        need(len(x) <= len(shape), f"cannot broadcast rank {len(x)} to {list(shape)}")
        fits = all(d in (1, t) for d, t in zip(reversed(x), reversed(shape), strict=False))
        need(fits, f"shape {list(x)} does not broadcast to {list(shape)}")
        return [TensorType(shape, inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, shape):
        return np.ascontiguousarray(np.broadcast_to(x, tuple(shape)))


@dataclass(frozen=True)
class TileAttrs:
    """How many times each axis repeats (one non-negative count per axis)."""

    repeats: tuple[int, ...]


class Tile(Operator):
    """ONNX Tile: the input repeated ``repeats[i]`` times along axis ``i``."""

    name = "Tile"
    member = "TILE"
    Attrs = TileAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x, repeats = inputs[0].shape, tuple(attrs.repeats)
        need(len(repeats) == len(x), f"needs {len(x)} repeats, got {list(repeats)}")
        need(all(r >= 0 for r in repeats), f"repeats {list(repeats)} has a negative count")
        return [TensorType(tuple(d * r for d, r in zip(x, repeats, strict=True)), inputs[0].dtype)]

    @staticmethod
    def kernel(x, *, repeats):
        return np.tile(x, tuple(repeats))
