"""Bound inference: the region of a producer that a consumer's inner loops read.

A stage computed inside its consumer's loop ``axis`` needs, per dimension, the smallest
interval covering every read of it while the loops outside ``axis`` (and ``axis`` itself) are
fixed and the loops inside run over their ranges. The interval's start is a symbolic expression
in the fixed loop variables; its length must be a constant (it sizes a buffer). When that cannot
be shown, the whole dimension is used instead, which is always correct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from compiler.expr import Const, DType, Expr, Var
from compiler.simplify import ONE, Ranges, const_bounds, from_linear, linear, simplify_expr
from compiler.visit import free_vars

__all__ = ["Interval", "covering_region", "fits"]


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
