"""Graph patterns: the subgraph a fusion or a rewrite takes, written as data and found by one
matcher (as tinygrad's ``UPat`` and ``PatternMatcher`` do for its micro-ops).

A :class:`Pat` describes the node that writes a value: its operators, the patterns of its
inputs (in order, or either order for a ``commutative`` pair), a condition on the node, and a
name under which a match captures it; :func:`const` describes a parameter. :func:`match` tries
a pattern at one node (the root); :func:`find` at every node of a graph, in order. A fusion
absorbs the nodes below its root, so by default each of them must be read by its consumer in
the match alone and write no graph output (``exclusive``); a rewrite that only reads through
them passes ``exclusive=False``. Nodes named in ``exclude`` (kept in float by request, say) are
never part of a match.

:func:`rewrite` applies :class:`Rewrite` rules to a graph until none applies: each rule's
``replace`` turns a match into a :class:`Replacement` (a node to write the root's outputs
instead, or an existing value the root's output stands for).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.graph.ir import Graph, GraphBuilder, Node, Op, copy_into

__all__ = [
    "Match",
    "Pat",
    "Replacement",
    "Rewrite",
    "const",
    "find",
    "match",
    "pat",
    "rewrite",
]


@dataclass(frozen=True)
class Pat:
    """The node writing a value: one of ``ops`` (any operator when empty), whose inputs match
    ``inputs`` (not looked at when None; a :class:`Pat` per input otherwise, or the first two
    in either order when ``commutative``), for which ``where(graph, node)`` holds, captured as
    ``name`` (when given). With ``is_const``, the value is instead a parameter, and ``where``
    is asked about ``(graph, value)``."""

    ops: tuple[Op, ...] = ()
    inputs: tuple[Pat, ...] | None = None
    name: str = ""
    where: Callable[[Graph, Any], bool] | None = None
    commutative: bool = False
    is_const: bool = False


def pat(
    *ops: Op,
    inputs: Sequence[Pat] | None = None,
    name: str = "",
    where: Callable[[Graph, Node], bool] | None = None,
    commutative: bool = False,
) -> Pat:
    """A node pattern (:class:`Pat`)."""
    return Pat(ops, None if inputs is None else tuple(inputs), name, where, commutative)


def const(name: str = "", where: Callable[[Graph, str], bool] | None = None) -> Pat:
    """A parameter, captured by its value name as ``name``."""
    return Pat(name=name, where=where, is_const=True)


@dataclass(frozen=True)
class Match:
    """A pattern found at ``root``: the captured nodes and the captured parameters' values, by
    capture name."""

    root: Node
    nodes: dict[str, Node] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)


def match(
    pattern: Pat,
    graph: Graph,
    node: Node,
    *,
    exclusive: bool = True,
    exclude: Collection[str] = (),
) -> Match | None:
    """``pattern`` matched at ``node`` (see the module docstring), or None."""
    found = Match(node)
    if _node_matches(pattern, graph, node, found, exclusive, exclude):
        return found
    return None


def find(
    pattern: Pat, graph: Graph, *, exclusive: bool = True, exclude: Collection[str] = ()
) -> list[Match]:
    """Every match of ``pattern`` in ``graph``, rooted at each node in turn."""
    matches = (match(pattern, graph, n, exclusive=exclusive, exclude=exclude) for n in graph.nodes)
    return [m for m in matches if m is not None]


def _node_matches(
    p: Pat, graph: Graph, node: Node, found: Match, exclusive: bool, exclude: Collection[str]
) -> bool:
    if p.is_const or node.name in exclude or (p.ops and node.op not in p.ops):
        return False
    if p.where is not None and not p.where(graph, node):
        return False
    if p.inputs is not None:
        if len(node.inputs) < len(p.inputs):
            return False
        orders = [list(range(len(p.inputs)))]
        if p.commutative and len(p.inputs) >= 2:
            orders.append([1, 0, *range(2, len(p.inputs))])
        for order in orders:
            trial = Match(found.root, dict(found.nodes), dict(found.values))
            pairs = zip(order, p.inputs, strict=True)
            if all(
                _value_matches(sub, graph, node, node.inputs[k], trial, exclusive, exclude)
                for k, sub in pairs
            ):
                found.nodes.update(trial.nodes)
                found.values.update(trial.values)
                break
        else:
            return False
    if p.name:
        found.nodes[p.name] = node
    return True


def _value_matches(
    p: Pat,
    graph: Graph,
    reader: Node,
    value: str,
    found: Match,
    exclusive: bool,
    exclude: Collection[str],
) -> bool:
    """Whether ``value`` (an input of ``reader``) matches ``p``."""
    if p.is_const:
        if value not in graph.params or (p.where is not None and not p.where(graph, value)):
            return False
        if p.name:
            found.values[p.name] = value
        return True
    producer = graph.producer(value)
    if producer is None:
        return False
    if exclusive and (graph.consumers(value) != (reader,) or value in graph.outputs):
        return False
    return _node_matches(p, graph, producer, found, exclusive, exclude)


@dataclass(frozen=True)
class Replacement:
    """What a rewrite puts in place of a match's root: a node ``op(inputs, attrs)`` writing
    the root's outputs under the root's name, or (``value`` set) an existing value that the
    root's output stands for from then on."""

    op: Op | None = None
    inputs: tuple[str, ...] = ()
    attrs: Any = None
    value: str | None = None


@dataclass(frozen=True)
class Rewrite:
    """A named rewrite: where ``pattern`` matches (not exclusively: the nodes below the root
    may have other readers, which keep them), ``replace(graph, match)`` gives the
    :class:`Replacement`, or None to leave the root as it is."""

    name: str
    pattern: Pat
    replace: Callable[[Graph, Match], Replacement | None]


def rewrite(
    graph: Graph,
    rules: Sequence[Rewrite],
    *,
    exclude: Collection[str] = (),
    max_rounds: int = 64,
) -> Graph:
    """``graph`` with ``rules`` applied until none applies (each round rewrites every node the
    first applicable rule matches; nodes nothing reads any more are dropped); nodes named in
    ``exclude`` are left as they are. A replacement by an existing value is not made for a root
    that writes a graph output, so the outputs keep their names. The result computes what
    ``graph`` computes when each rule's replacement does."""
    for _ in range(max_rounds):
        graph, changed = _rewrite_round(graph, rules, exclude)
        if not changed:
            return graph
    return graph


def _rewrite_round(
    graph: Graph, rules: Sequence[Rewrite], exclude: Collection[str]
) -> tuple[Graph, bool]:
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    alias: dict[str, str] = {}
    changed = False
    for node in graph.nodes:
        replacement = _first_replacement(graph, node, rules, exclude)
        if replacement is None:
            inputs = [alias.get(v, v) for v in node.inputs]
            builder.add(node.op, inputs, node.attrs, name=node.name, outputs=node.outputs)
            continue
        changed = True
        if replacement.value is not None:
            alias[node.outputs[0]] = alias.get(replacement.value, replacement.value)
            continue
        inputs = [alias.get(v, v) for v in replacement.inputs]
        builder.add(replacement.op, inputs, replacement.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs), changed


def _first_replacement(
    graph: Graph, node: Node, rules: Sequence[Rewrite], exclude: Collection[str]
) -> Replacement | None:
    for rule in rules:
        found = match(rule.pattern, graph, node, exclusive=False, exclude=exclude)
        if found is None:
            continue
        replacement = rule.replace(graph, found)
        if replacement is None:
            continue
        if replacement.value is not None and node.outputs[0] in graph.outputs:
            continue
        return replacement
    return None
