"""A readable text form of expressions (the loop IR's statements print through it, in
:func:`compiler.loop_ir.format_stmt`: what ``compiler.lower`` prints).

Distinct variables that share a name are told apart by a suffix (``i``, ``i_1``), so the text
is unambiguous. An expression of a later layer (a loop-IR load) prints itself: it has a
``text(names)`` method (:class:`Printable`), given the :class:`Names` of the whole text.
"""

from __future__ import annotations

from typing import Protocol

from compiler.expr import (
    Binary,
    BinOp,
    Call,
    Cast,
    Compare,
    Const,
    DType,
    Expr,
    IterVar,
    Not,
    Reduce,
    Select,
    TensorRead,
    Var,
)

__all__ = ["Names", "Printable", "format_access", "format_expr"]

#: Binding strength of each infix operator, as in C: shifts between comparisons and ``+``.
_PRECEDENCE = {
    BinOp.OR: 1,
    BinOp.AND: 2,
    BinOp.SHR: 4,
    BinOp.SHL: 4,
    BinOp.ADD: 5,
    BinOp.SUB: 5,
    BinOp.MUL: 6,
    BinOp.DIV: 6,
    BinOp.FLOOR_DIV: 6,
    BinOp.FLOOR_MOD: 6,
}
_COMPARE = 3
_ATOM = 9


class Names:
    """Gives each distinct variable (or buffer) a unique printed name: ``names(obj, name)``."""

    def __init__(self) -> None:
        self._given: dict[int, str] = {}
        self._taken: set[str] = set()

    def __call__(self, obj: object, name: str) -> str:
        key = id(obj)
        if key not in self._given:
            unique, suffix = name, 0
            while unique in self._taken:
                suffix += 1
                unique = f"{name}_{suffix}"
            self._given[key] = unique
            self._taken.add(unique)
        return self._given[key]


class Printable(Protocol):
    """An expression of a later layer that prints itself (an atom: it never needs parentheses)."""

    def text(self, names: Names) -> str: ...


def format_expr(expr: Expr, names: Names | None = None) -> str:
    """``expr`` as text."""
    return _expr(expr, names or Names())[0]


def _expr(e: Expr, names: Names) -> tuple[str, int]:
    if isinstance(e, IterVar):
        e = e.var
    if isinstance(e, Var):
        return names(e, e.name), _ATOM
    if isinstance(e, Const):
        if e.dtype is DType.BOOL:
            return ("true" if e.value else "false"), _ATOM
        if e.dtype.is_float:
            return f"{e.value!r}f", _ATOM
        text = str(e.value) if e.dtype is DType.INT32 else f"{e.dtype}({e.value})"
        return text, _ATOM if e.value >= 0 else 0
    if isinstance(e, Binary):
        if e.op in (BinOp.MIN, BinOp.MAX):
            return f"{e.op.value}({_expr(e.a, names)[0]}, {_expr(e.b, names)[0]})", _ATOM
        level = _PRECEDENCE[e.op]
        return f"{_child(e.a, names, level)} {e.op.value} {_child(e.b, names, level + 1)}", level
    if isinstance(e, Compare):
        left = _child(e.a, names, _COMPARE + 1)
        return f"{left} {e.op.value} {_child(e.b, names, _COMPARE + 1)}", _COMPARE
    if isinstance(e, Not):
        return f"!{_child(e.a, names, _ATOM)}", _ATOM
    if isinstance(e, Select):
        parts = ", ".join(_expr(x, names)[0] for x in (e.cond, e.true_value, e.false_value))
        return f"select({parts})", _ATOM
    if isinstance(e, Cast):
        return f"{e.dtype}({_expr(e.value, names)[0]})", _ATOM
    if isinstance(e, Call):
        return f"{e.func.value}({', '.join(_expr(a, names)[0] for a in e.args)})", _ATOM
    if isinstance(e, TensorRead):
        return format_access(names(e.tensor, e.tensor.name), e.indices, names), _ATOM
    if isinstance(e, Reduce):
        axes = ", ".join(names(a.var, a.name) for a in e.axes)
        return f"{e.combiner.name.lower()}({_expr(e.source, names)[0]}, axis=[{axes}])", _ATOM
    if hasattr(e, "text"):  # a Printable
        return e.text(names), _ATOM
    raise TypeError(f"cannot print {type(e).__name__}")


def _child(e: Expr, names: Names, level: int) -> str:
    text, own = _expr(e, names)
    return f"({text})" if own < level else text


def format_access(name: str, indices: tuple[Expr, ...], names: Names) -> str:
    """``name[indices]``: an element of the tensor or buffer printed as ``name``."""
    return f"{name}[{', '.join(_expr(i, names)[0] for i in indices)}]"
