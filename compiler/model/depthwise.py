"""Depthwise convolutions by channel block, so the GEMM core can run them.

A depthwise ``QConv`` (one input channel per group, ``m`` output channels per group) over ``C``
channels, more than the configuration's channel block ``B``, becomes ``ceil(C / B)`` pieces:
each reads one block of input channels (a ``Slice``: a slice of the blocked buffer, a view on
the accelerator; the last may be a partial block), is the depthwise convolution of those
channels (which the accelerator runs as a dense ``B -> B*m`` convolution of block-diagonal
weights: exact, at up to ``B`` times the work of the depthwise products), and writes its block
of output channels into one ``Concat`` (a layout decision on the accelerator). Every piece
computes exactly what the whole node computes for its channels (the same int8 products, int32
sums, shift and clip), so the split graph's reference equals the original's bit for bit, and
each piece's MAC count is the depthwise products it stands for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from compiler.accel.env import Env
from compiler.graph.ir import AxisAttrs, Graph, GraphBuilder, Node, Op, copy_into
from runtime.opset.indexing import SliceAttrs

__all__ = ["split_depthwise"]


def split_depthwise(graph: Graph, env: Env, *, keep: Iterable[str] = ()) -> Graph:
    """``graph`` with every depthwise ``QConv`` of more than one channel block split into
    one piece per block (module docstring); nodes named in ``keep`` stay whole."""
    kept = set(keep)
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    for node in graph.nodes:
        if node.name not in kept and _splittable(graph, node, env.BLOCK_IN):
            _split(builder, graph, node, env.BLOCK_IN)
        else:
            builder.add(node.op, node.inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)


def _splittable(graph: Graph, node: Node, block: int) -> bool:
    if node.op is not Op.QCONV:
        return False
    x = graph.types[node.inputs[0]].shape
    w = graph.types[node.inputs[1]].shape
    channels, groups = x[1], node.attrs.groups
    return (
        groups == channels
        and w[1] == 1
        and channels > block
        and node.inputs[1] in graph.params
        and (len(node.inputs) < 3 or node.inputs[2] in graph.params)
    )


def _split(builder: GraphBuilder, graph: Graph, node: Node, block: int) -> None:
    x = node.inputs[0]
    shape = graph.types[x].shape
    weights = graph.params[node.inputs[1]]
    bias = graph.params[node.inputs[2]] if len(node.inputs) == 3 else None
    per_group = weights.shape[0] // shape[1]  # the channel multiplier
    pieces = []
    for k in range(-(-shape[1] // block)):
        starts, stops = [0] * len(shape), list(shape)
        starts[1], stops[1] = k * block, min((k + 1) * block, shape[1])
        bounds = SliceAttrs(tuple(starts), tuple(stops), (1,) * len(shape))
        part = builder.add1(Op.SLICE, [x], bounds, name=builder.fresh(f"{node.name}.in{k}"))
        rows = slice(starts[1] * per_group, stops[1] * per_group)
        inputs = [part, builder.param(builder.fresh(f"{node.inputs[1]}.block{k}"), weights[rows])]
        if bias is not None:
            name = builder.fresh(f"{node.inputs[2]}.block{k}")
            inputs.append(builder.param(name, np.ascontiguousarray(bias[rows])))
        attrs = dataclasses.replace(node.attrs, groups=stops[1] - starts[1])
        name = builder.fresh(f"{node.name}.block{k}")
        pieces.append(builder.add1(Op.QCONV, inputs, attrs, name=name))
    builder.add(Op.CONCAT, pieces, AxisAttrs(1), name=node.name, outputs=node.outputs)
