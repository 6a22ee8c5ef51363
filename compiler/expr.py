"""Scalar expressions shared by tensor expressions and the loop IR.

Expressions are frozen dataclasses compared structurally, except :class:`Var` and
:class:`IterVar`, which have identity (two loop variables named ``i`` are different variables).
Python operators build nodes (``a + 1``, ``i * 4 + j``, ``x < y``); a Python number adopts the
dtype of the expression it meets. Mixing dtypes needs an explicit :func:`cast` (or
``expr.astype(dtype)``), integer division is written ``//`` (floor division, with ``%`` the
matching floor modulo), and ``>>`` / ``<<`` shift integers (see :class:`BinOp`).

Each node class lists its sub-expression fields in ``children``, which drives the generic
traversals in :mod:`compiler.visit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol

import numpy as np

from compiler.errors import CompileError

__all__ = [
    "BinOp",
    "Binary",
    "Call",
    "Cast",
    "CmpOp",
    "Compare",
    "Const",
    "DType",
    "Expr",
    "IterKind",
    "IterVar",
    "MathFunc",
    "Node",
    "Not",
    "Producer",
    "Reduce",
    "ReduceOp",
    "Select",
    "TensorRead",
    "Var",
    "as_expr",
    "const",
]


class DType(Enum):
    """Element types: ``(name, bits, is_float)``. ``BOOL`` is the type of conditions."""

    BOOL = ("bool", 1, False)
    INT8 = ("int8", 8, False)
    INT16 = ("int16", 16, False)
    INT32 = ("int32", 32, False)
    FLOAT32 = ("float32", 32, True)

    @property
    def bits(self) -> int:
        return self.value[1]

    @property
    def is_float(self) -> bool:
        return self.value[2]

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.value[0])

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    def __str__(self) -> str:
        return self.value[0]

    @classmethod
    def of(cls, spec: DType | str | np.dtype | type) -> DType:
        """The dtype named by ``spec`` (``"float32"``, ``np.int8``, a :class:`DType`)."""
        if isinstance(spec, DType):
            return spec
        try:
            name = np.dtype(spec).name
        except TypeError:
            name = str(spec)
        for dtype in cls:
            if dtype.value[0] == name:
                return dtype
        supported = ", ".join(d.value[0] for d in cls if d is not cls.BOOL)
        raise CompileError(f"unsupported dtype {spec!r} (supported: {supported})")


class Node:
    """Base of every expression and statement: ``children`` names the sub-node fields."""

    children: ClassVar[tuple[str, ...]] = ()


class Expr(Node):
    """A scalar expression; subclasses define ``dtype``."""

    dtype: DType

    def __add__(self, other: Any) -> Expr:
        return _binary(BinOp.ADD, self, other)

    def __radd__(self, other: Any) -> Expr:
        return _binary(BinOp.ADD, other, self)

    def __sub__(self, other: Any) -> Expr:
        return _binary(BinOp.SUB, self, other)

    def __rsub__(self, other: Any) -> Expr:
        return _binary(BinOp.SUB, other, self)

    def __mul__(self, other: Any) -> Expr:
        return _binary(BinOp.MUL, self, other)

    def __rmul__(self, other: Any) -> Expr:
        return _binary(BinOp.MUL, other, self)

    def __truediv__(self, other: Any) -> Expr:
        return _binary(BinOp.DIV, self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return _binary(BinOp.DIV, other, self)

    def __floordiv__(self, other: Any) -> Expr:
        return _binary(BinOp.FLOOR_DIV, self, other)

    def __rfloordiv__(self, other: Any) -> Expr:
        return _binary(BinOp.FLOOR_DIV, other, self)

    def __mod__(self, other: Any) -> Expr:
        return _binary(BinOp.FLOOR_MOD, self, other)

    def __rmod__(self, other: Any) -> Expr:
        return _binary(BinOp.FLOOR_MOD, other, self)

    def __neg__(self) -> Expr:
        return _binary(BinOp.SUB, 0, self)

    def __rshift__(self, other: Any) -> Expr:
        return _shift(BinOp.SHR, self, other)

    def __rrshift__(self, other: Any) -> Expr:
        return _shift(BinOp.SHR, other, self)

    def __lshift__(self, other: Any) -> Expr:
        return _shift(BinOp.SHL, self, other)

    def __rlshift__(self, other: Any) -> Expr:
        return _shift(BinOp.SHL, other, self)

    def __lt__(self, other: Any) -> Expr:
        return _compare(CmpOp.LT, self, other)

    def __le__(self, other: Any) -> Expr:
        return _compare(CmpOp.LE, self, other)

    def __gt__(self, other: Any) -> Expr:
        return _compare(CmpOp.GT, self, other)

    def __ge__(self, other: Any) -> Expr:
        return _compare(CmpOp.GE, self, other)

    def __and__(self, other: Any) -> Expr:
        return _logical(BinOp.AND, self, other)

    def __or__(self, other: Any) -> Expr:
        return _logical(BinOp.OR, self, other)

    def __invert__(self) -> Expr:
        value = as_expr(self)
        if value.dtype is not DType.BOOL:
            raise CompileError(f"'~' needs a condition, got {value.dtype}", op="not")
        return Not(value)

    def __bool__(self) -> bool:
        raise CompileError(
            "an expression has no truth value: use te.select / te.all_of instead of Python "
            "'if', 'and', 'or'",
        )

    def astype(self, dtype: DType | str) -> Expr:
        """This expression converted to ``dtype`` (TVM's spelling of ``te.cast(dtype, expr)``);
        the expression itself (an :class:`IterVar`'s variable) when it already has ``dtype``."""
        value = as_expr(self)
        target = DType.of(dtype)
        return value if value.dtype is target else Cast(target, value)


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A loop or index variable (identity semantics)."""

    name: str
    dtype: DType = DType.INT32

    def __repr__(self) -> str:
        return f"Var({self.name})"


class IterKind(Enum):
    """Whether an iteration axis spans the output (``SPATIAL``) or is summed over (``REDUCE``)."""

    SPATIAL = "spatial"
    REDUCE = "reduce"


@dataclass(frozen=True, eq=False)
class IterVar(Expr):
    """An iteration axis: ``var`` runs over ``begin .. begin + extent - 1``.

    Usable directly in expressions (it stands for its ``var``).
    """

    var: Var
    extent: int
    kind: IterKind = IterKind.SPATIAL
    begin: int = 0

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.var.dtype

    def __repr__(self) -> str:
        return f"IterVar({self.name}, {self.begin}..{self.begin + self.extent})"


@dataclass(frozen=True)
class Const(Expr):
    value: int | float
    dtype: DType

    def __repr__(self) -> str:
        return f"Const({self.value}, {self.dtype})"


class BinOp(Enum):
    """Binary operators; both operands have the result's dtype.

    ``SHR`` (``a >> b``) is an arithmetic right shift and ``SHL`` (``a << b``) a left shift that
    wraps in the dtype; both take integers only. The amount is read as unsigned, as numpy's
    ``right_shift`` and ``left_shift`` read it: an amount of ``bits`` or more, or a negative one,
    gives the sign fill (0 or -1) for ``>>`` and 0 for ``<<``. A constant amount outside
    ``0 .. bits - 1`` is refused when the expression is built; one only known at run time (or
    revealed by simplification) follows that rule.
    """

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    FLOOR_DIV = "//"
    FLOOR_MOD = "%"
    MIN = "min"
    MAX = "max"
    AND = "&&"
    OR = "||"
    SHR = ">>"
    SHL = "<<"


@dataclass(frozen=True)
class Binary(Expr):
    op: BinOp
    a: Expr
    b: Expr
    children: ClassVar = ("a", "b")

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.a.dtype


class CmpOp(Enum):
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="


@dataclass(frozen=True)
class Compare(Expr):
    op: CmpOp
    a: Expr
    b: Expr
    children: ClassVar = ("a", "b")
    dtype: ClassVar = DType.BOOL


@dataclass(frozen=True)
class Not(Expr):
    a: Expr
    children: ClassVar = ("a",)
    dtype: ClassVar = DType.BOOL


@dataclass(frozen=True)
class Select(Expr):
    """``true_value if cond else false_value``; a load in the branch not taken is harmless
    (the code generator never reads outside a buffer for it)."""

    cond: Expr
    true_value: Expr
    false_value: Expr
    children: ClassVar = ("cond", "true_value", "false_value")

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.true_value.dtype


@dataclass(frozen=True)
class Cast(Expr):
    """Convert ``value`` to ``dtype`` (float to int truncates toward zero; int narrowing wraps)."""

    dtype: DType
    value: Expr
    children: ClassVar = ("value",)


class MathFunc(Enum):
    """Float math functions; each value is the LLVM intrinsic's name (``llvm.<value>``)."""

    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    ROUND = "roundeven"  # to nearest, ties to even (numpy's rint)


@dataclass(frozen=True)
class Call(Expr):
    """A float math function applied to ``args``."""

    func: MathFunc
    args: tuple[Expr, ...]
    children: ClassVar = ("args",)

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.args[0].dtype


class Producer(Protocol):
    """What a :class:`TensorRead` reads: a tensor of the layer above
    (:class:`compiler.tensor.Tensor`), known here only by its name, shape and element type."""

    @property
    def name(self) -> str: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> DType: ...


@dataclass(frozen=True)
class TensorRead(Expr):
    """``tensor[indices]`` in a tensor expression (lowering turns it into a buffer load)."""

    tensor: Producer
    indices: tuple[Expr, ...]
    children: ClassVar = ("indices",)

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.tensor.dtype


class ReduceOp(Enum):
    """A commutative reduction: its combining operator."""

    SUM = BinOp.ADD
    MAX = BinOp.MAX
    MIN = BinOp.MIN

    def identity(self, dtype: DType) -> Const:
        """The value the reduction starts from."""
        if self is ReduceOp.SUM:
            return Const(0.0 if dtype.is_float else 0, dtype)
        if dtype.is_float:
            return Const(float("-inf") if self is ReduceOp.MAX else float("inf"), dtype)
        info = np.iinfo(dtype.numpy)
        return Const(int(info.min) if self is ReduceOp.MAX else int(info.max), dtype)


@dataclass(frozen=True)
class Reduce(Expr):
    """``combiner`` of ``source`` over the reduction ``axes``."""

    combiner: ReduceOp
    source: Expr
    axes: tuple[IterVar, ...]
    children: ClassVar = ("source",)

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.source.dtype


# ------------------------------------------------------------------------------ construction
def const(value: int | float | bool, dtype: DType | str) -> Const:
    """A constant of ``dtype``; integers must fit the type."""
    dtype = DType.of(dtype)
    if dtype is DType.BOOL:
        return Const(int(bool(value)), dtype)
    if dtype.is_float:
        return Const(float(np.float32(value)), dtype)
    if isinstance(value, float) and not float(value).is_integer():
        raise CompileError(f"constant {value!r} is not an integer, for {dtype}", op="const")
    info = np.iinfo(dtype.numpy)
    if not info.min <= int(value) <= info.max:
        raise CompileError(f"constant {value} does not fit {dtype}", op="const")
    return Const(int(value), dtype)


def as_expr(value: Any, like: DType | None = None) -> Expr:
    """``value`` as an expression: Python numbers become constants of ``like`` (else int32 /
    float32), an :class:`IterVar` its variable."""
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool | np.bool_):
        return const(value, DType.BOOL)
    if isinstance(value, int | np.integer):
        return const(int(value), like if like is not None else DType.INT32)
    if isinstance(value, float | np.floating):
        if like is not None and not like.is_float:
            raise CompileError(f"float constant {value!r} meets a {like} expression: cast it")
        return const(float(value), DType.FLOAT32)
    raise CompileError(f"cannot use {type(value).__name__} {value!r} in an expression")


def _operands(op: str, a: Any, b: Any) -> tuple[Expr, Expr]:
    a_is_expr = isinstance(a, Expr)
    b_is_expr = isinstance(b, Expr)
    left = as_expr(a, as_expr(b).dtype if b_is_expr and not a_is_expr else None)
    right = as_expr(b, left.dtype if not b_is_expr else None)
    if left.dtype is not right.dtype:
        raise CompileError(
            f"operands of '{op}' have dtypes {left.dtype} and {right.dtype}: add an explicit cast",
            op=op,
        )
    return left, right


def _binary(op: BinOp, a: Any, b: Any) -> Expr:
    left, right = _operands(op.value, a, b)
    if left.dtype is DType.BOOL:
        raise CompileError(f"'{op.value}' does not apply to conditions", op=op.value)
    if op is BinOp.DIV and not left.dtype.is_float:
        raise CompileError(
            f"'/' is float division; use '//' for {left.dtype} (floor division)", op="/"
        )
    if op in (BinOp.FLOOR_DIV, BinOp.FLOOR_MOD) and left.dtype.is_float:
        raise CompileError(f"'{op.value}' needs integers, got {left.dtype}", op=op.value)
    return Binary(op, left, right)


def _shift(op: BinOp, a: Any, b: Any) -> Expr:
    dtype = (a if isinstance(a, Expr) else as_expr(b)).dtype
    if dtype.is_float or dtype is DType.BOOL:
        raise CompileError(f"'{op.value}' needs integers, got {dtype}", op=op.value)
    amount = b.value if isinstance(b, Const) else b
    if isinstance(amount, int | np.integer) and not 0 <= amount < dtype.bits:
        raise CompileError(
            f"shift amount {amount} is outside 0..{dtype.bits - 1} for {dtype}", op=op.value
        )
    return Binary(op, *_operands(op.value, a, b))


def _compare(op: CmpOp, a: Any, b: Any) -> Expr:
    left, right = _operands(op.value, a, b)
    return Compare(op, left, right)


def _logical(op: BinOp, a: Any, b: Any) -> Expr:
    left, right = _operands(op.value, a, b)
    if left.dtype is not DType.BOOL:
        raise CompileError(f"'{op.value}' needs conditions, got {left.dtype}", op=op.value)
    return Binary(op, left, right)
