"""Lowering: the golden loop IR of a scheduled matmul, bound inference, and a before/after test
for each pass of the pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import PIPELINE, CompileError, build, create_schedule, lower, te
from compiler.expr import Const, DType, Var
from compiler.loop_ir import Buffer, CallIntrinsic, For, ForKind, IfThenElse, LoweredFunc, Store
from compiler.lower import schedule_to_ir
from compiler.passes import flatten, tensorize
from compiler.passes.simplify import simplify
from compiler.visit import walk


def _matmul(m=16, n=32, k=8):
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((k, n), name="B")
    r = te.reduce_axis(k, "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return a, b, c, r


#: The readable loop IR (long lines are split only to fit this file).
GOLDEN = (
    "func main(A: float32[16, 8], B: float32[8, 32], C: float32[16, 32]):\n"
    "  parallel for i.outer in 0..4:\n"
    "    for j.outer in 0..2:\n"
    "      allocate C.local: float32[4, 16] local\n"
    "      unrolled for i in 0..4:\n"
    "        vectorized for j in 0..16:\n"
    "          C.local[i * 16 + j] = 0.0f\n"
    "      for k in 0..8:\n"
    "        unrolled for i in 0..4:\n"
    "          vectorized for j in 0..16:\n"
    "            C.local[i * 16 + j]"
    " = C.local[i * 16 + j] + A[i.outer * 32 + i * 8 + k] * B[k * 32 + j.outer * 16 + j]\n"
    "      for i.inner in 0..4:\n"
    "        vectorized for j.inner in 0..16:\n"
    "          C[i.outer * 128 + i.inner * 32 + j.outer * 16 + j.inner]"
    " = C.local[i.inner * 16 + j.inner]\n"
)


def _scheduled_matmul():
    a, b, c, r = _matmul()
    s = create_schedule(c)
    acc = s.cache_write(c, "local")
    i, j = c.op.axis
    io, jo, _ii, ji = s[c].tile(i, j, 4, 16)
    s[acc].compute_at(s[c], jo)
    x, y = acc.op.axis
    s[acc].reorder(r, x, y)
    s[acc].unroll(x)
    s[acc].vectorize(y)
    s[c].vectorize(ji)
    s[c].parallel(io)
    return s, [a, b, c]


def test_golden_loop_ir_of_a_scheduled_matmul():
    s, args = _scheduled_matmul()
    assert str(lower(s, args)) == GOLDEN


def test_the_scheduled_matmul_computes_the_product():
    s, args = _scheduled_matmul()
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 8), np.float32), rng.random((8, 32), np.float32)
    c = np.zeros((16, 32), np.float32)
    build(s, args)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_the_pipeline_is_one_named_list():
    assert [p.name for p in PIPELINE] == ["simplify", "tensorize", "flatten", "simplify"]


def test_bound_inference_sizes_an_attached_stage_by_its_window():
    a = te.placeholder((20,), name="A")
    p = te.compute((20,), lambda x: a[x] * 2.0, name="P")
    q = te.compute((18,), lambda y: p[y] + p[y + 2], name="Q")
    s = create_schedule(q)
    yo, _yi = s[q].split(q.op.axis[0], 6)
    s[p].compute_at(s[q], yo)
    func = lower(s, [a, q])
    (alloc,) = [n for n in walk(func.body) if type(n).__name__ == "Allocate"]
    assert alloc.buffer.shape == (8,)  # 6 outputs read a window of 6 + 2
    out = np.zeros(18, np.float32)
    a_np = np.arange(20, dtype=np.float32)
    build(s, [a, q])(a_np, out)
    np.testing.assert_array_equal(out, 2 * a_np[:18] + 2 * a_np[2:])


def test_a_split_that_does_not_divide_is_guarded():
    a = te.placeholder((10,), name="A")
    b = te.compute((10,), lambda x: a[x] + 1.0, name="B")
    s = create_schedule(b)
    s[b].split(b.op.axis[0], 4)
    func = lower(s, [a, b])
    assert any(isinstance(n, IfThenElse) for n in walk(func.body))
    out = np.zeros(10, np.float32)
    build(s, [a, b])(np.arange(10, dtype=np.float32), out)
    np.testing.assert_array_equal(out, np.arange(1, 11))


def test_compute_inline_substitutes_the_producer():
    a = te.placeholder((8,), name="A")
    p = te.compute((8,), lambda x: a[x] * 3.0, name="P")
    q = te.compute((8,), lambda y: p[y] + 1.0, name="Q")
    s = create_schedule(q)
    s[p].compute_inline()
    text = str(lower(s, [a, q]))
    assert "P" not in text.replace("Q", "") and "A[y] * 3.0f + 1.0f" in text


def test_cache_read_copies_into_the_scope():
    a = te.placeholder((4, 8), name="A")
    b = te.compute((4, 8), lambda i, j: a[i, j] * 2.0, name="B")
    s = create_schedule(b)
    cached = s.cache_read(a, "local", [b])
    s[cached].compute_at(s[b], b.op.axis[0])
    func = lower(s, [a, b])
    (alloc,) = [n for n in walk(func.body) if type(n).__name__ == "Allocate"]
    assert alloc.buffer.shape == (1, 8) and alloc.buffer.scope.value == "local"
    out = np.zeros((4, 8), np.float32)
    build(s, [a, b])(np.ones((4, 8), np.float32), out)
    np.testing.assert_array_equal(out, 2)


# ------------------------------------------------------------------------- pass before/after
def test_simplify_pass_before_and_after():
    i, j = Var("i"), Var("j")
    buf = Buffer("X", (8,), DType.FLOAT32)
    body = For(
        i,
        4,
        ForKind.SERIAL,
        For(
            j,
            1,
            ForKind.SERIAL,
            IfThenElse(i < 4, Store(buf, ((i * 2 + j + 1) - 1 - i,), Const(1.0, DType.FLOAT32))),
        ),
    )
    after = simplify(LoweredFunc("f", (buf,), body))
    assert after.body == For(i, 4, ForKind.SERIAL, Store(buf, (i,), Const(1.0, DType.FLOAT32)))


def test_flatten_pass_before_and_after():
    i, j = Var("i"), Var("j")
    buf = Buffer("X", (3, 5), DType.FLOAT32)
    before = LoweredFunc("f", (buf,), Store(buf, (i, j), Const(0.0, DType.FLOAT32)))
    after = simplify(flatten(before))
    assert after.body == Store(buf, (i * 5 + j,), Const(0.0, DType.FLOAT32))


def _dot_intrinsic(k=4, lanes=16):
    a = te.placeholder((k,), name="a")
    b = te.placeholder((k, lanes), name="b")
    r = te.reduce_axis(k, "r")
    out = te.compute((lanes,), lambda j: te.sum(a[r] * b[r, j], axis=r), name="out")
    return te.decl_tensor_intrin(out, "dot4x16")


def _tensorized_matmul(intrin, k_split=4):
    a, b, c, r = _matmul(m=6, n=32, k=16)
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, 16)
    ko, ki = s[c].split(r, k_split)
    s[c].reorder(i, jo, ko, ki, ji)
    s[c].tensorize(ki, intrin)
    return s, [a, b, c]


def test_tensorize_pass_before_and_after():
    s, args = _tensorized_matmul(_dot_intrinsic())
    before = simplify(schedule_to_ir(s, args))
    assert "// tensorize dot4x16" in str(before)
    after = tensorize(before)
    (call,) = [n for n in walk(after.body) if isinstance(n, CallIntrinsic)]
    assert (
        "call dot4x16(&C[i * 32 + j.outer * 16], &A[i * 16 + k.outer * 4], "
        "&B[k.outer * 128 + j.outer * 16], 32)" in str(after)
    )
    assert call.intrin.name == "dot4x16"
    assert not any(isinstance(n, For) and n.var.name == "k.inner" for n in walk(after.body))


def test_tensorized_matmul_runs_the_intrinsic_correctly():
    s, args = _tensorized_matmul(_dot_intrinsic())
    rng = np.random.default_rng(3)
    a, b = rng.random((6, 16), np.float32), rng.random((16, 32), np.float32)
    c = np.full((6, 32), np.nan, np.float32)  # not zeros: a lost initialisation must show
    f = build(s, args)
    assert "dot4x16" in f.module.ir_text
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_tensorize_rejects_a_nest_that_does_not_match():
    s, args = _tensorized_matmul(_dot_intrinsic(k=8), k_split=4)
    with pytest.raises(CompileError, match="reduction loop extents") as info:
        lower(s, args)
    assert info.value.op == "dot4x16"


def test_pragma_and_scope_are_recorded_in_the_loop_ir():
    a = te.placeholder((8, 8), name="A")
    p = te.compute((8, 8), lambda i, j: a[i, j] + 1.0, name="P")
    q = te.compute((8, 8), lambda i, j: p[i, j] * 2.0, name="Q")
    s = create_schedule(q)
    s[p].set_scope("shared")
    s[q].pragma(q.op.axis[0], "auto_unroll_max_step", 16)
    text = str(lower(s, [a, q]))
    assert "allocate P: float32[8, 8] shared" in text
    assert "// pragma auto_unroll_max_step=16\n  for i_1 in 0..8:" in text
