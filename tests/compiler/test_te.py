"""Tensor expressions: construction, dtype rules and the checks that name tensor and axis."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, build, create_schedule, te
from compiler.expr import DType, IterKind


def test_compute_names_axes_after_the_lambda_parameters():
    a = te.placeholder((4, 5), name="A")
    b = te.compute((4, 5), lambda row, col: a[row, col] * 2.0, name="B")
    assert [axis.name for axis in b.op.axis] == ["row", "col"]
    assert b.shape == (4, 5) and b.dtype is DType.FLOAT32
    assert b.op.inputs == (a,)


def test_reduce_axis_carries_its_range():
    k = te.reduce_axis((2, 9), name="k")
    assert (k.begin, k.extent, k.kind) == (2, 7, IterKind.REDUCE)


@pytest.mark.parametrize(
    ("make", "match", "tensor", "axis"),
    [
        (lambda a: a[0], "indexed with 1 indices, has 2 dimensions", "A", ""),
        (
            lambda a: te.compute((4,), lambda i: a[i, i + 5]),
            "leaves the dimension's range",
            "A",
            "1",
        ),
        (
            lambda a: te.compute((4,), lambda i: a[i - 1, 0]),
            "leaves the dimension's range",
            "A",
            "0",
        ),
        (
            lambda a: te.compute((4,), lambda i: a[i, 0] + te.placeholder((4,), "int8", "I")[i]),
            "dtypes float32 and int8",
            "compute",
            "",
        ),
        (
            lambda a: te.placeholder((3, 0), name="Z"),
            "extent 0 is not a positive integer",
            "Z",
            "1",
        ),
    ],
)
def test_bad_expressions_name_tensor_and_axis(make, match, tensor, axis):
    a = te.placeholder((4, 6), name="A")
    with pytest.raises(CompileError, match=match) as info:
        make(a)
    assert info.value.tensor == tensor
    assert info.value.axis == axis


def test_integer_division_must_be_explicit():
    x = te.placeholder((4,), "int32", "X")
    with pytest.raises(CompileError, match="use '//'"):
        te.compute((4,), lambda i: x[i] / 2)
    with pytest.raises(CompileError, match="float constant"):
        te.compute((4,), lambda i: x[i] + 0.5)
    with pytest.raises(CompileError, match="no truth value"):
        te.compute((4,), lambda i: x[i] if x[i] > 0 else 0)


def test_reductions_need_reduce_axes_and_stay_at_the_top():
    a = te.placeholder((4, 4), name="A")
    with pytest.raises(CompileError, match="reduce_axis"):
        te.sum(a[0, 0], axis=te.compute((4,), lambda i: a[i, 0]).op.axis[0])
    k = te.reduce_axis(4)
    with pytest.raises(CompileError, match="whole body"):
        te.compute((4,), lambda i: te.sum(a[i, k], axis=k) * 2.0)


def test_reads_under_a_select_may_go_out_of_range():
    a = te.placeholder((4,), name="A")
    padded = te.compute((6,), lambda i: te.select(te.all_of(i >= 1, i < 5), a[i - 1], 0.0))
    s = create_schedule(padded)
    out = np.zeros(6, np.float32)
    build(s, [a, padded])(np.arange(1, 5, dtype=np.float32), out)
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 4, 0])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "float32"])
def test_dtypes_and_explicit_casts(dtype):
    rng = np.random.default_rng(0)
    x = te.placeholder((50,), dtype, "X")
    wide = te.compute((50,), lambda i: te.cast("int32", x[i]) * 3 - 7, name="wide")
    back = te.compute((50,), lambda i: te.cast(dtype, wide[i]), name="back")
    as_float = te.compute((50,), lambda i: te.cast("float32", back[i]) * 0.5, name="as_float")
    s = create_schedule(as_float)
    _outer, inner = s[as_float].split(as_float.op.axis[0], 16)
    s[as_float].vectorize(inner)
    if np.dtype(dtype).kind == "f":
        x_np = rng.uniform(-100, 100, 50).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x_np = rng.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
    w, b, f = np.zeros(50, np.int32), np.zeros(50, dtype), np.zeros(50, np.float32)
    build(s, [x, wide, back, as_float])(x_np, w, b, f)
    expected_w = (
        x_np.astype(np.int64) if np.dtype(dtype).kind == "i" else np.trunc(x_np).astype(np.int64)
    ) * 3 - 7
    np.testing.assert_array_equal(w, expected_w.astype(np.int32))
    np.testing.assert_array_equal(b, w.astype(dtype))
    np.testing.assert_array_equal(f, b.astype(np.float32) * np.float32(0.5))


def test_integer_arithmetic_wraps_and_divides_with_floor_semantics():
    x = te.placeholder((8,), "int8", "X")
    y = te.compute((8,), lambda i: (x[i] + 100) // 3 % 5, name="Y")
    s = create_schedule(y)
    x_np = np.array([-128, -100, -1, 0, 1, 27, 100, 127], np.int8)
    out = np.zeros(8, np.int8)
    build(s, [x, y])(x_np, out)
    np.testing.assert_array_equal(out, (x_np + np.int8(100)) // np.int8(3) % np.int8(5))
