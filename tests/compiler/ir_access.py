"""An independent checker of the loop IR's memory accesses: it runs a lowered function's loops
in Python, evaluating every index (and every condition that guards one), and lists each load or
store outside its buffer. Values other than indices are not computed (a load gives 0), so it
answers for functions whose indices do not depend on data."""

from __future__ import annotations

import math
from typing import Any

from compiler.expr import Binary, BinOp, Cast, Compare, Const, Not, Select, Var
from compiler.loop_ir import (
    Allocate,
    AttrStmt,
    BufferAddress,
    CallIntrinsic,
    For,
    IfThenElse,
    Load,
    LoweredFunc,
    Seq,
    Store,
)

__all__ = ["out_of_bounds"]

_INT = {
    BinOp.ADD: lambda a, b: a + b,
    BinOp.SUB: lambda a, b: a - b,
    BinOp.MUL: lambda a, b: a * b,
    BinOp.FLOOR_DIV: lambda a, b: a // b if b else 0,
    BinOp.FLOOR_MOD: lambda a, b: a % b if b else 0,
    BinOp.MIN: min,
    BinOp.MAX: max,
    BinOp.AND: lambda a, b: bool(a) and bool(b),
    BinOp.OR: lambda a, b: bool(a) or bool(b),
    BinOp.SHR: lambda a, b: a >> b if 0 <= b < 64 else 0,
    BinOp.SHL: lambda a, b: a << b if 0 <= b < 64 else 0,
    BinOp.DIV: lambda a, b: a / b if b else 0,
}
_COMPARE = {">": "__gt__", ">=": "__ge__", "<": "__lt__", "<=": "__le__", "==": "__eq__"}


class _Checker:
    def __init__(self) -> None:
        self.env: dict[Var, int] = {}
        self.problems: list[str] = []

    def stmt(self, s: Any) -> None:
        if isinstance(s, For):
            for value in range(s.extent):
                self.env[s.var] = value
                self.stmt(s.body)
        elif isinstance(s, Seq):
            for part in s.stmts:
                self.stmt(part)
        elif isinstance(s, Allocate | AttrStmt):
            self.stmt(s.body)
        elif isinstance(s, IfThenElse):
            if self.expr(s.cond):
                self.stmt(s.then)
            elif s.otherwise is not None:
                self.stmt(s.otherwise)
        elif isinstance(s, Store):
            self.access("store", s.buffer, s.indices)
            self.expr(s.value)
        elif isinstance(s, CallIntrinsic):
            for arg in s.args:
                self.expr(arg)
        else:
            raise TypeError(f"ir_access cannot run {type(s).__name__}")

    def access(self, what: str, buffer: Any, indices: tuple) -> None:
        values = [self.expr(i) for i in indices]
        size = math.prod(buffer.shape)
        flat = values[0] if len(values) == 1 else None
        if flat is not None and len(buffer.shape) > 1:
            inside = 0 <= flat < size
        else:
            inside = all(0 <= v < n for v, n in zip(values, buffer.shape, strict=True))
        if not inside:
            where = ", ".join(f"{v.name}={x}" for v, x in self.env.items())
            self.problems.append(f"{what} {buffer.name}{values} outside {buffer.shape} ({where})")

    def expr(self, e: Any) -> Any:
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Var):
            return self.env[e]
        if isinstance(e, Binary):
            return _INT[e.op](self.expr(e.a), self.expr(e.b))
        if isinstance(e, Compare):
            a, b = self.expr(e.a), self.expr(e.b)
            return a != b if e.op.value == "!=" else getattr(a, _COMPARE[e.op.value])(b)
        if isinstance(e, Not):
            return not self.expr(e.a)
        if isinstance(e, Select):
            chosen = e.true_value if self.expr(e.cond) else e.false_value
            return self.expr(chosen)
        if isinstance(e, Cast):
            return self.expr(e.value)
        if isinstance(e, Load):
            self.access("load", e.buffer, e.indices)
            return 0
        if isinstance(e, BufferAddress):
            return 0
        for child in getattr(e, "args", ()):
            self.expr(child)
        return 0


def out_of_bounds(func: LoweredFunc, limit: int = 10) -> list[str]:
    """The first ``limit`` accesses of ``func`` outside their buffers (none: an empty list)."""
    checker = _Checker()
    checker.stmt(func.body)
    return checker.problems[:limit]
