"""Generic traversals over expressions and statements.

Every node lists its sub-node fields in ``children`` (a field holds a node or a tuple of nodes),
so one rebuild function serves every pass: :func:`transform` rewrites bottom-up, :func:`walk`
visits every node, :func:`substitute` replaces variables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

from compiler.expr import Expr, Node, Var

__all__ = ["children", "free_vars", "substitute", "transform", "walk"]


def transform(node: Node, fn: Callable[[Node], Node | None]) -> Node:
    """Rebuild ``node`` bottom-up: children first, then ``fn(rebuilt)``; ``None`` keeps it.

    Nodes whose children did not change are reused, so untouched subtrees stay identical.
    """
    changes = {}
    for name in node.children:
        value = getattr(node, name)
        if isinstance(value, tuple):
            new = tuple(transform(item, fn) for item in value)
            if any(a is not b for a, b in zip(new, value, strict=True)):
                changes[name] = new
        elif value is not None:
            new = transform(value, fn)
            if new is not value:
                changes[name] = new
    rebuilt = replace(node, **changes) if changes else node
    result = fn(rebuilt)
    return rebuilt if result is None else result


def children(node: Node) -> Iterator[Node]:
    """The direct sub-nodes of ``node``, in the order of its ``children`` fields."""
    for name in node.children:
        value = getattr(node, name)
        if isinstance(value, tuple):
            yield from value
        elif value is not None:
            yield value


def walk(node: Node) -> Iterator[Node]:
    """Every node under (and including) ``node``, parents before children."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        if node.children:
            stack.extend(reversed(list(children(node))))


def substitute(node: Node, mapping: Mapping[Var, Expr]) -> Node:
    """``node`` with each variable in ``mapping`` replaced by its expression."""
    if not mapping:
        return node
    return transform(node, lambda n: mapping.get(n) if isinstance(n, Var) else None)


def free_vars(node: Node) -> set[Var]:
    """The variables ``node`` reads."""
    return {n for n in walk(node) if isinstance(n, Var)}
