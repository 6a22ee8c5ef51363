"""Simplification: chains of movement operators that the frontends and the quantizer leave
(a Reshape of a Reshape, a Transpose of a Transpose, a Reshape to its input's own shape)
rewritten into one node or none, as :class:`~compiler.graph.patterns.Rewrite` rules; and a
node that repeats an earlier one (the same operator, inputs and attributes: the quantizer's
flattening of one value for three Linear layers) merged into it. Each removed node is a CPU
step less (a copy) in a compiled model."""

from __future__ import annotations

from collections.abc import Collection, Hashable

from compiler.graph.ir import Graph, GraphBuilder, Node, Op, ReshapeAttrs, TransposeAttrs, copy_into
from compiler.graph.patterns import Match, Replacement, Rewrite, pat, rewrite

__all__ = ["SIMPLIFY_RULES", "simplify"]

#: The operators that only change a value's shape (the element order stays).
_RESHAPES = (Op.RESHAPE, Op.FLATTEN)


def _keeps_shape(graph: Graph, node: Node) -> bool:
    return graph.types[node.inputs[0]].shape == graph.types[node.outputs[0]].shape


def _is_identity_permutation(graph: Graph, node: Node) -> bool:
    return node.attrs.perm == tuple(range(len(node.attrs.perm)))


def _one_reshape(graph: Graph, m: Match) -> Replacement:
    shape = graph.types[m.root.outputs[0]].shape
    return Replacement(Op.RESHAPE, (m.nodes["inner"].inputs[0],), ReshapeAttrs(shape))


def _one_transpose(graph: Graph, m: Match) -> Replacement:
    inner, outer = m.nodes["inner"].attrs.perm, m.root.attrs.perm
    composed = tuple(inner[axis] for axis in outer)
    source = m.nodes["inner"].inputs[0]
    if composed == tuple(range(len(composed))) and m.root.outputs[0] not in graph.outputs:
        return Replacement(value=source)
    return Replacement(Op.TRANSPOSE, (source,), TransposeAttrs(composed))


def _its_input(graph: Graph, m: Match) -> Replacement:
    return Replacement(value=m.root.inputs[0])


#: The rules, in the order they are tried at each node.
SIMPLIFY_RULES = (
    Rewrite(
        "a reshape of a reshape is one reshape",
        pat(*_RESHAPES, inputs=[pat(*_RESHAPES, name="inner")]),
        _one_reshape,
    ),
    Rewrite(
        "a reshape to its input's shape is its input",
        pat(*_RESHAPES, where=_keeps_shape),
        _its_input,
    ),
    Rewrite(
        "a transpose of a transpose is one transpose (or none)",
        pat(Op.TRANSPOSE, inputs=[pat(Op.TRANSPOSE, name="inner")]),
        _one_transpose,
    ),
    Rewrite(
        "a transpose by the identity permutation is its input",
        pat(Op.TRANSPOSE, where=_is_identity_permutation),
        _its_input,
    ),
)


def simplify(graph: Graph, *, keep: Collection[str] = ()) -> Graph:
    """``graph`` with :data:`SIMPLIFY_RULES` applied until none applies, then each repeated
    node merged into its first occurrence; nodes named in ``keep`` stay as they are. It
    computes the same values, and keeps its input and output names."""
    return merge_repeated(rewrite(graph, SIMPLIFY_RULES, exclude=keep), keep=keep)


def merge_repeated(graph: Graph, *, keep: Collection[str] = ()) -> Graph:
    """``graph`` with every node that has an earlier one's operator, inputs and attributes
    read as that one instead (unless it writes a graph output or is named in ``keep``)."""
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    alias: dict[str, str] = {}
    first: dict[Hashable, tuple[str, ...]] = {}
    for node in graph.nodes:
        inputs = tuple(alias.get(v, v) for v in node.inputs)
        key = (node.op, inputs, node.attrs)
        repeated = key in first and node.name not in keep
        if repeated and not set(node.outputs) & set(graph.outputs):
            alias.update(zip(node.outputs, first[key], strict=True))
            continue
        first.setdefault(key, node.outputs)
        builder.add(node.op, inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)
