"""Grouped and depthwise convolutions by channel block, so the GEMM core can run them.

A grouped ``QConv`` of more groups than the accelerator runs densely at once
(:data:`~compiler.model.accel_lowering.MAX_DENSE_GROUPS`) over more than one channel block becomes
one piece per span of whole groups and whole blocks: the configuration's channel block ``B``
where a group is narrower (``B / g`` groups of ``g`` input channels, a depthwise convolution's
``B`` groups of one), else one group. Each piece reads its input channels through a ``Slice``
(a slice of the blocked buffer: a view on the accelerator; the last may be a partial block),
is the grouped convolution of those channels (which the accelerator runs as a dense
convolution of block-diagonal weights: exact, at up to ``B / g`` times the work of the grouped
products), and writes its output channels into one ``Concat`` (a layout decision on the
accelerator where they are whole blocks). Every piece computes exactly what the whole node
computes for its channels (the same int8 products, int32 sums, requantisation and clip: the
per-channel operands, a bias and a fixed-point multiplier and shifts, are sliced with the
weights), so the split graph's reference equals the original's bit for bit, and the pieces' MAC
counts add up to the node's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from compiler.accel.env import Env
from compiler.graph.ir import AxisAttrs, Graph, GraphBuilder, Node, Op, copy_into
from compiler.model.accel_lowering import MAX_DENSE_GROUPS
from runtime.opset.indexing import SliceAttrs

__all__ = ["split_grouped"]


def split_grouped(graph: Graph, env: Env, *, keep: Iterable[str] = ()) -> Graph:
    """``graph`` with every grouped ``QConv`` of more than :data:`MAX_DENSE_GROUPS` groups and
    more than one channel block split into pieces (module docstring); nodes named in ``keep``
    stay whole."""
    kept = set(keep)
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    for node in graph.nodes:
        span = None if node.name in kept else _span(graph, node, env.BLOCK_IN)
        if span is not None:
            _split(builder, graph, node, span)
        else:
            builder.add(node.op, node.inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)


def _span(graph: Graph, node: Node, block: int) -> int | None:
    """The input channels of each piece of ``node``, None where it stays whole."""
    if node.op is not Op.QCONV or node.attrs.groups <= MAX_DENSE_GROUPS:
        return None
    channels = graph.types[node.inputs[0]].shape[1]
    per_group = graph.types[node.inputs[1]].shape[1]
    constant = all(v in graph.params for v in node.inputs[1:])
    fits = block % per_group == 0 or per_group % block == 0
    if not constant or not fits or channels <= block:
        return None
    return max(block, per_group)


def _split(builder: GraphBuilder, graph: Graph, node: Node, span: int) -> None:
    x = node.inputs[0]
    shape = graph.types[x].shape
    weights = graph.params[node.inputs[1]]
    in_per_group = weights.shape[1]
    out_per_group = weights.shape[0] // node.attrs.groups
    pieces = []
    for k in range(-(-shape[1] // span)):
        start, stop = k * span, min((k + 1) * span, shape[1])
        bounds = SliceAttrs.along(shape, {1: (start, stop)})
        part = builder.add1(Op.SLICE, [x], bounds, name=builder.fresh(f"{node.name}.in{k}"))
        groups = (stop - start) // in_per_group
        first = start // in_per_group * out_per_group
        rows = slice(first, first + groups * out_per_group)
        inputs = [part, builder.param(builder.fresh(f"{node.inputs[1]}.part{k}"), weights[rows])]
        for value in node.inputs[2:]:  # the per-channel operands: bias, multiplier, shifts
            name = builder.fresh(f"{value}.part{k}")
            inputs.append(builder.param(name, np.ascontiguousarray(graph.params[value][rows])))
        attrs = dataclasses.replace(node.attrs, groups=groups)
        name = builder.fresh(f"{node.name}.part{k}")
        pieces.append(builder.add1(Op.QCONV, inputs, attrs, name=name))
    builder.add(Op.CONCAT, pieces, AxisAttrs(1), name=node.name, outputs=node.outputs)
