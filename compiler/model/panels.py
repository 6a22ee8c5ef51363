"""The CPU target's matrix products: constant right operands packed into column panels at
compile time.

The CPU's product template (:data:`~compiler.templates.MATMUL`) reads its right operand as
panels of ``tile_n`` contiguous columns, ``(N/tile_n, K, tile_n)``; packing them inside the
kernel costs every run a pass over the weights (a BERT-base layer's 7 M floats). Here a float32
``MatMul`` whose right operand is a constant matrix becomes a ``PackedMatMul`` over the panels
(:func:`runtime.opset.blocked.pack_panels`, of the width the target's template chooses:
:func:`~compiler.templates.matmul.panel_width`), and where its only reader is an ``Add`` of a
constant ``(N,)`` bias (a ``Linear`` layer as exported), that bias is added by the product's
kernel. The numpy kernel of ``PackedMatMul`` computes what ``MatMul`` then ``Add`` compute:
the same products, which BLAS may sum in another order than for the original weights (whose
memory order it follows), so within float32 rounding rather than bit for bit.
"""

from __future__ import annotations

from compiler.codegen.target import Target
from compiler.graph.ir import Graph, GraphBuilder, Node, Op, copy_into
from compiler.templates.matmul import panel_width
from runtime.opset.blocked import PanelAttrs, pack_panels

__all__ = ["pack_matmul_weights"]


def pack_matmul_weights(graph: Graph, target: str | Target) -> Graph:
    """``graph`` with each float32 ``MatMul`` by a constant matrix a ``PackedMatMul`` over
    panels for ``target``, its bias ``Add`` fused where it has one (module docstring)."""
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    fused: set[str] = set()
    for node in graph.nodes:
        if node.name in fused:
            continue
        if not _packable(graph, node):
            builder.add(node.op, node.inputs, node.attrs, name=node.name, outputs=node.outputs)
            continue
        weights = graph.params[node.inputs[1]]
        columns = weights.shape[1]
        panels = builder.param(
            builder.fresh(f"{node.inputs[1]}.panels"),
            pack_panels(weights, panel_width(columns, target)),
        )
        inputs, outputs = [node.inputs[0], panels], node.outputs
        add = _bias_add(graph, node.outputs[0], columns)
        if add is not None:
            fused.add(add.name)
            inputs.append(next(v for v in add.inputs if v != node.outputs[0]))
            outputs = add.outputs
        attrs = PanelAttrs(columns)
        builder.add(Op.PACKED_MATMUL, inputs, attrs, name=node.name, outputs=outputs)
    return builder.build(graph.outputs)


def _packable(graph: Graph, node: Node) -> bool:
    if node.op is not Op.MATMUL or node.inputs[1] not in graph.params:
        return False
    a, b, out = (graph.types[v] for v in (*node.inputs, node.outputs[0]))
    return len(a.shape) >= 2 and len(b.shape) == 2 and a.dtype == b.dtype == out.dtype == "float32"


def _bias_add(graph: Graph, value: str, columns: int) -> Node | None:
    """The ``Add`` that alone reads ``value`` and adds a constant float32 ``(columns,)``."""
    add = graph.sole_consumer(value)
    if add is None or add.op is not Op.ADD:
        return None
    other = next((v for v in add.inputs if v != value), None)
    if other is None or other not in graph.params:
        return None
    bias = graph.types[other]
    return add if bias.shape == (columns,) and bias.dtype == "float32" else None
