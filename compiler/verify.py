"""What every pass over the loop IR must preserve, checked: each variable read is bound (by an
enclosing loop, or as a stride of a parameter buffer), each buffer accessed is a parameter of
the function or allocated around the access, each loop runs at least once. The pass runner's
:class:`~compiler.pipeline.Verify` instrument runs :func:`verify_lowered` between passes."""

from __future__ import annotations

from compiler.errors import CompileError
from compiler.expr import Node, Var
from compiler.loop_ir import Allocate, Buffer, For, LoweredFunc
from compiler.visit import children, free_vars

__all__ = ["verify_lowered"]


def verify_lowered(func: LoweredFunc) -> None:
    """Raise CompileError (naming ``func``) at the first unbound variable, unallocated buffer
    or empty loop of ``func``."""
    strides = {
        var
        for buffer in func.params
        for stride in buffer.strides or ()
        for var in free_vars(stride)
    }
    _check(func.body, frozenset(strides), frozenset(func.params), func.name)


def _check(node: Node, bound: frozenset[Var], buffers: frozenset[Buffer], func: str) -> None:
    if isinstance(node, For):
        if node.extent < 1:
            raise CompileError(f"loop {node.var.name} has extent {node.extent}", tensor=func)
        _check(node.body, bound | {node.var}, buffers, func)
        return
    if isinstance(node, Allocate):
        _check(node.body, bound, buffers | {node.buffer}, func)
        return
    if isinstance(node, Var) and node not in bound:
        raise CompileError(f"variable {node.name} is read where no loop binds it", tensor=func)
    buffer = getattr(node, "buffer", None)
    if isinstance(buffer, Buffer) and buffer not in buffers:
        raise CompileError(
            f"buffer {buffer.name} is accessed where it is neither a parameter nor allocated",
            tensor=func,
        )
    for child in children(node):
        _check(child, bound, buffers, func)
