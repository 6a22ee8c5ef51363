"""The simplifier preserves the value of every expression (property-based), and folds what the
loop ranges decide."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from compiler.expr import Binary, BinOp, Const, DType, Expr, Var
from compiler.simplify import simplify_expr
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
        return st.one_of(arithmetic, divide)

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


def test_folds_what_ranges_decide():
    i, j = VARS[0], VARS[1]
    ranges = {i: (0, 3), j: (0, 7)}
    assert simplify_expr((i * 8 + j) // 8, ranges) is i
    assert simplify_expr((i * 8 + j) % 8, ranges) is j
    assert simplify_expr((i * 8 + 7) - i * 8) == Const(7, DType.INT32)
    assert simplify_expr(i * 4 + j < 20, ranges) == Const(1, DType.BOOL)
    assert simplify_expr(Binary(BinOp.MIN, j, Const(9, DType.INT32)), ranges) is j
