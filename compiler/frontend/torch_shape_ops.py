"""The aten converters of the indexing, shape and reduction operators, as ``torch.export``
writes them (before decompositions):

- ``embedding`` -> GATHER along axis 0 of the weight; ``index_select`` -> GATHER;
  ``select.int`` -> GATHER of a scalar constant index (the axis is dropped);
- ``slice.Tensor`` -> SLICE; ``split.Tensor``, ``split_with_sizes`` and ``chunk`` -> one SLICE
  per part (they return lists; the importer hands each ``getitem`` its part);
- ``squeeze`` (every overload) and ``unsqueeze`` -> RESHAPE to the static shape; ``expand`` ->
  EXPAND; ``repeat`` -> TILE (after a RESHAPE adding leading axes where ``repeats`` is longer
  than the rank); ``contiguous`` -> nothing (the value is aliased);
- ``mean``, ``sum``, ``amax`` -> REDUCE_MEAN/REDUCE_SUM/REDUCE_MAX (the mean over H and W of an
  NCHW value -> GLOBAL_AVERAGE_POOL, and FLATTEN without ``keepdim``, as the ONNX frontend
  reads ``torch.onnx``'s export of it); ``argmax`` -> ARG_MAX (of the input flattened by a RESHAPE,
  and a RESHAPE to torch's shape under ``keepdim``, where no ``dim`` is given);
- ``topk`` -> two TOP_K nodes, the values and the indices (it returns both; the importer hands
  each ``getitem`` its part, and the graph keeps those that something reads).

A ``dtype`` argument, a slice step that is not positive and a sum that torch would widen to
int64 (of int8, int32 or bool values) are :class:`~compiler.errors.UnsupportedOperator`\\ s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import fx

from compiler.frontend.torch_node import (
    Converter,
    TorchImport,
    converts,
    meta_type,
    norm_axis,
    unsupported,
)
from compiler.graph.ir import AxisAttrs, Op, ReshapeAttrs
from runtime.opset.indexing import ExpandAttrs, GatherAttrs, SliceAttrs, TileAttrs
from runtime.opset.reduction import ArgMaxAttrs, ReduceAttrs, TopKAttrs

__all__: list[str] = []  # importing this module registers the converters


def _shape(imp: TorchImport, arg: Any) -> tuple[int, ...]:
    return imp.builder.type_of(imp.value(arg)).shape


def _axes(dims: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """aten's ``dim`` argument of a reduction resolved and sorted: every axis where it is
    None or empty."""
    if dims is None:
        return tuple(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:
        return tuple(range(rank))
    return tuple(sorted({norm_axis(int(d), rank) for d in dims}))


# ----------------------------------------------------------------------------- gather
@converts("embedding.default", emits=[Op.GATHER])
def _embedding(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    inputs = [imp.value(args["weight"]), imp.value(args["indices"])]
    return imp.add(node, Op.GATHER, inputs, GatherAttrs(0))


@converts("index_select.default", emits=[Op.GATHER])
def _index_select(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    axis = norm_axis(int(args["dim"]), imp.rank(args["self"]))
    inputs = [imp.value(args["self"]), imp.value(args["index"])]
    return imp.add(node, Op.GATHER, inputs, GatherAttrs(axis))


@converts("select.int", emits=[Op.GATHER])
def _select(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    axis = norm_axis(int(args["dim"]), imp.rank(args["self"]))
    index = imp.builder.param(imp.builder.fresh(f"{node.name}.index"), np.int64(args["index"]))
    return imp.add(node, Op.GATHER, [imp.value(args["self"]), index], GatherAttrs(axis))


# ----------------------------------------------------------------------------- slices
@converts("slice.Tensor", emits=[Op.SLICE])
def _slice(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    shape = _shape(imp, args["self"])
    axis = norm_axis(int(args["dim"]), len(shape))
    step = int(args["step"])
    if step <= 0:
        raise unsupported(node, f"step {step} is not supported (positive steps only)")
    start, stop, _ = slice(args["start"], args["end"], step).indices(shape[axis])
    attrs = SliceAttrs.along(shape, {axis: (start, max(stop, start))})
    if step != 1:
        attrs = SliceAttrs(
            attrs.starts, attrs.stops, tuple(step if i == axis else 1 for i in range(len(shape)))
        )
    return imp.add(node, Op.SLICE, [imp.value(args["self"])], attrs)


@converts("split.Tensor", "split_with_sizes.default", "chunk.default", emits=[Op.SLICE])
def _split(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> tuple[str, ...]:
    """One SLICE per part; the parts' sizes are those torch recorded (``split`` and ``chunk``
    make the last part smaller, ``chunk`` may make fewer parts than asked)."""
    shape = _shape(imp, args["self"])
    axis = norm_axis(int(args["dim"]), len(shape))
    parts = node.meta.get("val")
    if not isinstance(parts, list | tuple) or not all(isinstance(p, torch.Tensor) for p in parts):
        raise unsupported(node, "has no list of tensors as its recorded value")
    values, start = [], 0
    for k, part in enumerate(parts):
        size = int(part.shape[axis])
        name = imp.builder.fresh(f"{node.name}.{k}")
        attrs = SliceAttrs.along(shape, {axis: (start, start + size)})
        values.append(imp.builder.add1(Op.SLICE, [imp.value(args["self"])], attrs, name=name))
        start += size
    return tuple(values)


@converts("unbind.int", emits=[Op.SLICE, Op.RESHAPE])
def _unbind(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> tuple[str, ...]:
    """Each index along ``dim``: a one-wide SLICE reshaped without that axis."""
    shape = _shape(imp, args["self"])
    axis = norm_axis(int(args["dim"]), len(shape))
    part = ReshapeAttrs(shape[:axis] + shape[axis + 1 :])
    values = []
    for k in range(shape[axis]):
        name = imp.builder.fresh(f"{node.name}.{k}")
        piece = imp.builder.add1(
            Op.SLICE,
            [imp.value(args["self"])],
            SliceAttrs.along(shape, {axis: (k, k + 1)}),
            name=f"{name}.slice",
        )
        values.append(imp.builder.add1(Op.RESHAPE, [piece], part, name=name))
    return tuple(values)


@converts("roll.default", emits=[Op.SLICE, Op.CONCAT])
def _roll(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    """Each rolled axis as its two slices swapped: the last ``shift`` elements, then the
    rest (a roll without dims, of the flattened tensor, is not supported)."""
    shape = _shape(imp, args["self"])
    shifts, dims = list(args["shifts"]), list(args["dims"])
    if not dims or len(shifts) != len(dims):
        raise unsupported(node, "roll needs one shift per dimension (no flattened roll)")
    value = imp.value(args["self"])
    for k, (shift, dim) in enumerate(zip(shifts, dims, strict=True)):
        axis = norm_axis(int(dim), len(shape))
        cut = (-int(shift)) % shape[axis]
        if cut == 0:
            continue
        name = imp.builder.fresh(f"{node.name}.{k}")
        tail = SliceAttrs.along(shape, {axis: (cut, shape[axis])})
        head = SliceAttrs.along(shape, {axis: (0, cut)})
        parts = [
            imp.builder.add1(Op.SLICE, [value], tail, name=f"{name}.tail"),
            imp.builder.add1(Op.SLICE, [value], head, name=f"{name}.head"),
        ]
        value = imp.builder.add1(Op.CONCAT, parts, AxisAttrs(axis), name=name)
    return value


# ----------------------------------------------------------------------------- shapes
@converts("expand.default", emits=[Op.EXPAND])
def _expand(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    attrs = ExpandAttrs(meta_type(node)[0])
    return imp.add(node, Op.EXPAND, [imp.value(args["self"])], attrs)


@converts("repeat.default", emits=[Op.TILE, Op.RESHAPE])
def _repeat(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x, shape = imp.value(args["self"]), _shape(imp, args["self"])
    repeats = tuple(int(r) for r in args["repeats"])
    if len(repeats) < len(shape):
        raise unsupported(node, f"repeats {list(repeats)} are fewer than the rank {len(shape)}")
    if len(repeats) > len(shape):  # torch adds leading axes of size 1 first
        lifted = (1,) * (len(repeats) - len(shape)) + shape
        x = imp.builder.add1(Op.RESHAPE, [x], ReshapeAttrs(lifted), name=f"{node.name}.lift")
    return imp.add(node, Op.TILE, [x], TileAttrs(repeats))


@converts("contiguous.default")
def _contiguous(imp: TorchImport, _node: fx.Node, args: dict[str, Any]) -> str:
    return imp.value(args["self"])


# ----------------------------------------------------------------------------- reductions
def _reduce(op: Op) -> Converter:
    """REDUCE_MEAN/SUM/MAX over ``dim`` (every axis without one)."""

    def convert(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
        if args.get("dtype") is not None:
            raise unsupported(node, f"dtype={args['dtype']} is not supported")
        x, ty = imp.value(args["self"]), imp.builder.type_of(imp.value(args["self"]))
        if op is Op.REDUCE_SUM and ty.dtype not in ("float32", "int64"):
            raise unsupported(node, f"torch sums {ty.dtype} values to int64, not supported")
        axes = _axes(args.get("dim"), len(ty.shape))
        keepdims = bool(args.get("keepdim", False))
        if op is Op.REDUCE_MEAN and len(ty.shape) == 4 and axes == (2, 3):
            # the mean over H and W of NCHW: the global average pool the accelerator runs
            if keepdims:
                return imp.add(node, Op.GLOBAL_AVERAGE_POOL, [x])
            pooled = imp.builder.add1(Op.GLOBAL_AVERAGE_POOL, [x], name=f"{node.name}.pool")
            return imp.add(node, Op.FLATTEN, [pooled], AxisAttrs(1))
        return imp.add(node, op, [x], ReduceAttrs(axes, keepdims))

    return convert


converts(
    "mean.dim",
    "mean.default",
    emits=[Op.REDUCE_MEAN, Op.GLOBAL_AVERAGE_POOL, Op.FLATTEN],
)(_reduce(Op.REDUCE_MEAN))
converts("sum.dim_IntList", "sum.default", emits=[Op.REDUCE_SUM])(_reduce(Op.REDUCE_SUM))
converts("amax.default", emits=[Op.REDUCE_MAX])(_reduce(Op.REDUCE_MAX))


@converts("argmax.default", emits=[Op.ARG_MAX, Op.RESHAPE])
def _argmax(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x, keepdims = imp.value(args["self"]), bool(args["keepdim"])
    if args["dim"] is not None:
        axis = norm_axis(int(args["dim"]), imp.rank(args["self"]))
        return imp.add(node, Op.ARG_MAX, [x], ArgMaxAttrs(axis, keepdims))
    # over every element: of the flattened input, shaped as torch shapes it
    size = int(np.prod(_shape(imp, args["self"]), dtype=np.int64))
    flat = imp.builder.add1(Op.RESHAPE, [x], ReshapeAttrs((size,)), name=f"{node.name}.flat")
    if not keepdims:
        return imp.add(node, Op.ARG_MAX, [flat], ArgMaxAttrs(0, False))
    index = imp.builder.add1(Op.ARG_MAX, [flat], ArgMaxAttrs(0, False), name=f"{node.name}.arg")
    return imp.add(node, Op.RESHAPE, [index], ReshapeAttrs(meta_type(node)[0]))


@converts("topk.default", emits=[Op.TOP_K])
def _topk(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> tuple[str, ...]:
    """(values, indices): one TOP_K node each. torch leaves the order of equal elements open;
    ours puts the lower index first."""
    x, shape = imp.value(args["self"]), _shape(imp, args["self"])
    if not shape:
        raise unsupported(node, "the top k of a 0-d tensor is not supported")
    axis = norm_axis(int(args["dim"]), len(shape))
    k = args["k"]
    if not isinstance(k, int):
        raise unsupported(node, f"k {k!r} is not a constant integer")
    if not 0 <= k <= shape[axis]:
        raise unsupported(node, f"k {k} is not in [0, {shape[axis]}] (dim {axis})")
    largest, ordered = bool(args["largest"]), bool(args["sorted"])
    return tuple(
        imp.builder.add1(
            Op.TOP_K,
            [x],
            TopKAttrs(axis, k, largest, ordered, output),
            name=imp.builder.fresh(f"{node.name}.{output}"),
        )
        for output in ("values", "indices")
    )
