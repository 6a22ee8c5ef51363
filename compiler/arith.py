"""Integer arithmetic on expressions: bounds, linear forms, simplification, covering regions.

Integer (int32) index arithmetic is put in a canonical linear form, ``sum(coef * atom) + c``,
so ``(i*8 + 7) - i*8`` becomes ``7``; floor division and modulo by a positive constant use the
exact identities ``(a*c + b) // c == a + b // c`` and ``(a*c + b) % c == b % c`` and the ranges
of loop variables (``x // 8 == 0`` and ``x % 8 == x`` when ``0 <= x < 8``). Constants fold with
the wrap-around of their dtype (shifts as :func:`fold_shift` says); ``x >> 0`` and ``x << 0``
are ``x``; comparisons and selects fold when the ranges decide them.

Bound inference (:func:`covering_region`) gives the region of a producer that a consumer's inner
loops read: a stage computed inside its consumer's loop ``axis`` needs, per dimension, the
smallest interval covering every read of it while the loops outside ``axis`` (and ``axis``
itself) are fixed and the loops inside run over their ranges. The interval's start is a symbolic
expression in the fixed loop variables; its length must be a constant (it sizes a buffer). When
that cannot be shown, the whole dimension is used instead, which is always correct.

Only scalar expressions are read here (:mod:`compiler.expr`); the ``simplify`` pass over the loop
IR is :mod:`compiler.passes.simplify`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from compiler.errors import CompileError
from compiler.expr import (
    Binary,
    BinOp,
    Cast,
    CmpOp,
    Compare,
    Const,
    DType,
    Expr,
    Node,
    Not,
    Select,
    Var,
)
from compiler.visit import free_vars, transform

__all__ = [
    "COMPARES",
    "FOLDS",
    "ONE",
    "Interval",
    "Ranges",
    "const_bounds",
    "covering_region",
    "fits",
    "fold_shift",
    "from_linear",
    "linear",
    "simplify_expr",
    "simplify_node",
]

#: Inclusive ``(lo, hi)`` range of each loop variable.
Ranges = Mapping[Var, tuple[int, int]]
Bound = tuple[int | None, int | None]
#: The constant term's key in a linear form.
ONE = "1"

#: Each foldable operator on Python numbers (before the dtype's wrap-around).
FOLDS = {
    BinOp.ADD: lambda a, b: a + b,
    BinOp.SUB: lambda a, b: a - b,
    BinOp.MUL: lambda a, b: a * b,
    BinOp.MIN: min,
    BinOp.MAX: max,
    BinOp.AND: lambda a, b: int(bool(a) and bool(b)),
    BinOp.OR: lambda a, b: int(bool(a) or bool(b)),
}
#: Each comparison on Python numbers.
COMPARES = {
    CmpOp.LT: lambda a, b: a < b,
    CmpOp.LE: lambda a, b: a <= b,
    CmpOp.GT: lambda a, b: a > b,
    CmpOp.GE: lambda a, b: a >= b,
    CmpOp.EQ: lambda a, b: a == b,
    CmpOp.NE: lambda a, b: a != b,
}


def fold_shift(op: BinOp, value: int, amount: int, bits: int) -> int:
    """``value >> amount`` (``SHR``) or ``value << amount`` (``SHL``) of a ``bits``-wide integer,
    before wrapping to the dtype: an ``amount`` outside ``0 .. bits - 1`` (a negative one
    included, as numpy reads it) shifts right by ``bits - 1`` (the sign fill) or gives 0."""
    if op is BinOp.SHR:
        return value >> (amount if 0 <= amount < bits else bits - 1)
    return value << amount if 0 <= amount < bits else 0


def _wrap(value: int | float, dtype: DType) -> int | float:
    if dtype.is_float:
        return float(np.float32(value))
    if dtype is DType.BOOL:
        return int(bool(value))
    bits = dtype.bits
    value = int(value) & ((1 << bits) - 1)
    return value - (1 << bits) if value >> (bits - 1) else value


# --------------------------------------------------------------------------------- bounds
def const_bounds(expr: Expr, ranges: Ranges) -> Bound:
    """Constant inclusive bounds of an integer ``expr`` given variable ``ranges``."""
    if isinstance(expr, Const):
        return (expr.value, expr.value)
    if isinstance(expr, Var):
        return ranges.get(expr, (None, None))
    if isinstance(expr, Binary) and expr.dtype is DType.INT32:
        a = const_bounds(expr.a, ranges)
        b = const_bounds(expr.b, ranges)
        if expr.op in (BinOp.SHR, BinOp.SHL):
            return _shift_bounds(expr.op, a, b, expr.dtype)
        return _binary_bounds(expr.op, a, b)
    if isinstance(expr, Select):
        t = const_bounds(expr.true_value, ranges)
        f = const_bounds(expr.false_value, ranges)
        lo = None if t[0] is None or f[0] is None else min(t[0], f[0])
        hi = None if t[1] is None or f[1] is None else max(t[1], f[1])
        return (lo, hi)
    if not expr.dtype.is_float and expr.dtype is not DType.BOOL:
        info = np.iinfo(expr.dtype.numpy)
        if isinstance(expr, Cast) and not expr.value.dtype.is_float:
            source = np.iinfo(expr.value.dtype.numpy)
            if source.bits <= info.bits:
                return (int(source.min), int(source.max))
        if expr.dtype.bits < 32:
            return (int(info.min), int(info.max))
    return (None, None)


def _binary_bounds(op: BinOp, a: Bound, b: Bound) -> Bound:
    known = None not in a and None not in b
    if op is BinOp.ADD:
        return (_add(a[0], b[0]), _add(a[1], b[1]))
    if op is BinOp.SUB:
        return (_add(a[0], _neg(b[1])), _add(a[1], _neg(b[0])))
    if op is BinOp.MUL and known:
        products = [x * y for x in a for y in b]
        return (min(products), max(products))
    if op in (BinOp.MIN, BinOp.MAX):
        pick = min if op is BinOp.MIN else max
        lo = None if None in (a[0], b[0]) else pick(a[0], b[0])
        hi = None if None in (a[1], b[1]) else pick(a[1], b[1])
        return (lo, hi)
    if op in (BinOp.FLOOR_DIV, BinOp.FLOOR_MOD) and b[0] is not None and b[0] == b[1]:
        c = b[0]
        if c > 0:
            if op is BinOp.FLOOR_DIV:
                return (
                    None if a[0] is None else a[0] // c,
                    None if a[1] is None else a[1] // c,
                )
            if None not in a and a[0] // c == a[1] // c:
                return (a[0] % c, a[1] % c)
            return (0, c - 1)
    return (None, None)


def _shift_bounds(op: BinOp, a: Bound, b: Bound, dtype: DType) -> Bound:
    """Bounds of ``a >> b`` or ``a << b`` (amounts taken as :func:`fold_shift` takes them). Both
    are monotonic in the value and in the amount, so the ends of the ranges decide. A left
    shift that may wrap has unknown bounds."""
    if None in a or None in b:
        return (None, None)
    bits = dtype.bits
    outside = b[0] < 0 or b[1] >= bits  # some amount shifts every bit out
    lo, hi = max(b[0], 0), min(b[1], bits - 1)
    amounts = (lo, hi) if lo <= hi else ()  # the ends of the amounts in range
    if op is BinOp.SHR:
        results = [x >> s for x in a for s in (*amounts, *((bits - 1,) if outside else ()))]
        return (min(results), max(results))
    results = [x << s for x in a for s in amounts] + ([0] if outside else [])
    info = np.iinfo(dtype.numpy)
    if min(results) < info.min or max(results) > info.max:
        return (None, None)
    return (min(results), max(results))


def _add(x: int | None, y: int | None) -> int | None:
    return None if x is None or y is None else x + y


def _neg(x: int | None) -> int | None:
    return None if x is None else -x


# ---------------------------------------------------------------------------- linear forms
def linear(expr: Expr) -> dict[object, int]:
    """``expr`` (int32, already simplified) as ``{atom: coefficient}``; ``ONE`` keys the
    constant. Atoms are variables or non-linear sub-expressions."""
    if isinstance(expr, Const):
        return {ONE: int(expr.value)} if expr.value else {}
    if isinstance(expr, Binary) and expr.op in (BinOp.ADD, BinOp.SUB):
        result = dict(linear(expr.a))
        sign = 1 if expr.op is BinOp.ADD else -1
        for atom, coef in linear(expr.b).items():
            result[atom] = result.get(atom, 0) + sign * coef
        return {atom: coef for atom, coef in result.items() if coef}
    if isinstance(expr, Binary) and expr.op is BinOp.MUL:
        for scale, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(scale, Const):
                return {
                    atom: coef * int(scale.value)
                    for atom, coef in linear(other).items()
                    if coef * int(scale.value)
                }
    return {expr: 1}


def from_linear(form: Mapping[object, int]) -> Expr:
    """The expression of a linear form: terms in insertion order, the constant last."""
    result: Expr | None = None
    for atom, coef in form.items():
        if atom == ONE or coef == 0:
            continue
        magnitude = abs(coef)
        term = atom if magnitude == 1 else Binary(BinOp.MUL, atom, Const(magnitude, DType.INT32))
        if result is None:
            result = term if coef > 0 else Binary(BinOp.SUB, Const(0, DType.INT32), term)
        else:
            result = Binary(BinOp.ADD if coef > 0 else BinOp.SUB, result, term)
    constant = form.get(ONE, 0)
    if result is None:
        return Const(constant, DType.INT32)
    if constant:
        op = BinOp.ADD if constant > 0 else BinOp.SUB
        result = Binary(op, result, Const(abs(constant), DType.INT32))
    return result


def _linear_bounds(form: Mapping[object, int], ranges: Ranges) -> Bound:
    lo: int | None = 0
    hi: int | None = 0
    for atom, coef in form.items():
        if atom == ONE:
            a_lo = a_hi = 1
        else:
            a_lo, a_hi = const_bounds(atom, ranges)
        if coef < 0:
            a_lo, a_hi = a_hi, a_lo
        lo = None if lo is None or a_lo is None else lo + coef * a_lo
        hi = None if hi is None or a_hi is None else hi + coef * a_hi
    return (lo, hi)


# ----------------------------------------------------------------------------- expressions
def simplify_expr(expr: Expr, ranges: Ranges | None = None) -> Expr:
    """An equivalent, simpler ``expr`` given the inclusive ``ranges`` of its variables."""
    ranges = ranges if ranges is not None else {}
    return transform(expr, lambda node: simplify_node(node, ranges))


def simplify_node(node: Node, ranges: Ranges) -> Expr | None:
    """One step of :func:`simplify_expr`: a simpler form of ``node``, whose children are
    already simplified, or None to keep it (the contract of :func:`compiler.visit.transform`)."""
    if isinstance(node, Binary):
        return _rewrite_binary(node, ranges)
    if isinstance(node, Compare):
        return _rewrite_compare(node, ranges)
    if isinstance(node, Not) and isinstance(node.a, Const):
        return Const(int(not node.a.value), DType.BOOL)
    if isinstance(node, Select):
        if isinstance(node.cond, Const):
            return node.true_value if node.cond.value else node.false_value
        if node.true_value == node.false_value:
            return node.true_value
    if isinstance(node, Cast):
        if node.value.dtype is node.dtype:
            return node.value
        if isinstance(node.value, Const):
            value = node.value.value
            if not node.dtype.is_float and node.value.dtype.is_float:
                value = int(np.trunc(value)) if np.isfinite(value) else 0
            return Const(_wrap(value, node.dtype), node.dtype)
    return None


def _rewrite_binary(node: Binary, ranges: Ranges) -> Expr | None:
    a, b, op, dtype = node.a, node.b, node.op, node.dtype
    if isinstance(a, Const) and isinstance(b, Const):
        return _fold(op, a, b, dtype)
    if op in (BinOp.SHR, BinOp.SHL):
        return a if isinstance(b, Const) and b.value == 0 else None
    if op in (BinOp.AND, BinOp.OR):
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Const):
                keeps = bool(x.value) == (op is BinOp.AND)
                return y if keeps else x
        return None
    if dtype is not DType.INT32:
        return _float_identities(node)
    if op in (BinOp.ADD, BinOp.SUB, BinOp.MUL):
        return from_linear(linear(node))
    if op in (BinOp.FLOOR_DIV, BinOp.FLOOR_MOD) and isinstance(b, Const):
        return _div_mod(op, a, int(b.value), ranges)
    if op in (BinOp.MIN, BinOp.MAX):
        diff = _linear_bounds(_difference(a, b), ranges)
        if diff[1] is not None and diff[1] <= 0:  # a <= b
            return a if op is BinOp.MIN else b
        if diff[0] is not None and diff[0] >= 0:  # a >= b
            return b if op is BinOp.MIN else a
    return None


def _float_identities(node: Binary) -> Expr | None:
    a, b = node.a, node.b
    if node.op is BinOp.MUL:
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Const) and x.value == 1:
                return y
    if node.op in (BinOp.ADD, BinOp.SUB) and isinstance(b, Const) and b.value == 0:
        return a
    if node.op is BinOp.ADD and isinstance(a, Const) and a.value == 0:
        return b
    return None


def _fold(op: BinOp, a: Const, b: Const, dtype: DType) -> Expr:
    x, y = a.value, b.value
    if op is BinOp.DIV:
        return Const(_wrap(np.float32(x) / np.float32(y), dtype), dtype)
    if op in (BinOp.FLOOR_DIV, BinOp.FLOOR_MOD):
        if y == 0:
            raise CompileError(f"integer {op.value} by zero", op=op.value)
        return Const(_wrap(x // y if op is BinOp.FLOOR_DIV else x % y, dtype), dtype)
    if op in (BinOp.SHR, BinOp.SHL):
        return Const(_wrap(fold_shift(op, int(x), int(y), dtype.bits), dtype), dtype)
    return Const(_wrap(FOLDS[op](x, y), dtype), dtype)


def _difference(a: Expr, b: Expr) -> dict[object, int]:
    form = dict(linear(a))
    for atom, coef in linear(b).items():
        form[atom] = form.get(atom, 0) - coef
    return {atom: coef for atom, coef in form.items() if coef}


def _div_mod(op: BinOp, a: Expr, c: int, ranges: Ranges) -> Expr | None:
    if c == 0:
        raise CompileError(f"integer {op.value} by zero", op=op.value)
    if c < 0:
        return None
    form = linear(a)
    if op is BinOp.FLOOR_DIV:
        quotient = {atom: coef // c for atom, coef in form.items() if coef % c == 0}
        rest = {atom: coef for atom, coef in form.items() if coef % c}
        lo, hi = _linear_bounds(rest, ranges)
        if lo is not None and hi is not None and lo // c == hi // c:
            quotient[ONE] = quotient.get(ONE, 0) + lo // c
            return from_linear(quotient)
        if not quotient:
            return None
        inner = Binary(op, from_linear(rest), Const(c, DType.INT32))
        return from_linear({**quotient, inner: 1})
    reduced = {atom: coef % c for atom, coef in form.items() if coef % c}
    lo, hi = _linear_bounds(reduced, ranges)
    if lo is not None and hi is not None and lo // c == hi // c:
        reduced[ONE] = reduced.get(ONE, 0) - (lo // c) * c
        return from_linear(reduced)
    if reduced == form:
        return None
    return Binary(op, from_linear(reduced), Const(c, DType.INT32))


def _rewrite_compare(node: Compare, ranges: Ranges) -> Expr | None:
    a, b = node.a, node.b
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(int(COMPARES[node.op](a.value, b.value)), DType.BOOL)
    if a.dtype is not DType.INT32:
        return None
    lo, hi = _linear_bounds(_difference(a, b), ranges)  # bounds of a - b
    decided = {
        CmpOp.LT: (hi is not None and hi < 0, lo is not None and lo >= 0),
        CmpOp.LE: (hi is not None and hi <= 0, lo is not None and lo > 0),
        CmpOp.GT: (lo is not None and lo > 0, hi is not None and hi <= 0),
        CmpOp.GE: (lo is not None and lo >= 0, hi is not None and hi < 0),
        CmpOp.EQ: (lo == hi == 0, (lo is not None and lo > 0) or (hi is not None and hi < 0)),
        CmpOp.NE: ((lo is not None and lo > 0) or (hi is not None and hi < 0), lo == hi == 0),
    }[node.op]
    if decided[0]:
        return Const(1, DType.BOOL)
    if decided[1]:
        return Const(0, DType.BOOL)
    return None


# ------------------------------------------------------------------------ covering regions
@dataclass(frozen=True)
class Interval:
    """``begin .. begin + extent - 1`` along one dimension."""

    begin: Expr
    extent: int


def _symbolic_bounds(index: Expr, ranged: Ranges) -> tuple[Expr, Expr] | None:
    """Symbolic ``(lo, hi)`` of ``index``: ranged variables at their extremes, the others kept."""
    form = linear(simplify_expr(index, ranged))
    lo: dict[object, int] = {}
    hi: dict[object, int] = {}

    def add(target: dict[object, int], atom: object, coef: int) -> None:
        target[atom] = target.get(atom, 0) + coef

    for atom, coef in form.items():
        if atom == ONE:
            add(lo, ONE, coef)
            add(hi, ONE, coef)
            continue
        if not free_vars(atom) & set(ranged):  # fixed: the same at both ends
            add(lo, atom, coef)
            add(hi, atom, coef)
            continue
        a_lo, a_hi = const_bounds(atom, ranged)
        if a_lo is None or a_hi is None:
            return None
        if coef < 0:
            a_lo, a_hi = a_hi, a_lo
        add(lo, ONE, coef * a_lo)
        add(hi, ONE, coef * a_hi)
    return from_linear(lo), from_linear(hi)


def _constant(expr: Expr) -> int | None:
    expr = simplify_expr(expr)
    return int(expr.value) if isinstance(expr, Const) else None


def covering_region(
    reads: Sequence[Sequence[Expr]], shape: Sequence[int], ranged: Ranges
) -> tuple[Interval, ...]:
    """Per dimension of a tensor of ``shape``, an interval covering every index in ``reads``."""
    region = []
    for dim, extent in enumerate(shape):
        whole = Interval(Const(0, DType.INT32), extent)
        lo: Expr | None = None
        hi: Expr | None = None
        for read in reads:
            bounds = _symbolic_bounds(read[dim], ranged)
            if bounds is None:
                lo = None
                break
            if lo is None or hi is None:
                lo, hi = bounds
                continue
            lo_step = _constant(bounds[0] - lo)
            hi_step = _constant(bounds[1] - hi)
            if lo_step is None or hi_step is None:
                lo = None
                break
            lo = bounds[0] if lo_step < 0 else lo
            hi = bounds[1] if hi_step > 0 else hi
        length = None if lo is None or hi is None else _constant(hi - lo + 1)
        if lo is None or length is None or length >= extent:
            region.append(whole)
        else:
            region.append(Interval(simplify_expr(lo), max(length, 1)))
    return tuple(region)


def fits(interval: Interval, extent: int, ranges: Mapping[Var, tuple[int, int]]) -> bool:
    """Whether ``interval`` provably stays inside ``0 .. extent - 1`` for every value of the
    loop variables in ``ranges``."""
    lo, hi = const_bounds(simplify_expr(interval.begin, ranges), ranges)
    return lo is not None and hi is not None and lo >= 0 and hi + interval.extent <= extent
