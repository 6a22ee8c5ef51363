"""The simplifier preserves the value of every expression (property-based), folds what the
loop ranges decide, and folds shifts exactly as numpy computes them."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from compiler.arith import const_bounds, simplify_expr
from compiler.expr import Binary, BinOp, CmpOp, Compare, Const, DType, Expr, Select, Var
from compiler.visit import walk

VARS = [Var("a"), Var("b"), Var("c")]


def _evaluate(e: Expr, env: dict) -> int:
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e]
    a, b = _evaluate(e.a, env), _evaluate(e.b, env)
    operations = {
        BinOp.ADD: lambda: a + b,
        BinOp.SUB: lambda: a - b,
        BinOp.MUL: lambda: a * b,
        BinOp.FLOOR_DIV: lambda: a // b,
        BinOp.FLOOR_MOD: lambda: a % b,
        BinOp.MIN: lambda: min(a, b),
        BinOp.MAX: lambda: max(a, b),
        BinOp.SHR: lambda: a >> b,
        BinOp.SHL: lambda: a << b,
    }
    return operations[e.op]()


def _expressions() -> st.SearchStrategy:
    leaves = st.one_of(
        st.sampled_from(VARS), st.integers(-20, 20).map(lambda v: Const(v, DType.INT32))
    )

    def grow(children):
        arithmetic = st.builds(
            Binary,
            st.sampled_from([BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.MIN, BinOp.MAX]),
            children,
            children,
        )
        divide = st.builds(
            Binary,
            st.sampled_from([BinOp.FLOOR_DIV, BinOp.FLOOR_MOD]),
            children,
            st.integers(1, 9).map(lambda v: Const(v, DType.INT32)),
        )
        shift = st.builds(
            Binary,
            st.sampled_from([BinOp.SHR, BinOp.SHL]),
            children,
            st.integers(0, 3).map(lambda v: Const(v, DType.INT32)),
        )
        return st.one_of(arithmetic, divide, shift)

    return st.recursive(leaves, grow, max_leaves=8)


@given(
    expr=_expressions(),
    extents=st.tuples(*[st.integers(1, 12)] * 3),
    values=st.tuples(*[st.integers(0, 100)] * 3),
)
def test_simplify_preserves_values(expr, extents, values):
    ranges = {v: (0, n - 1) for v, n in zip(VARS, extents, strict=True)}
    env = {v: x % n for v, x, n in zip(VARS, values, extents, strict=True)}
    simpler = simplify_expr(expr, ranges)
    assert _evaluate(simpler, env) == _evaluate(expr, env)
    assert sum(1 for _ in walk(simpler)) <= sum(1 for _ in walk(expr)) + 4


@given(
    expr=_expressions(),
    lows=st.tuples(*[st.integers(-10, 10)] * 3),
    extents=st.tuples(*[st.integers(1, 12)] * 3),
    values=st.tuples(*[st.integers(0, 100)] * 3),
)
def test_bounds_hold_every_value_and_simplify_keeps_it(expr, lows, extents, values):
    """const_bounds contains the value at any point of the ranges (ranges that may be
    negative), and the simplified expression has the same value there."""
    ranges = {v: (lo, lo + n - 1) for v, lo, n in zip(VARS, lows, extents, strict=True)}
    env = {v: lo + x % n for v, lo, x, n in zip(VARS, lows, values, extents, strict=True)}
    value = _evaluate(expr, env)
    lo, hi = const_bounds(expr, ranges)
    assert lo is None or lo <= value, (lo, value)
    assert hi is None or value <= hi, (hi, value)
    assert _evaluate(simplify_expr(expr, ranges), env) == value


def test_folds_what_ranges_decide():
    i, j = VARS[0], VARS[1]
    ranges = {i: (0, 3), j: (0, 7)}
    assert simplify_expr((i * 8 + j) // 8, ranges) is i
    assert simplify_expr((i * 8 + j) % 8, ranges) is j
    assert simplify_expr((i * 8 + 7) - i * 8) == Const(7, DType.INT32)
    assert simplify_expr(i * 4 + j < 20, ranges) == Const(1, DType.BOOL)
    assert simplify_expr(Binary(BinOp.MIN, j, Const(9, DType.INT32)), ranges) is j


INTEGER_DTYPES = [DType.INT8, DType.INT16, DType.INT32]


@st.composite
def _dtype_and_values(draw, count: int) -> tuple:
    dtype = draw(st.sampled_from(INTEGER_DTYPES))
    info = np.iinfo(dtype.numpy)
    values = [draw(st.integers(int(info.min), int(info.max))) for _ in range(count)]
    return (dtype, *values)


@given(operands=_dtype_and_values(2), op=st.sampled_from([BinOp.SHR, BinOp.SHL]))
def test_shifts_fold_as_numpy_shifts(operands, op):
    """Any amount (negative, or the width or more, included) folds as numpy's right_shift and
    left_shift compute it, wrapping in the dtype."""
    dtype, value, amount = operands
    folded = simplify_expr(Binary(op, Const(value, dtype), Const(amount, dtype)))
    x, y = np.array(value, dtype.numpy), np.array(amount, dtype.numpy)
    expected = np.right_shift(x, y) if op is BinOp.SHR else np.left_shift(x, y)
    assert folded == Const(int(expected), dtype)


def test_shifts_by_zero_are_the_value():
    for dtype in INTEGER_DTYPES:
        x = Var("x", dtype)
        for op in (BinOp.SHR, BinOp.SHL):
            assert simplify_expr(Binary(op, x, Const(0, dtype))) is x
            shifted = Binary(op, x, Const(1, dtype))
            assert simplify_expr(shifted) == shifted


@given(
    op=st.sampled_from([BinOp.SHR, BinOp.SHL]),
    value_range=st.tuples(st.integers(-(1 << 20), 1 << 20), st.integers(0, 1 << 20)),
    amount_range=st.tuples(st.integers(-40, 40), st.integers(0, 40)),
    data=st.data(),
)
def test_shift_bounds_hold_every_value(op, value_range, amount_range, data):
    """The bounds of ``x >> y`` (always known) and ``x << y`` (unknown where it may wrap)
    contain the value for every ``x`` and ``y`` in their ranges."""
    a, b = Var("a"), Var("b")
    ranges = {
        a: (value_range[0], value_range[0] + value_range[1]),
        b: (amount_range[0], amount_range[0] + amount_range[1]),
    }
    lo, hi = const_bounds(Binary(op, a, b), ranges)
    x = np.array(data.draw(st.integers(*ranges[a])), np.int32)
    y = np.array(data.draw(st.integers(*ranges[b])), np.int32)
    value = int(np.right_shift(x, y) if op is BinOp.SHR else np.left_shift(x, y))
    if op is BinOp.SHR:
        assert lo is not None and hi is not None
    assert lo is None or lo <= value
    assert hi is None or value <= hi


def test_shift_bounds_of_index_expressions():
    i, k = VARS[0], VARS[1]
    ranges = {i: (0, 7), k: (1, 2)}
    assert const_bounds(Binary(BinOp.SHL, i, Const(2, DType.INT32)), ranges) == (0, 28)
    assert const_bounds(Binary(BinOp.SHR, i, k), ranges) == (0, 3)
    assert const_bounds(Binary(BinOp.SHL, i, Const(29, DType.INT32)), ranges) == (None, None)
    assert const_bounds(Binary(BinOp.SHL, i, Const(40, DType.INT32)), ranges) == (0, 0)


@given(
    t=st.tuples(st.one_of(st.none(), st.integers(-9, 0)), st.one_of(st.none(), st.integers(1, 9))),
    f=st.tuples(st.one_of(st.none(), st.integers(-9, 0)), st.one_of(st.none(), st.integers(1, 9))),
)
def test_a_selects_bounds_are_its_branches_hull(t, f):
    """Either branch may be taken, so a Select's bounds are the least of its branches' lows and
    the greatest of their highs; an unbounded side of either branch leaves that side open."""
    a, b, c = VARS
    expr = Select(Compare(CmpOp.LT, c, Const(0, DType.INT32)), a, b)
    lo = None if None in (t[0], f[0]) else min(t[0], f[0])
    hi = None if None in (t[1], f[1]) else max(t[1], f[1])
    assert const_bounds(expr, {a: t, b: f, c: (-1, 1)}) == (lo, hi)
