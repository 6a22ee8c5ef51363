"""The ONNX converters of the indexing, shape and reduction operators: Gather, Slice, Split,
Squeeze, Unsqueeze, Expand, Tile, Shape, Size, Range, ConstantOfShape, ReduceMean, ReduceSum,
ReduceMax, ArgMax and TopK.

Operand lists that are attributes in older opsets and constant inputs in newer ones are read
by one converter per spelling (Slice's bounds from opset 10, Squeeze's and Unsqueeze's axes,
Split's sizes and ReduceSum's axes from 13, ReduceMean's and ReduceMax's axes and Split's
``num_outputs`` from 18, TopK's ``k`` from 10). Every value here has a static shape, so:

- Split is one Slice per output, Squeeze and Unsqueeze a Reshape to the static shape;
- Shape, Size, Range and ConstantOfShape (of constant inputs) are parameters, not nodes (and
  the importer folds the integer arithmetic that follows them, :mod:`compiler.frontend.onnx`);
- ReduceMean over H and W of an NCHW value is GlobalAveragePool (and Flatten without
  ``keepdims``), the operator the accelerator runs; over any other axes it is ReduceMean.

- TopK is one TOP_K node per output (values, indices), each computing its own (the graph keeps
  only those that something reads); ``k`` must be a constant.

Bounds, axes or sizes that do not fit
the input are a :class:`~compiler.errors.GraphError` naming the node; a non-constant operand
that must be constant is an :class:`~compiler.errors.UnsupportedOperator`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import numpy_helper

from compiler.frontend.onnx_node import Converter, OnnxNode, converts
from compiler.graph.ir import DTYPES, AxisAttrs, Op, ReshapeAttrs
from runtime.opset.indexing import ExpandAttrs, GatherAttrs, SliceAttrs, TileAttrs
from runtime.opset.reduction import ArgMaxAttrs, ReduceAttrs, TopKAttrs

__all__: list[str] = []  # importing this module registers the converters


def _ints(n: OnnxNode, index: int, what: str) -> list[int]:
    """The constant integer input ``index`` (``what`` it is) as a list."""
    array = n.const(index, what)
    if array.dtype.kind not in "iu":
        raise n.error(f"needs integer {what}, got {array.dtype}")
    return [int(v) for v in array.reshape(-1)]


def _distinct_axes(n: OnnxNode, axes: Sequence[int], rank: int) -> list[int]:
    """``axes`` resolved against ``rank``, each named once."""
    resolved = [n.axis(int(a), rank) for a in axes]
    if len(set(resolved)) != len(resolved):
        raise n.error(f"axes {list(axes)} name an axis twice")
    return resolved


# ----------------------------------------------------------------------------- Gather
@converts("Gather", emits=[Op.GATHER], attrs=["axis"])
def _gather(n: OnnxNode) -> None:
    axis = n.axis(int(n.attrs.get("axis", 0)), n.rank())
    n.emit(Op.GATHER, n.inputs, GatherAttrs(axis))


# ----------------------------------------------------------------------------- Slice
def _slice_attrs(
    n: OnnxNode,
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> SliceAttrs:
    """ONNX Slice's bounds resolved and clamped per axis of the input."""
    shape = n.shape()
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise n.error(
            f"needs as many starts, ends, axes and steps, got {len(starts)}, {len(ends)}, "
            f"{len(axes)} and {len(steps)}"
        )
    begin, stop, step = [0] * rank, list(shape), [1] * rank
    for axis, s, e, k in zip(_distinct_axes(n, axes, rank), starts, ends, steps, strict=True):
        if k == 0:
            raise n.error(f"axis {axis}: the step is 0")
        size = shape[axis]
        s, e = s + size if s < 0 else s, e + size if e < 0 else e
        if k > 0:
            s, e = min(max(s, 0), size), min(max(e, 0), size)
        else:
            s, e = min(max(s, 0), max(size - 1, 0)), min(max(e, -1), max(size - 1, 0))
        begin[axis], stop[axis], step[axis] = s, e, k
    return SliceAttrs(tuple(begin), tuple(stop), tuple(step))


@converts("Slice", emits=[Op.SLICE], attrs=["starts", "ends", "axes"])
def _slice_v1(n: OnnxNode) -> None:
    axes = n.attrs.get("axes")
    attrs = _slice_attrs(n, list(n.attr("starts")), list(n.attr("ends")), axes, None)
    n.emit(Op.SLICE, n.inputs[:1], attrs)


@converts("Slice", emits=[Op.SLICE], since=10)
def _slice_v10(n: OnnxNode) -> None:
    axes = _ints(n, 3, "the axes") if n.has(3) else None
    steps = _ints(n, 4, "the steps") if n.has(4) else None
    starts, ends = _ints(n, 1, "the starts"), _ints(n, 2, "the ends")
    n.emit(Op.SLICE, n.inputs[:1], _slice_attrs(n, starts, ends, axes, steps))


# ----------------------------------------------------------------------------- Split
def _split(n: OnnxNode, sizes: Sequence[int] | None, parts: int | None) -> None:
    """One Slice per output along ``axis``: of ``sizes``, or ``parts`` parts as equal as
    ONNX makes them (the last one smaller), or as many equal parts as there are outputs."""
    shape = n.shape()
    axis = n.axis(int(n.attrs.get("axis", 0)), len(shape))
    size, outputs = shape[axis], list(n.proto.output)
    if sizes is not None:
        sizes = list(sizes)
        if len(sizes) != len(outputs) or min(sizes, default=0) < 0 or sum(sizes) != size:
            raise n.error(
                f"split {sizes} does not cut axis {axis} of size {size} into {len(outputs)}"
            )
    elif parts is not None:
        chunk = -(-size // parts) if parts > 0 else 0
        if parts != len(outputs) or chunk * (parts - 1) > size:
            raise n.error(
                f"num_outputs {parts} does not cut axis {axis} of size {size} into "
                f"{len(outputs)} outputs"
            )
        sizes = [chunk] * (parts - 1) + [size - chunk * (parts - 1)]
    else:
        if size % len(outputs):
            raise n.error(f"axis {axis} of size {size} does not split into {len(outputs)} parts")
        sizes = [size // len(outputs)] * len(outputs)
    begin = 0
    for k, (output, part) in enumerate(zip(outputs, sizes, strict=True)):
        attrs = SliceAttrs.along(shape, {axis: (begin, begin + part)})
        begin += part
        if k == 0:
            n.emit(Op.SLICE, n.inputs[:1], attrs)
        elif output:
            name = n.builder.fresh(f"{n.name}_{k}")
            n.builder.add(Op.SLICE, n.inputs[:1], attrs, name=name, outputs=[output])


@converts("Split", emits=[Op.SLICE], attrs=["axis", "split"])
def _split_v1(n: OnnxNode) -> None:
    if n.has(1):  # (opset 1 also took the sizes as an input)
        _split(n, _ints(n, 1, "the split"), None)
        return
    split = n.attrs.get("split")
    _split(n, None if split is None else [int(s) for s in split], None)


@converts("Split", emits=[Op.SLICE], attrs=["axis"], since=13)
def _split_v13(n: OnnxNode) -> None:
    _split(n, _ints(n, 1, "the split") if n.has(1) else None, None)


@converts("Split", emits=[Op.SLICE], attrs=["axis", "num_outputs"], since=18)
def _split_v18(n: OnnxNode) -> None:
    if n.has(1):
        _split(n, _ints(n, 1, "the split"), None)
        return
    parts = n.attrs.get("num_outputs")
    _split(n, None, None if parts is None else int(parts))


# ----------------------------------------------------------------------------- Squeeze
def _squeeze(n: OnnxNode, axes: Sequence[int] | None) -> None:
    """A Reshape dropping ``axes`` (every axis of size 1 where None), each of size 1."""
    shape = n.shape()
    if axes is None:
        dropped = [i for i, d in enumerate(shape) if d == 1]
    else:
        dropped = _distinct_axes(n, axes, len(shape))
        wide = [a for a in dropped if shape[a] != 1]
        if wide:
            raise n.error(f"cannot squeeze axis {wide[0]} of size {shape[wide[0]]}")
    target = tuple(d for i, d in enumerate(shape) if i not in dropped)
    n.emit(Op.RESHAPE, n.inputs[:1], ReshapeAttrs(target))


@converts("Squeeze", emits=[Op.RESHAPE], attrs=["axes"])
def _squeeze_v1(n: OnnxNode) -> None:
    axes = n.attrs.get("axes")
    _squeeze(n, None if axes is None else list(axes))


@converts("Squeeze", emits=[Op.RESHAPE], since=13)
def _squeeze_v13(n: OnnxNode) -> None:
    _squeeze(n, _ints(n, 1, "the axes") if n.has(1) else None)


def _unsqueeze(n: OnnxNode, axes: Sequence[int]) -> None:
    """A Reshape inserting axes of size 1 at ``axes`` (of the output)."""
    shape = n.shape()
    rank = len(shape) + len(axes)
    inserted = set(_distinct_axes(n, axes, rank))
    rest = iter(shape)
    target = tuple(1 if i in inserted else next(rest) for i in range(rank))
    n.emit(Op.RESHAPE, n.inputs[:1], ReshapeAttrs(target))


@converts("Unsqueeze", emits=[Op.RESHAPE], attrs=["axes"])
def _unsqueeze_v1(n: OnnxNode) -> None:
    _unsqueeze(n, [int(a) for a in n.attr("axes")])


@converts("Unsqueeze", emits=[Op.RESHAPE], since=13)
def _unsqueeze_v13(n: OnnxNode) -> None:
    _unsqueeze(n, _ints(n, 1, "the axes"))


# ----------------------------------------------------------------------------- Expand, Tile
@converts("Expand", emits=[Op.EXPAND], since=8)
def _expand(n: OnnxNode) -> None:
    source, target = n.shape(), _ints(n, 1, "the shape")
    rank = max(len(source), len(target))
    source_full = (1,) * (rank - len(source)) + tuple(source)
    target_full = (1,) * (rank - len(target)) + tuple(target)
    shape = []
    for s, t in zip(source_full, target_full, strict=True):
        if t < 0 or not (s == t or s == 1 or t == 1):
            raise n.error(f"shape {list(source)} does not expand to {target}")
        shape.append(t if s == 1 else s)
    n.emit(Op.EXPAND, n.inputs[:1], ExpandAttrs(tuple(shape)))


@converts("Tile", emits=[Op.TILE], since=6)
def _tile(n: OnnxNode) -> None:
    repeats = _ints(n, 1, "the repeats")
    if len(repeats) != n.rank() or min(repeats, default=0) < 0:
        raise n.error(f"needs {n.rank()} non-negative repeats, got {repeats}")
    n.emit(Op.TILE, n.inputs[:1], TileAttrs(tuple(repeats)))


# ----------------------------------------------------------------------------- parameters
def _define(n: OnnxNode, array: np.ndarray) -> None:
    """The node's output is the parameter ``array`` (no node)."""
    n.builder.param(n.proto.output[0], array)


@converts("Shape")
def _shape_v1(n: OnnxNode) -> None:
    _define(n, np.array(n.shape(), np.int64))


@converts("Shape", attrs=["start", "end"], since=15)
def _shape_v15(n: OnnxNode) -> None:
    start, end = n.attrs.get("start", 0), n.attrs.get("end")
    _define(n, np.array(n.shape()[slice(int(start), None if end is None else int(end))], np.int64))


@converts("Size")
def _size(n: OnnxNode) -> None:
    _define(n, np.array(int(np.prod(n.shape(), dtype=np.int64)), np.int64))


@converts("Range", since=11)
def _range(n: OnnxNode) -> None:
    arrays = [n.const(i, what) for i, what in enumerate(("the start", "the limit", "the delta"))]
    if any(a.size != 1 for a in arrays) or len({a.dtype for a in arrays}) != 1:
        raise n.error("needs three scalars of one dtype")
    start, limit, delta = (a.reshape(()) for a in arrays)
    if delta == 0:
        raise n.error("the delta is 0")
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    # as ONNX defines it: start + k * delta, computed in the inputs' type
    _define(n, (start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype))


@converts("ConstantOfShape", attrs=["value"], since=9)
def _constant_of_shape(n: OnnxNode) -> None:
    shape = _ints(n, 0, "the shape")
    if min(shape, default=0) < 0:
        raise n.error(f"shape {shape} has a negative dimension")
    value = n.attrs.get("value")
    fill = np.zeros(1, np.float32) if value is None else numpy_helper.to_array(value)
    if fill.size != 1 or str(fill.dtype) not in DTYPES:
        raise n.unsupported(f"needs a one-element value of {', '.join(DTYPES)}, got {fill.dtype}")
    _define(n, np.full(shape, fill.reshape(()), fill.dtype))


# ----------------------------------------------------------------------------- reductions
def _reduce_axes(n: OnnxNode, axes: Sequence[int] | None) -> tuple[int, ...] | None:
    """The reduced axes, sorted: every axis where none are given, None (no reduction: the
    input passes through) where none are given under ``noop_with_empty_axes``."""
    rank = n.rank()
    if not axes:
        return None if n.attrs.get("noop_with_empty_axes", 0) else tuple(range(rank))
    return tuple(sorted(_distinct_axes(n, axes, rank)))


def _reduce(op: Op, n: OnnxNode, axes: Sequence[int] | None) -> str | None:
    resolved = _reduce_axes(n, axes)
    if resolved is None:
        return n.inputs[0]
    keepdims = bool(n.attrs.get("keepdims", 1))
    if op is Op.REDUCE_MEAN and n.rank() == 4 and resolved == (2, 3):
        # the mean over H and W of NCHW (how ``torch.onnx.export`` writes adaptive average
        # pooling to 1x1) is the global average pool the accelerator runs
        if keepdims:
            n.emit(Op.GLOBAL_AVERAGE_POOL, n.inputs[:1])
            return None
        pooled = n.builder.add1(
            Op.GLOBAL_AVERAGE_POOL, n.inputs[:1], name=n.builder.fresh(f"{n.name}_pool")
        )
        n.emit(Op.FLATTEN, [pooled], AxisAttrs(1))
        return None
    n.emit(op, n.inputs[:1], ReduceAttrs(resolved, keepdims))
    return None


def _reduce_by_attribute(op: Op) -> Converter:
    def convert(n: OnnxNode) -> str | None:
        axes = n.attrs.get("axes")
        return _reduce(op, n, None if axes is None else [int(a) for a in axes])

    return convert


def _reduce_by_input(op: Op) -> Converter:
    def convert(n: OnnxNode) -> str | None:
        return _reduce(op, n, _ints(n, 1, "the axes") if n.has(1) else None)

    return convert


_REDUCE_ATTRS = ["axes", "keepdims", "noop_with_empty_axes"]
_MEAN_EMITS = [Op.REDUCE_MEAN, Op.GLOBAL_AVERAGE_POOL, Op.FLATTEN]
for _op, _emits, _since in (
    (Op.REDUCE_MEAN, _MEAN_EMITS, 18),
    (Op.REDUCE_SUM, [Op.REDUCE_SUM], 13),
    (Op.REDUCE_MAX, [Op.REDUCE_MAX], 18),
):
    converts(_op.value, emits=_emits, attrs=_REDUCE_ATTRS)(_reduce_by_attribute(_op))
    converts(_op.value, emits=_emits, attrs=_REDUCE_ATTRS[1:], since=_since)(_reduce_by_input(_op))


@converts("ArgMax", emits=[Op.ARG_MAX], attrs=["axis", "keepdims", "select_last_index"])
def _arg_max(n: OnnxNode) -> None:
    attrs = ArgMaxAttrs(
        n.axis(int(n.attrs.get("axis", 0)), n.rank()),
        bool(n.attrs.get("keepdims", 1)),
        bool(n.attrs.get("select_last_index", 0)),
    )
    n.emit(Op.ARG_MAX, n.inputs, attrs)


# ----------------------------------------------------------------------------- TopK
def _top_k(n: OnnxNode, k: int) -> None:
    """One TOP_K node per output that the node names: the values (its first output) and the
    int64 indices (its second); the graph keeps those that something reads."""
    shape = n.shape()
    axis = n.axis(int(n.attrs.get("axis", -1)), len(shape))
    if not 0 <= k <= shape[axis]:
        raise n.error(f"k {k} is not in [0, {shape[axis]}] (axis {axis} of shape {list(shape)})")
    largest, ordered = bool(n.attrs.get("largest", 1)), bool(n.attrs.get("sorted", 1))
    outputs = list(n.proto.output)
    if outputs[0]:
        n.emit(Op.TOP_K, n.inputs[:1], TopKAttrs(axis, k, largest, ordered, "values"))
    if len(outputs) > 1 and outputs[1]:
        attrs = TopKAttrs(axis, k, largest, ordered, "indices")
        name = n.builder.fresh(f"{n.name}_indices")
        n.builder.add(Op.TOP_K, n.inputs[:1], attrs, name=name, outputs=[outputs[1]])


@converts("TopK", emits=[Op.TOP_K], attrs=["axis", "k"])
def _top_k_v1(n: OnnxNode) -> None:
    _top_k(n, int(n.attr("k")))


@converts("TopK", emits=[Op.TOP_K], attrs=["axis"], since=10)
def _top_k_v10(n: OnnxNode) -> None:
    _top_k(n, _top_k_count(n))


@converts("TopK", emits=[Op.TOP_K], attrs=["axis", "largest", "sorted"], since=11)
def _top_k_v11(n: OnnxNode) -> None:
    _top_k(n, _top_k_count(n))


def _top_k_count(n: OnnxNode) -> int:
    """``k``, the constant one-element input 1."""
    k = _ints(n, 1, "k")
    if len(k) != 1:
        raise n.error(f"needs one k, got {len(k)}")
    return k[0]
