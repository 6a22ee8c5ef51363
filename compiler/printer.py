"""A readable text form of expressions and loop IR (what ``compiler.lower`` prints).

Distinct variables that share a name are told apart by a suffix (``i``, ``i_1``), so the text
is unambiguous.
"""

from __future__ import annotations

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
from compiler.ir import (
    Allocate,
    AttrKey,
    AttrStmt,
    BufferAddress,
    CallIntrinsic,
    For,
    ForKind,
    IfThenElse,
    Load,
    LoweredFunc,
    Seq,
    Stmt,
    Store,
)

__all__ = ["format_expr", "format_func", "format_stmt"]

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


class _Names:
    """Gives each distinct variable (or buffer) a unique printed name."""

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


def format_expr(expr: Expr, names: _Names | None = None) -> str:
    """``expr`` as text."""
    return _expr(expr, names or _Names())[0]


def _expr(e: Expr, names: _Names) -> tuple[str, int]:
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
        return _access(names(e.tensor, e.tensor.name), e.indices, names), _ATOM
    if isinstance(e, Load):
        return _access(names(e.buffer, e.buffer.name), e.indices, names), _ATOM
    if isinstance(e, BufferAddress):
        return "&" + _access(names(e.buffer, e.buffer.name), e.indices, names), _ATOM
    if isinstance(e, Reduce):
        axes = ", ".join(names(a.var, a.name) for a in e.axes)
        return f"{e.combiner.name.lower()}({_expr(e.source, names)[0]}, axis=[{axes}])", _ATOM
    raise TypeError(f"cannot print {type(e).__name__}")


def _child(e: Expr, names: _Names, level: int) -> str:
    text, own = _expr(e, names)
    return f"({text})" if own < level else text


def _access(name: str, indices: tuple[Expr, ...], names: _Names) -> str:
    return f"{name}[{', '.join(_expr(i, names)[0] for i in indices)}]"


def format_stmt(stmt: Stmt, names: _Names | None = None, indent: int = 0) -> str:
    """``stmt`` as indented text."""
    lines: list[str] = []
    _stmt(stmt, names or _Names(), indent, lines)
    return "\n".join(lines)


def _stmt(s: Stmt, names: _Names, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    if isinstance(s, Seq):
        for part in s.stmts:
            _stmt(part, names, depth, out)
    elif isinstance(s, For):
        kind = "" if s.kind is ForKind.SERIAL else f"{s.kind.value} "
        thread = f" bind {s.thread}" if s.thread else ""
        out.append(f"{pad}{kind}for {names(s.var, s.var.name)} in 0..{s.extent}{thread}:")
        _stmt(s.body, names, depth + 1, out)
    elif isinstance(s, Store):
        target = _access(names(s.buffer, s.buffer.name), s.indices, names)
        out.append(f"{pad}{target} = {format_expr(s.value, names)}")
    elif isinstance(s, Allocate):
        b = s.buffer
        shape = ", ".join(map(str, b.shape))
        out.append(f"{pad}allocate {names(b, b.name)}: {b.dtype}[{shape}] {b.scope.value}")
        _stmt(s.body, names, depth, out)
    elif isinstance(s, IfThenElse):
        out.append(f"{pad}if {format_expr(s.cond, names)}:")
        _stmt(s.then, names, depth + 1, out)
        if s.otherwise is not None:
            out.append(f"{pad}else:")
            _stmt(s.otherwise, names, depth + 1, out)
    elif isinstance(s, AttrStmt):
        if s.key is AttrKey.TENSORIZE:
            value = s.value.name
        elif s.key is AttrKey.STAGE:
            value = s.value
        else:
            value = f"{s.value[0]}={s.value[1]!r}"
        out.append(f"{pad}// {s.key.value} {value}")
        _stmt(s.body, names, depth, out)
    elif isinstance(s, CallIntrinsic):
        args = ", ".join(format_expr(a, names) for a in s.args)
        out.append(f"{pad}call {s.intrin.name}({args})")
    elif hasattr(
        s, "describe"
    ):  # a statement of a later layer (the accelerator's) describes itself
        out.append(pad + s.describe(lambda e: format_expr(e, names)))
    else:
        raise TypeError(f"cannot print {type(s).__name__}")


def format_func(func: LoweredFunc) -> str:
    """A lowered function as text: its signature, then its body."""
    names = _Names()
    params = ", ".join(
        f"{names(b, b.name)}: {b.dtype}[{', '.join(map(str, b.shape))}]" for b in func.params
    )
    return f"func {func.name}({params}):\n{format_stmt(func.body, names, 1)}\n"
