"""Property: any valid schedule of a computation gives the same result.

Random splits (dividing or not), reorders, vectorize, unroll, parallel, cache_write with
compute_at, and compute_inline / compute_at of a producer, all checked against numpy.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import build, create_schedule, te
from compiler.expr import IterKind

SOME = settings(max_examples=15, deadline=None)


def _annotate(draw, stage) -> None:
    leaves = stage.leaf_iter_vars
    order = draw(st.permutations(leaves))
    stage.reorder(*order)
    innermost, outermost = order[-1], order[0]
    if innermost.kind is IterKind.SPATIAL and draw(st.booleans()):
        stage.vectorize(innermost)
    if outermost.kind is IterKind.SPATIAL and outermost is not innermost and draw(st.booleans()):
        stage.parallel(outermost)
    middle = [leaf for leaf in order[1:-1]]
    if middle and draw(st.booleans()):
        stage.unroll(draw(st.sampled_from(middle)))


def _split_all(draw, stage, axes) -> None:
    for axis in axes:
        if draw(st.booleans()):
            stage.split(axis, draw(st.integers(1, axis.extent + 2)))


@SOME
@given(
    data=st.data(),
    m=st.integers(1, 12),
    n=st.integers(1, 20),
    k=st.integers(1, 9),
    cache=st.booleans(),
)
def test_any_schedule_of_a_matmul_gives_the_product(data, m, n, k, cache):
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((k, n), name="B")
    r = te.reduce_axis(k, "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    s = create_schedule(c)
    if cache:
        local = s.cache_write(c, "local")
        _split_all(data.draw, s[c], c.op.axis)
        _annotate(data.draw, s[c])
        s[local].compute_at(s[c], data.draw(st.sampled_from(s[c].leaf_iter_vars)))
        _split_all(data.draw, s[local], (*local.op.axis, r))
        _annotate(data.draw, s[local])
    else:
        _split_all(data.draw, s[c], (*c.op.axis, r))
        _annotate(data.draw, s[c])
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a_np = rng.standard_normal((m, k)).astype(np.float32)
    b_np = rng.standard_normal((k, n)).astype(np.float32)
    out = np.zeros((m, n), np.float32)
    build(s, [a, b, c])(a_np, b_np, out)
    np.testing.assert_allclose(out, a_np @ b_np, rtol=1e-4, atol=1e-5)


@SOME
@given(data=st.data(), n=st.integers(1, 30), attach=st.sampled_from(["root", "inline", "at"]))
def test_any_placement_of_a_producer_gives_the_same_result(data, n, attach):
    x = te.placeholder((n + 2,), name="x")
    p = te.compute((n + 2,), lambda i: x[i] * 2.0 + 1.0, name="P")
    q = te.compute((n,), lambda j: p[j] + p[j + 1] * p[j + 2], name="Q")
    s = create_schedule(q)
    _split_all(data.draw, s[q], q.op.axis)
    _annotate(data.draw, s[q])
    if attach == "inline":
        s[p].compute_inline()
    elif attach == "at":
        s[p].compute_at(s[q], data.draw(st.sampled_from(s[q].leaf_iter_vars)))
    x_np = np.random.default_rng(n).standard_normal(n + 2).astype(np.float32)
    p_np = x_np * 2 + 1
    out = np.zeros(n, np.float32)
    build(s, [x, q])(x_np, out)
    np.testing.assert_allclose(out, p_np[:n] + p_np[1 : n + 1] * p_np[2:], rtol=1e-5, atol=1e-6)
