"""Lowering at its edges (issue 17 item 18): a stage computed inside its consumer's loop over
a region that starts below index 0 computes nothing there (checked by running the loop IR's
indices, :mod:`tests.compiler.ir_access`, and by the built function against numpy); a reduction
tensorized above its first reduction axis is initialised outside the intrinsic call (the output
starts poisoned, not zeroed, so a lost initialisation shows)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import build, create_schedule, lower, te
from compiler.expr import Binary, BinOp, Const, DType
from compiler.loop_ir import Load
from compiler.visit import transform
from tests.compiler.ir_access import out_of_bounds
from tests.guards import GuardedArray


@pytest.mark.parametrize("split", [2, 4, 3])
def test_a_producer_region_below_zero_is_guarded(split):
    """C[i] = P[i-1] (0 at i = 0) + P[i] + P[i+1] (0 at the end), P computed per tile of C: the
    first tile's region of P starts at -1 and the last one's ends past P."""
    n = 12
    a = te.placeholder((n,), name="A", dtype="int32")
    p = te.compute((n,), lambda i: a[i] * 2 + 1, name="P")
    c = te.compute(
        (n,),
        lambda i: (
            te.if_then_else(i >= 1, p[i - 1], 0) + p[i] + te.if_then_else(i < n - 1, p[i + 1], 0)
        ),
        name="C",
    )
    s = create_schedule(c)
    outer, _ = s[c].split(c.op.axis[0], split)
    s[p].compute_at(s[c], outer)
    assert out_of_bounds(lower(s, [a, c])) == []
    a_np = np.arange(1, n + 1, dtype=np.int32) * 7
    p_np = np.pad(a_np * 2 + 1, 1)
    out = GuardedArray(n, np.int32)
    build(s, [a, c])(a_np, out.array)
    np.testing.assert_array_equal(out.checked(), p_np[:-2] + p_np[1:-1] + p_np[2:])


def test_ir_access_reports_a_read_below_zero():
    """The checker itself finds what it is for: an unguarded read of A[i - 1]."""
    a = te.placeholder((4,), name="A")
    c = te.compute((4,), lambda i: a[i] + 1.0, name="C")
    func = lower(create_schedule(c), [a, c])

    def shift(node):
        if isinstance(node, Load) and node.buffer.name == "A":
            (index,) = node.indices
            return Load(node.buffer, (Binary(BinOp.SUB, index, Const(1, DType.INT32)),))
        return None

    broken = transform(func.body, shift)
    problems = out_of_bounds(type(func)(func.name, func.params, broken))
    assert len(problems) == 1 and "load A[-1]" in problems[0]


def test_a_reduction_tensorized_above_its_first_reduce_axis_is_initialised():
    """C = A @ B with the loops (i, j.outer, j.inner, k) and j.inner tensorized: the intrinsic
    (16 lanes, k = 16) accumulates, so C's initialisation must sit above the call, at j.inner,
    not at k, inside the replaced loops."""
    m, n, k = 3, 32, 16
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((k, n), name="B")
    r = te.reduce_axis(k, "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    va = te.placeholder((k,), name="a")
    vb = te.placeholder((k, 16), name="b")
    vr = te.reduce_axis(k, "r")
    dot = te.compute((16,), lambda j: te.sum(va[vr] * vb[vr, j], axis=vr), name="out")
    intrin = te.decl_tensor_intrin(dot, "dot16x16")
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, 16)
    s[c].reorder(i, jo, ji, r)
    s[c].tensorize(ji, intrin)
    rng = np.random.default_rng(4)
    a_np = rng.random((m, k), np.float32)
    b_np = rng.random((k, n), np.float32)
    out = GuardedArray((m, n), np.float32)  # poisoned: a lost initialisation shows
    function = build(s, [a, b, c])
    assert "dot16x16" in function.module.ir_text
    function(a_np, b_np, out.array)
    np.testing.assert_allclose(out.checked(), a_np @ b_np, rtol=1e-5)
