"""The LLVM backend at its edges (issue 17 item 18), every output guarded
(:mod:`tests.guards`): loops write exactly their extent, a vector store to one element keeps the
last lane, an index whose other terms move with the vectorised variable is not contiguous,
booleans widen to 1 and signed integers keep their sign, and the vector width bound is exact;
each result against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import build, create_schedule, te
from compiler.codegen import codegen
from compiler.codegen.runtime import CompiledFunction
from compiler.expr import Binary, BinOp, Const, DType, Var
from compiler.loop_ir import Buffer, For, ForKind, Load, LoweredFunc, Store
from tests.guards import GuardedArray


def _run(schedule, args, inputs: list[np.ndarray]) -> np.ndarray:
    out = GuardedArray(args[-1].shape, args[-1].dtype.numpy)
    function = build(schedule, args)
    function(*inputs, out.array)
    return out.checked()


@pytest.mark.parametrize("extent", [1, 5, 16, 17])
@pytest.mark.parametrize("how", ["serial", "split", "parallel", "vectorized"])
def test_loops_write_exactly_their_extent(extent, how):
    x = te.placeholder((extent,), name="x")
    out = te.compute((extent,), lambda i: x[i] * 3.0 - 1.0, name="out")
    s = create_schedule(out)
    axis = out.op.axis[0]
    if how == "split":
        s[out].split(axis, 4)
    elif how == "parallel":
        s[out].parallel(axis)
    elif how == "vectorized":
        s[out].vectorize(axis)
    x_np = np.arange(extent, dtype=np.float32)
    np.testing.assert_array_equal(_run(s, [x, out], [x_np]), x_np * 3.0 - 1.0)


def test_a_vectorised_producer_of_one_element_keeps_the_last_lane():
    """P, computed inside C's vectorised loop, is one element written by every lane: the lane
    of the current iteration is the one C reads (as a serial loop's last write would be)."""
    a = te.placeholder((16,), name="A")
    p = te.compute((16,), lambda i: a[i] * 2.0, name="P")
    c = te.compute((16,), lambda i: p[i] + 1.0, name="C")
    s = create_schedule(c)
    _, inner = s[c].split(c.op.axis[0], 8)
    s[c].vectorize(inner)
    s[p].compute_at(s[c], inner)
    a_np = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(_run(s, [a, c], [a_np]), a_np * 2.0 + 1.0)


def test_a_vectorised_store_to_one_element_keeps_the_last_lane():
    """``vectorized for i in 0..8: out[0] = x[i] * 2`` (loop IR written by hand: no schedule
    makes this store) leaves what the serial loop's last iteration writes."""
    x = Buffer("x", (8,), DType.FLOAT32)
    out = Buffer("out", (1,), DType.FLOAT32)
    i = Var("i")
    value = Binary(BinOp.MUL, Load(x, (i,)), Const(2.0, DType.FLOAT32))
    body = For(i, 8, ForKind.VECTORIZED, Store(out, (Const(0, DType.INT32),), value))
    func = LoweredFunc("last_lane", (x, out), body)
    module = codegen(func, "llvm")
    address, engine = module.jit()
    x_np = np.arange(1, 9, dtype=np.float32)
    result = GuardedArray(1, np.float32)
    CompiledFunction(func, address, engine, module)(x_np, result.array)
    np.testing.assert_array_equal(result.checked(), x_np[-1:] * 2.0)


@pytest.mark.parametrize(
    ("index", "size"),
    [
        (lambda i: i + i // 2, 12),
        (lambda i: i + (i % 3), 10),
        (lambda i: i // 4 + i, 10),
    ],
    ids=["i+i/2", "i+i%3", "i/4+i"],
)
def test_vectorised_gathers_with_terms_in_the_vector_variable(index, size):
    x = te.placeholder((size,), name="x")
    out = te.compute((8,), lambda i: x[index(i)], name="out")
    s = create_schedule(out)
    s[out].vectorize(out.op.axis[0])
    x_np = np.arange(100, 100 + size, dtype=np.float32)
    expected = x_np[[index(i) for i in range(8)]]
    np.testing.assert_array_equal(_run(s, [x, out], [x_np]), expected)


@pytest.mark.parametrize("vectorize", [False, True], ids=["scalar", "vector"])
def test_booleans_widen_to_one_and_signed_integers_keep_their_sign(vectorize):
    x = te.placeholder((8,), name="x", dtype="int8")
    flags = te.compute((8,), lambda i: (x[i] > 0).astype("int32"), name="flags")
    wide = te.compute((8,), lambda i: x[i].astype("int32") * 1000, name="wide")
    x_np = np.array([-128, -3, -1, 0, 1, 2, 100, 127], np.int8)
    for out, expected in (
        (flags, (x_np > 0).astype(np.int32)),
        (wide, x_np.astype(np.int32) * 1000),
    ):
        s = create_schedule(out)
        if vectorize:
            s[out].vectorize(out.op.axis[0])
        np.testing.assert_array_equal(_run(s, [x, out], [x_np]), expected)


@pytest.mark.parametrize(("extent", "vector"), [(64, True), (65, False)])
def test_vector_width_bound_is_exact(extent, vector):
    """Loops of up to 64 lanes become vector code; a longer one stays a loop (same values)."""
    x = te.placeholder((extent,), name="x")
    out = te.compute((extent,), lambda i: x[i] + 1.0, name="out")
    s = create_schedule(out)
    s[out].vectorize(out.op.axis[0])
    function = build(s, [x, out])
    assert (f"<{extent} x float>" in function.module.ir_text) is vector
    x_np = np.arange(extent, dtype=np.float32)
    out_np = GuardedArray(extent, np.float32)
    function(x_np, out_np.array)
    np.testing.assert_array_equal(out_np.checked(), x_np + 1.0)
