"""The simplifier's bounds and rewrites checked exhaustively on small ranges (issue 17 item 18):
every point of every range, negative and offset ones included, against plain Python arithmetic.
Interval arithmetic must contain every value and be exact where it can be (sums, differences);
a rewritten division or remainder must keep every value, a constant one fold (a zero divisor is a
CompileError); a thread-bound loop of extent 1 stays."""

from __future__ import annotations

import itertools

import pytest

from compiler import CompileError, create_schedule, lower, te
from compiler.arith import const_bounds, simplify_expr
from compiler.expr import Binary, BinOp, Const, DType, Var
from compiler.loop_ir import For, ForKind
from compiler.passes.simplify import simplify
from compiler.visit import walk

VI, VJ = Var("i"), Var("j")
#: Small ranges, inclusive, where floor division and remainder change behaviour.
RANGES = [(0, 0), (0, 3), (3, 5), (4, 6), (5, 11), (-6, -1), (-3, 2), (7, 7), (-9, 4)]


def _const(value: int) -> Const:
    return Const(value, DType.INT32)


def _value(expr, env: dict) -> int:
    if isinstance(expr, Const):
        return int(expr.value)
    if isinstance(expr, Var):
        return env[expr]
    a, b = _value(expr.a, env), _value(expr.b, env)
    return {
        BinOp.ADD: a + b,
        BinOp.SUB: a - b,
        BinOp.MUL: a * b,
        BinOp.FLOOR_DIV: a // b if b else None,
        BinOp.FLOOR_MOD: a % b if b else None,
        BinOp.MIN: min(a, b),
        BinOp.MAX: max(a, b),
    }[expr.op]


def _points(ri, rj):
    return [{VI: i, VJ: j} for i in range(ri[0], ri[1] + 1) for j in range(rj[0], rj[1] + 1)]


@pytest.mark.parametrize("op", [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.MIN, BinOp.MAX])
def test_bounds_of_two_variables_are_exact(op):
    """For one operation of two independent variables the ends of the ranges are reached, so
    the bounds must be the exact minimum and maximum."""
    expr = Binary(op, VI, VJ)
    for ri, rj in itertools.product(RANGES, repeat=2):
        values = [_value(expr, env) for env in _points(ri, rj)]
        assert const_bounds(expr, {VI: ri, VJ: rj}) == (min(values), max(values)), (op, ri, rj)


@pytest.mark.parametrize("c", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("op", [BinOp.FLOOR_DIV, BinOp.FLOOR_MOD])
def test_bounds_of_a_division_contain_every_value(op, c):
    expr = Binary(op, VI, _const(c))
    for ri in RANGES:
        values = [_value(expr, env) for env in _points(ri, (0, 0))]
        lo, hi = const_bounds(expr, {VI: ri})
        assert lo <= min(values) and max(values) <= hi, (op, c, ri, (lo, hi))
        if ri[0] // c == ri[1] // c:  # one quotient over the range: the remainder is exact
            assert (lo, hi) == (min(values), max(values)), (op, c, ri)


@pytest.mark.parametrize("c", [2, 3, 4, 8])
@pytest.mark.parametrize("op", [BinOp.FLOOR_DIV, BinOp.FLOOR_MOD])
def test_division_rewrites_keep_every_value(op, c):
    """``(a*i + b*j + k) op c`` simplified over every pair of ranges keeps its value at every
    point (the folds of a constant quotient move multiples of ``c`` between the terms)."""
    forms = [
        VI,
        Binary(BinOp.ADD, VI, _const(9)),
        Binary(BinOp.ADD, Binary(BinOp.MUL, VI, _const(c)), VJ),
        Binary(BinOp.SUB, Binary(BinOp.MUL, VJ, _const(2 * c)), Binary(BinOp.ADD, VI, _const(3))),
    ]
    for form, ri, rj in itertools.product(forms, RANGES, RANGES[:5]):
        expr = Binary(op, form, _const(c))
        simpler = simplify_expr(expr, {VI: ri, VJ: rj})
        for env in _points(ri, rj):
            assert _value(simpler, env) == _value(expr, env), (expr, ri, rj, env, simpler)


def test_a_thread_bound_loop_of_extent_one_stays():
    """A loop of extent 1 becomes its body, except one bound to a GPU thread axis: the launch
    needs the axis even when it has one thread."""
    A = te.placeholder((1, 4), name="A")
    C = te.compute((1, 4), lambda i, j: A[i, j] + 1.0, name="C")
    s = create_schedule(C)
    s[C].bind(s[C].op.axis[0], "blockIdx.x")
    body = simplify(lower(s, [A, C])).body
    loops = [node for node in walk(body) if isinstance(node, For)]
    bound = [loop for loop in loops if loop.kind is ForKind.THREAD_BINDING]
    assert [(loop.extent, loop.thread) for loop in bound] == [(1, "blockIdx.x")]
    serial = te.compute((1, 4), lambda i, j: A[i, j] + 1.0, name="D")
    plain = simplify(lower(create_schedule(serial), [A, serial])).body
    assert all(node.extent != 1 for node in walk(plain) if isinstance(node, For))


@pytest.mark.parametrize("op", [BinOp.FLOOR_DIV, BinOp.FLOOR_MOD])
def test_constant_division_folds_or_names_a_zero_divisor(op):
    """Two constants fold to Python's floor division (by -1 too); a divisor of 0 is a
    CompileError naming the operation, never a ZeroDivisionError."""
    for x, y in itertools.product([-7, -1, 0, 5, 9], [-3, -1, 1, 4]):
        folded = simplify_expr(Binary(op, _const(x), _const(y)), {})
        assert folded == _const(x // y if op is BinOp.FLOOR_DIV else x % y), (x, y)
    with pytest.raises(CompileError, match=f"integer {op.value} by zero"):
        simplify_expr(Binary(op, _const(7), _const(0)), {})
