"""The loop IR's ``simplify`` pass; the arithmetic it applies is :mod:`compiler.arith`'s."""

from __future__ import annotations

from compiler.arith import simplify_expr, simplify_node
from compiler.expr import Const, DType, Expr, Not, Var
from compiler.loop_ir import (
    Allocate,
    AttrStmt,
    For,
    ForKind,
    IfThenElse,
    LoweredFunc,
    Seq,
    Stmt,
    seq,
)
from compiler.visit import substitute, transform

__all__ = ["simplify"]


def simplify(func: LoweredFunc) -> LoweredFunc:
    """The ``simplify`` pass: simplify every expression using the enclosing loops' ranges,
    drop conditions that always hold (and branches that never run), and replace loops of
    extent 1 by their body."""
    return LoweredFunc(func.name, func.params, _stmt(func.body, {}))


def _stmt(stmt: Stmt, ranges: dict[Var, tuple[int, int]]) -> Stmt | None:
    if isinstance(stmt, For):
        if stmt.extent == 1 and stmt.kind is not ForKind.THREAD_BINDING:
            return _stmt(substitute(stmt.body, {stmt.var: Const(0, DType.INT32)}), ranges)
        body = _stmt(stmt.body, {**ranges, stmt.var: (0, stmt.extent - 1)})
        return None if body is None else For(stmt.var, stmt.extent, stmt.kind, body, stmt.thread)
    if isinstance(stmt, Seq):
        parts = [_stmt(s, ranges) for s in stmt.stmts]
        kept = [s for s in parts if s is not None]
        return seq(*kept) if kept else None
    if isinstance(stmt, IfThenElse):
        cond = simplify_expr(stmt.cond, ranges)
        if isinstance(cond, Const):
            chosen = stmt.then if cond.value else stmt.otherwise
            return None if chosen is None else _stmt(chosen, ranges)
        then = _stmt(stmt.then, ranges)
        otherwise = None if stmt.otherwise is None else _stmt(stmt.otherwise, ranges)
        if then is None and otherwise is None:
            return None
        if then is None:
            return IfThenElse(Not(cond), otherwise)
        return IfThenElse(cond, then, otherwise)
    if isinstance(stmt, Allocate | AttrStmt):
        body = _stmt(stmt.body, ranges)
        if body is None:
            return None
        return (
            Allocate(stmt.buffer, body)
            if isinstance(stmt, Allocate)
            else AttrStmt(stmt.key, stmt.value, body)
        )
    return transform(stmt, lambda n: simplify_node(n, ranges) if isinstance(n, Expr) else None)
