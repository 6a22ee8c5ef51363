"""Integer expressions evaluated at compile time, when the emitter walks the loops.

The accelerator's program is static: every loop around a transfer or a kernel is run by the
emitter, which needs each expression's value for many loop counters. ``compile_expr``
turns an expression into a Python closure once; linear ones (almost all row indices) into a
weighted sum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from compiler.arith import COMPARES, FOLDS, ONE, linear
from compiler.errors import CompileError
from compiler.expr import Binary, BinOp, Cast, Compare, Const, Expr, Not, Select, Var

__all__ = ["Env", "compile_expr"]

#: The loop counters' current values.
Env = Mapping[Var, int]
Evaluator = Callable[[Env], int]

#: Integer operators: the simplifier's folds, and floor division and modulo (exact here).
_BINARY: dict[BinOp, Callable[[int, int], int]] = {
    **FOLDS,
    BinOp.FLOOR_DIV: lambda a, b: a // b,
    BinOp.FLOOR_MOD: lambda a, b: a % b,
}


def compile_expr(expr: Expr) -> Evaluator:
    """A function of the loop counters giving ``expr``'s (integer) value."""
    form = linear(expr)
    if all(atom == ONE or isinstance(atom, Var) for atom in form):
        constant = form.get(ONE, 0)
        terms = [(atom, coef) for atom, coef in form.items() if atom != ONE]
        if not terms:
            return lambda env: constant
        if len(terms) == 1:
            ((var, coef),) = terms
            return lambda env: constant + coef * env[var]
        return lambda env: constant + sum(coef * env[var] for var, coef in terms)
    return _closure(expr)


def _closure(expr: Expr) -> Evaluator:
    if isinstance(expr, Const):
        value = int(expr.value)
        return lambda env: value
    if isinstance(expr, Var):
        return lambda env: env[expr]
    if isinstance(expr, Binary) and expr.op in _BINARY:
        fn, a, b = _BINARY[expr.op], compile_expr(expr.a), compile_expr(expr.b)
        return lambda env: fn(a(env), b(env))
    if isinstance(expr, Compare):
        cmp, a, b = COMPARES[expr.op], compile_expr(expr.a), compile_expr(expr.b)
        return lambda env: int(cmp(a(env), b(env)))
    if isinstance(expr, Not):
        inner = compile_expr(expr.a)
        return lambda env: int(not inner(env))
    if isinstance(expr, Select):
        c, t, f = (compile_expr(x) for x in (expr.cond, expr.true_value, expr.false_value))
        return lambda env: t(env) if c(env) else f(env)
    if isinstance(expr, Cast) and not expr.dtype.is_float:
        return compile_expr(expr.value)
    raise CompileError(f"cannot evaluate {type(expr).__name__} at compile time", op="codegen")
