"""The loop IR: buffers, loads and stores, loops, allocations, conditionals, intrinsic calls.

Small frozen dataclasses. Lowering turns a schedule into a :class:`LoweredFunc` whose body is a
statement tree; the passes in :mod:`compiler.lower` rewrite it; code generators consume it.
Buffers have identity; loads and stores index them with one expression per dimension until the
``flatten`` pass rewrites every access into one row-major offset. :func:`format_func` (what
``str`` of a :class:`LoweredFunc` gives) and :func:`format_stmt` write the IR as readable text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from compiler.expr import DType, Expr, Node, Var, as_expr
from compiler.printer import Names, format_access, format_expr

__all__ = [
    "Allocate",
    "AttrKey",
    "AttrStmt",
    "Buffer",
    "BufferAddress",
    "CallIntrinsic",
    "For",
    "ForKind",
    "IfThenElse",
    "Load",
    "LoweredFunc",
    "Scope",
    "Seq",
    "Stmt",
    "Store",
    "format_func",
    "format_stmt",
    "seq",
]


class Scope(Enum):
    """Where a buffer lives. The accelerator scopes name VTA's on-chip SRAMs."""

    GLOBAL = "global"
    SHARED = "shared"
    LOCAL = "local"
    ACCEL_INP = "local.inp_buffer"
    ACCEL_WGT = "local.wgt_buffer"
    ACCEL_ACC = "local.acc_buffer"


@dataclass(frozen=True, eq=False)
class Buffer:
    """A region of memory holding ``shape`` elements of ``dtype`` (identity semantics).

    ``strides`` are in elements, one per dimension; ``None`` means dense row-major. A stride
    may be a :class:`Var` (a function parameter), as in an intrinsic's operands.
    """

    name: str
    shape: tuple[int, ...]
    dtype: DType
    scope: Scope = Scope.GLOBAL
    strides: tuple[Expr, ...] | None = None

    @property
    def size(self) -> int:
        """Elements to allocate (dense buffers only)."""
        total = 1
        for extent in self.shape:
            total *= extent
        return total

    def element_strides(self) -> tuple[Expr, ...]:
        """Each dimension's stride in elements."""
        if self.strides is not None:
            return self.strides
        strides, step = [], 1
        for extent in reversed(self.shape):
            strides.append(as_expr(step))
            step *= extent
        return tuple(reversed(strides))

    def offset(self, indices: tuple[Expr, ...]) -> Expr:
        """The flat element offset of ``indices`` (unsimplified)."""
        if len(indices) == 1 and len(self.shape) != 1:
            return indices[0]  # already flat
        total: Expr | None = None
        for index, stride in zip(indices, self.element_strides(), strict=True):
            term = index * stride
            total = term if total is None else total + term
        return total if total is not None else as_expr(0)

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.shape}, {self.dtype}, {self.scope.value})"


@dataclass(frozen=True)
class _Element(Expr):
    """An element ``buffer[indices]`` (its type is the buffer's)."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    children: ClassVar = ("indices",)

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.buffer.dtype


@dataclass(frozen=True)
class Load(_Element):
    """The value of ``buffer[indices]``."""

    def text(self, names: Names) -> str:
        return format_access(names(self.buffer, self.buffer.name), self.indices, names)


@dataclass(frozen=True)
class BufferAddress(_Element):
    """The address of ``buffer[indices]``: an argument of an intrinsic call."""

    def text(self, names: Names) -> str:
        return "&" + format_access(names(self.buffer, self.buffer.name), self.indices, names)


class Stmt(Node):
    """A statement of the loop IR."""


class ForKind(Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    VTHREAD = "vthread"
    THREAD_BINDING = "thread_binding"


@dataclass(frozen=True)
class For(Stmt):
    """``for var in 0 .. extent - 1`` run as ``kind``; ``thread`` names a bound GPU axis."""

    var: Var
    extent: int
    kind: ForKind
    body: Stmt
    thread: str = ""
    children: ClassVar = ("body",)


@dataclass(frozen=True)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]
    children: ClassVar = ("stmts",)


@dataclass(frozen=True)
class Store(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
    children: ClassVar = ("indices", "value")


@dataclass(frozen=True)
class Allocate(Stmt):
    """``buffer`` exists (uninitialised) while ``body`` runs."""

    buffer: Buffer
    body: Stmt
    children: ClassVar = ("body",)


@dataclass(frozen=True)
class IfThenElse(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Stmt | None = None
    children: ClassVar = ("cond", "then", "otherwise")


class AttrKey(Enum):
    """What an :class:`AttrStmt` says about its body."""

    PRAGMA = "pragma"
    TENSORIZE = "tensorize"
    STAGE = "stage"  # the statements of the stage named ``value`` (kept when a buffer is renamed)


@dataclass(frozen=True)
class AttrStmt(Stmt):
    """An annotation on ``body``: a pragma ``(name, value)`` or a tensorize request."""

    key: AttrKey
    value: Any
    body: Stmt
    children: ClassVar = ("body",)


@dataclass(frozen=True)
class CallIntrinsic(Stmt):
    """Run the declared intrinsic ``intrin`` (a :class:`compiler.tensor.TensorIntrin`).

    ``args`` holds one :class:`BufferAddress` per operand (output first, then the inputs in
    the declaration's order), followed by each operand's row strides in elements.
    """

    intrin: Any
    args: tuple[Expr, ...]
    children: ClassVar = ("args",)


@dataclass(frozen=True)
class LoweredFunc:
    """A function over the buffers ``params`` (in call order) running ``body``."""

    name: str
    params: tuple[Buffer, ...]
    body: Stmt

    def __str__(self) -> str:
        return format_func(self)


def seq(*stmts: Stmt | None) -> Stmt:
    """The statements in order, flattening nested sequences and dropping ``None``."""
    flat: list[Stmt] = []
    for stmt in stmts:
        if stmt is None:
            continue
        flat.extend(stmt.stmts if isinstance(stmt, Seq) else (stmt,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


# -------------------------------------------------------------------------------- text form
def format_stmt(stmt: Stmt, names: Names | None = None, indent: int = 0) -> str:
    """``stmt`` as indented text."""
    lines: list[str] = []
    _stmt(stmt, names or Names(), indent, lines)
    return "\n".join(lines)


def _stmt(s: Stmt, names: Names, depth: int, out: list[str]) -> None:
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
        target = format_access(names(s.buffer, s.buffer.name), s.indices, names)
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
    names = Names()
    params = ", ".join(
        f"{names(b, b.name)}: {b.dtype}[{', '.join(map(str, b.shape))}]" for b in func.params
    )
    return f"func {func.name}({params}):\n{format_stmt(func.body, names, 1)}\n"
