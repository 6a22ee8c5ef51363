"""The ``flatten`` pass: every buffer access becomes one row-major element offset."""

from __future__ import annotations

from compiler.expr import Node
from compiler.loop_ir import BufferAddress, Load, LoweredFunc, Store
from compiler.visit import transform

__all__ = ["flatten"]


def _flat(node: Node) -> Node | None:
    if isinstance(node, Load | Store | BufferAddress) and len(node.indices) != 1:
        offset = node.buffer.offset(node.indices)
        if isinstance(node, Store):
            return Store(node.buffer, (offset,), node.value)
        return type(node)(node.buffer, (offset,))
    return None


def flatten(func: LoweredFunc) -> LoweredFunc:
    """``func`` with each load, store and address indexed by a single flat offset."""
    return LoweredFunc(func.name, func.params, transform(func.body, _flat))
