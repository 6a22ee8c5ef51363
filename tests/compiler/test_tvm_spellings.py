"""TVM's TE spellings in ``compiler.te`` (what VTA's tutorials write), checked against numpy on
the LLVM CPU backend: ``astype``, shifts, elementwise ``te.max`` / ``te.min``, ``A(*i)``,
``thread_axis``, ``if_then_else`` / ``all`` and ``topi.nn.pad``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compiler import CompileError, ScheduleError, build, create_schedule, lower, te
from compiler import templates as topi
from compiler.expr import Binary, BinOp, Cast, Compare, Const, DType, TensorRead, Var
from compiler.loop_ir import ForKind
from compiler.printer import format_expr
from compiler.schedule import Annotate, Bind, ThreadTag
from compiler.visit import walk

INTEGERS = ["int8", "int16", "int32"]


def _random(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-100, 100, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _run(outputs: list[te.Tensor], inputs: list[te.Tensor], *arrays: np.ndarray, s=None):
    """Build ``s`` (default: an empty schedule of ``outputs``) and return the outputs."""
    s = s if s is not None else create_schedule(outputs)
    results = [np.zeros(t.shape, t.dtype.numpy) for t in outputs]
    build(s, [*inputs, *outputs])(*arrays, *results)
    return results


# ------------------------------------------------------------------------------------ astype
def test_astype_is_cast_on_every_expression():
    x = te.placeholder((8,), "int8", "x")
    i = te.compute((8,), lambda i: x[i], name="copy").op.axis[0]
    read = x[i]
    assert read.astype("int32") == te.cast("int32", read) == Cast(DType.INT32, read)
    assert i.astype("float32") == Cast(DType.FLOAT32, i.var)
    assert (read + 1).astype(np.int16) == Cast(DType.INT16, read + 1)
    assert read.astype("int8") is read
    assert i.astype(DType.INT32) is i.var
    with pytest.raises(CompileError, match="unsupported dtype 'int64'"):
        read.astype("int64")


def test_astype_computes_like_numpy():
    x = te.placeholder((50,), "int8", "x")
    wide = te.compute((50,), lambda i: x[i].astype("int32") * 300 + i, name="wide")
    back = te.compute((50,), lambda i: wide[i].astype("int8"), name="back")
    halves = te.compute((50,), lambda i: back[i].astype("float32") * 0.5, name="halves")
    x_np = _random((50,), "int8")
    got_wide, got_back, got_halves = _run([wide, back, halves], [x], x_np)
    expected = x_np.astype(np.int32) * 300 + np.arange(50, dtype=np.int32)
    np.testing.assert_array_equal(got_wide, expected)
    np.testing.assert_array_equal(got_back, expected.astype(np.int8))
    np.testing.assert_array_equal(got_halves, expected.astype(np.int8) * np.float32(0.5))


# ------------------------------------------------------------------------------------ shifts
def _reference_shift(x: np.ndarray, amount: np.ndarray, right: bool) -> np.ndarray:
    """BinOp's shifts, written out: the amount read as unsigned (so a negative one is large),
    ``>>`` by the width or more gives the sign fill, ``<<`` by it 0; ``<<`` wraps."""
    bits = x.dtype.itemsize * 8
    wide, count = x.astype(np.int64), amount.astype(np.int64)
    inside = (count >= 0) & (count < bits)
    count = np.where(inside, count, 0)
    if right:
        result = np.where(inside, wide >> count, wide >> (bits - 1))
    else:
        result = np.where(inside, wide << count, 0)
    return (result & ((1 << bits) - 1)).astype(f"uint{bits}").view(x.dtype)


def _amounts(dtype: str, n: int) -> np.ndarray:
    """Every amount from below 0 to past the width (and the dtype's extremes), repeated."""
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    special = [info.min, -bits - 1, -1, 0, 1, bits - 1, bits, bits + 1, 2 * bits, info.max]
    amounts = np.array(special + list(range(-3, bits + 3)), np.int64)
    return np.resize(amounts, n).astype(dtype)


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("vector", [False, True])
def test_shifts_by_run_time_amounts(dtype, vector):
    """Scalar and vector code agree with the reference and with numpy for every amount."""
    n = 96
    x = te.placeholder((n,), dtype, "x")
    y = te.placeholder((n,), dtype, "y")
    right = te.compute((n,), lambda i: x[i] >> y[i], name="right")
    left = te.compute((n,), lambda i: x[i] << y[i], name="left")
    s = create_schedule([right, left])
    if vector:
        for out in (right, left):
            s[out].vectorize(s[out].split(out.op.axis[0], 16)[1])
    f = build(s, [x, y, right, left])
    if vector:  # our vector code (LLVM may vectorize the scalar loop as well)
        lanes = f"<16 x i{np.dtype(dtype).itemsize * 8}>"
        assert f"ashr {lanes}" in f.module.ir_text and f"shl {lanes}" in f.module.ir_text
    x_np, y_np = _random((n,), dtype), _amounts(dtype, n)
    got_right, got_left = np.zeros(n, dtype), np.zeros(n, dtype)
    f(x_np, y_np, got_right, got_left)
    np.testing.assert_array_equal(got_right, _reference_shift(x_np, y_np, right=True))
    np.testing.assert_array_equal(got_left, _reference_shift(x_np, y_np, right=False))
    np.testing.assert_array_equal(got_right, np.right_shift(x_np, y_np))
    np.testing.assert_array_equal(got_left, np.left_shift(x_np, y_np))


@pytest.mark.parametrize("dtype", INTEGERS)
def test_shifts_by_constants_and_reflected_shifts(dtype):
    bits = np.dtype(dtype).itemsize * 8
    n = 64
    x = te.placeholder((n,), dtype, "x")
    y = te.placeholder((n,), dtype, "y")
    amounts = (0, 1, 3, bits - 1)
    outs = [te.compute((n,), lambda i, c=c: x[i] >> c, name=f"shr{c}") for c in amounts]
    outs += [te.compute((n,), lambda i, c=c: x[i] << c, name=f"shl{c}") for c in amounts]
    outs.append(te.compute((n,), lambda i: 100 >> y[i], name="rshr"))
    outs.append(te.compute((n,), lambda i: 1 << y[i], name="rshl"))
    s = create_schedule(outs)
    for out in outs:
        s[out].vectorize(s[out].split(out.op.axis[0], 8)[1])
    x_np, y_np = _random((n,), dtype), _amounts(dtype, n)
    got = _run(outs, [x, y], x_np, y_np, s=s)
    expected = [np.right_shift(x_np, np.array(c, dtype)) for c in amounts]
    expected += [np.left_shift(x_np, np.array(c, dtype)) for c in amounts]
    expected.append(_reference_shift(np.full(n, 100, dtype), y_np, right=True))
    expected.append(_reference_shift(np.ones(n, dtype), y_np, right=False))
    for out, value, reference in zip(outs, got, expected, strict=True):
        np.testing.assert_array_equal(value, reference, err_msg=out.name)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_out_of_range_amounts_that_simplification_reveals(dtype):
    """``x >> (j + 40)`` over an extent-1 axis ``j`` becomes a constant amount of 40 only after
    simplification: it follows the run-time rule, with no poison in the code."""
    bits = np.dtype(dtype).itemsize * 8
    x = te.placeholder((16,), dtype, "x")
    amounts = (bits, bits + 9, -1)
    outs = []
    for c in amounts:
        outs.append(te.compute((16, 1), lambda i, j, c=c: x[i] >> (j + c).astype(dtype)))
        outs.append(te.compute((16, 1), lambda i, j, c=c: x[i] << (j + c).astype(dtype)))
    s = create_schedule(outs)
    for out in outs[::2]:
        s[out].vectorize(out.op.axis[0])
    x_np = _random((16,), dtype)
    got = _run(outs, [x], x_np, s=s)
    for index, c in enumerate(amounts):
        amount = np.full(16, c, np.int64).astype(dtype)
        for right, value in zip((True, False), got[2 * index : 2 * index + 2], strict=True):
            np.testing.assert_array_equal(value[:, 0], _reference_shift(x_np, amount, right))


def test_shifts_in_indices():
    """Shifts in index arithmetic (computed in 64 bits) keep their int32 meaning."""
    a = te.placeholder((16,), "int32", "a")
    k = te.placeholder((16,), "int32", "k")
    halves = te.compute((16,), lambda i: a[i >> 1], name="halves")
    evens = te.compute((8,), lambda i: a[i << 1], name="evens")
    data = te.compute((16,), lambda i: a[i >> k[i]], name="data")
    a_np = np.arange(100, 116, dtype=np.int32)
    k_np = np.array([0, 1, 2, 3, -1, 31, 32, 40, 1 << 30, -(1 << 31), 0, 1, 2, 3, 4, 5], np.int32)
    got_halves, got_evens, got_data = _run([halves, evens, data], [a, k], a_np, k_np)
    np.testing.assert_array_equal(got_halves, a_np[np.arange(16) >> 1])
    np.testing.assert_array_equal(got_evens, a_np[::2])
    np.testing.assert_array_equal(
        got_data, a_np[np.right_shift(np.arange(16, dtype=np.int32), k_np)]
    )


def test_bad_shifts_are_typed_errors():
    x = te.placeholder((4,), "int8", "x")
    f = te.placeholder((4,), "float32", "f")
    cases = [
        (lambda: x[0] >> 8, ">>", "shift amount 8 is outside 0..7 for int8"),
        (lambda: x[0] << -1, "<<", "shift amount -1 is outside 0..7"),
        (lambda: x[0] >> 200, ">>", "shift amount 200 is outside 0..7"),
        (lambda: x[0] << te.const(8, "int8"), "<<", "shift amount 8"),
        (lambda: f[0] >> 1, ">>", "'>>' needs integers, got float32"),
        (lambda: 1 << f[0], "<<", "'<<' needs integers, got float32"),
        (lambda: (x[0] > 0) << 1, "<<", "needs integers, got bool"),
        (lambda: x[0] >> x[0].astype("int32"), ">>", "dtypes int8 and int32"),
    ]
    for make, op, match in cases:
        with pytest.raises(CompileError, match=match) as info:
            make()
        assert info.value.op == op


def test_shifts_print_with_c_precedence():
    a, b = Var("a"), Var("b")
    one = Const(1, DType.INT32)
    assert format_expr(Binary(BinOp.SHR, a + 1, b)) == "a + 1 >> b"
    assert format_expr(Binary(BinOp.ADD, Binary(BinOp.SHR, a, b), one)) == "(a >> b) + 1"
    assert format_expr(Binary(BinOp.SHL, a, Binary(BinOp.SHR, b, one))) == "a << (b >> 1)"
    assert format_expr(Compare(a.__lt__(b).op, Binary(BinOp.SHL, a, one), b)) == "a << 1 < b"
    assert format_expr((a << b) * 2) == "(a << b) * 2"


# ---------------------------------------------------------------------------- te.max / te.min
def test_max_and_min_are_elementwise_without_a_reduction_axis():
    x = te.placeholder((4, 6), "int32", "x")
    clipped = te.compute(x.shape, lambda *i: te.min(te.max(x(*i), 0), 127), name="clipped")
    with_axis = te.compute(x.shape, lambda i, j: te.max(x[i, j], j), name="with_axis")
    flipped = te.compute(x.shape, lambda *i: te.min(-5, x(*i)), name="flipped")
    k = te.reduce_axis(6, "k")
    rows = te.compute((4,), lambda i: te.max(x[i, k], axis=k), name="rows")
    r = te.reduce_axis(4, "r")
    q = te.reduce_axis(6, "q")
    least = te.compute((1,), lambda _: te.min(x[r, q], [r, q]), name="least")
    assert isinstance(clipped.op.body, Binary) and clipped.op.body.op is BinOp.MIN
    x_np = _random((4, 6), "int32") // 1000
    got = _run([clipped, with_axis, flipped, rows, least], [x], x_np)
    np.testing.assert_array_equal(got[0], np.clip(x_np, 0, 127))
    np.testing.assert_array_equal(got[1], np.maximum(x_np, np.arange(6)))
    np.testing.assert_array_equal(got[2], np.minimum(x_np, -5))
    np.testing.assert_array_equal(got[3], x_np.max(axis=1))
    np.testing.assert_array_equal(got[4], [x_np.min()])


def test_sum_stays_a_reduction():
    x = te.placeholder((4,), "float32", "x")
    i = te.compute((4,), lambda i: x[i]).op.axis[0]
    for call, op in [
        (lambda: te.sum(x[0], 0), "sum"),
        (lambda: te.sum(x[0], i), "sum"),
        (lambda: te.sum(x[0], x[1]), "sum"),
        (lambda: te.max(x[0], [i]), "max"),
        (lambda: te.min(x[0], (te.reduce_axis(2), 3)), "min"),
    ]:
        with pytest.raises(CompileError, match=f"{op} reduces over axes made by reduce_axis"):
            call()
    with pytest.raises(CompileError, match="dtypes float32 and int32 differ"):
        te.max(x[0], i)


# ---------------------------------------------------------------- A(*i), compute, schedules
def test_calling_a_tensor_reads_it():
    a = te.placeholder((3, 4, 5), "int8", "A")
    i, j = Var("i"), Var("j")
    assert a(i, j, 2) == a[i, j, 2] == TensorRead(a, (i, j, Const(2, DType.INT32)))
    with pytest.raises(CompileError, match="indexed with 2 indices") as info:
        a(i, j)
    assert info.value.tensor == "A"
    copy = te.compute(a.shape, lambda *i: a(*i), "A_buf")
    assert copy.name == "A_buf" and copy.dtype is DType.INT8
    assert [axis.name for axis in copy.op.axis] == ["ax0", "ax1", "ax2"]
    a_np = _random(a.shape, "int8")
    (got,) = _run([copy], [a], a_np)
    np.testing.assert_array_equal(got, a_np)


def test_schedules_take_the_op_and_expose_its_axes():
    a = te.placeholder((8, 8), "float32", "A")
    k = te.reduce_axis(8, "k")
    c = te.compute((8,), lambda i: te.sum(a[i, k], axis=k), "C")
    s = create_schedule(c.op)
    assert s.outputs == create_schedule(c).outputs == create_schedule([c.op]).outputs
    assert s[c].op is c.op and s[c.op].op is c.op
    assert s[c].op.axis == c.op.axis and s[c].op.reduce_axis == (k,)
    s[c].reorder(s[c].op.reduce_axis[0], s[c].op.axis[0])
    a_np = _random((8, 8), "float32")
    (got,) = _run([c], [a], a_np, s=s)
    np.testing.assert_allclose(got, a_np.sum(axis=1), rtol=1e-5)


# ------------------------------------------------------------------------------ thread_axis
def test_thread_axis_records():
    axis = te.thread_axis("cthread")
    assert axis == te.ThreadAxis("cthread") and axis.tag == "cthread"
    with pytest.raises(dataclasses.FrozenInstanceError):
        axis.tag = "vthread"
    with pytest.raises(CompileError, match="unknown thread tag 'warp.x'") as info:
        te.thread_axis("warp.x")
    assert info.value.op == "thread_axis"


@pytest.mark.parametrize("tag", ["cthread", "vthread"])
def test_binding_a_virtual_thread_is_vthread(tag):
    x = te.placeholder((32,), "float32", "x")
    out = te.compute((32,), lambda i: x[i] * 3.0, name="out")
    bound, annotated = create_schedule(out), create_schedule(out)
    for s, bind in ((bound, True), (annotated, False)):
        vt, _inner = s[out].split(out.op.axis[0], nparts=2)
        if bind:
            s[out].bind(vt, te.thread_axis(tag))
        else:
            s[out].vthread(vt)
    assert isinstance(bound.steps[-1], Annotate) and bound.steps[-1].kind is ForKind.VTHREAD
    assert bound.steps[-1].axis is bound[out].leaf_iter_vars[0]
    assert str(lower(bound, [x, out])) == str(lower(annotated, [x, out]))
    x_np = _random((32,), "float32")
    (got,) = _run([out], [x], x_np, s=bound)
    np.testing.assert_array_equal(got, x_np * np.float32(3))


def test_binding_gpu_thread_axes():
    x = te.placeholder((32,), "float32", "x")
    out = te.compute((32,), lambda i: x[i] + 1.0, name="out")
    s = create_schedule(out)
    bx, tx = s[out].split(out.op.axis[0], 8)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, "threadIdx.x")
    assert s.steps[1:] == (
        Bind(out.op, bx, ThreadTag.BLOCK_X),
        Bind(out.op, tx, ThreadTag.THREAD_X),
    )
    with pytest.raises(ScheduleError, match="unknown thread tag 'blockIdx.w'") as info:
        s[out].bind(bx, "blockIdx.w")
    assert (info.value.stage, info.value.axis) == ("out", "i.outer")
    with pytest.raises(ScheduleError, match="unknown thread tag 'lane'"):
        s[out].bind(tx, te.ThreadAxis("lane"))


# ------------------------------------------------------------------- if_then_else and all
def test_if_then_else_and_all_are_select_and_all_of():
    assert te.if_then_else is te.select and te.all is te.all_of
    assert te.all() == Const(1, DType.BOOL)
    x = te.placeholder((10,), "int16", "x")
    out = te.compute(
        (10,), lambda i: te.if_then_else(te.all(i >= 2, i < 7, x[i] > 0), x[i], -1), name="out"
    )
    x_np = _random((10,), "int16")
    (got,) = _run([out], [x], x_np)
    index = np.arange(10)
    np.testing.assert_array_equal(got, np.where((index >= 2) & (index < 7) & (x_np > 0), x_np, -1))


# ------------------------------------------------------------------------------- topi.nn.pad
@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize(
    ("shape", "before", "after"),
    [
        ((2, 3, 4, 5), (0, 0, 1, 2), None),
        ((1, 3, 4, 5), (1, 0, 0, 2), (0, 2, 3, 0)),
        ((1, 2, 3, 4, 1, 8), (0, 0, 1, 1, 0, 0), None),
        ((1, 2, 3, 3, 2, 4), (0, 1, 2, 0, 0, 1), (1, 0, 0, 2, 0, 3)),
    ],
)
def test_pad_matches_numpy(dtype, shape, before, after):
    data = te.placeholder(shape, dtype, "data")
    value = -3 if dtype == "int8" else 0.5
    padded = topi.nn.pad(data, before, after, pad_value=value)
    assert padded.name == "PadInput" and padded.dtype is DType.of(dtype)
    dims_padded = sum(1 for b, a in zip(before, after or before, strict=True) if a or b)
    conditions = [n for n in walk(padded.op.body) if isinstance(n, Compare)]
    assert len(conditions) == 2 * dims_padded
    s = create_schedule(padded.op)
    s[padded].vectorize(padded.op.axis[-1])
    data_np = _random(shape, dtype)
    (got,) = _run([padded], [data], data_np, s=s)
    widths = list(zip(before, after or before, strict=True))
    np.testing.assert_array_equal(got, np.pad(data_np, widths, constant_values=value))


def test_pad_defaults_and_errors():
    data = te.placeholder((2, 3), "int8", "data")
    copy = topi.nn.pad(data, (0, 0))
    assert copy.op.body == data[copy.op.axis]
    zeros = topi.nn.pad(data, (1, 0), name="data_buf")
    assert zeros.name == "data_buf" and zeros.shape == (4, 3)
    assert Const(0, DType.INT8) in list(walk(zeros.op.body))
    as_expr = topi.nn.pad(data, (1, 1), pad_value=te.const(7, "int32"))
    assert Cast(DType.INT8, Const(7, DType.INT32)) in list(walk(as_expr.op.body))
    data_np = _random((2, 3), "int8")
    (got,) = _run([as_expr], [data], data_np)
    np.testing.assert_array_equal(got, np.pad(data_np, 1, constant_values=7))
    for call, match, axis in [
        (lambda: topi.nn.pad(data, (1, 1, 1)), "pad_before has 3 entries", ""),
        (lambda: topi.nn.pad(data, (1, 1), (1,)), "pad_after has 1 entries", ""),
        (lambda: topi.nn.pad(data, (0, -1)), "pad_before -1 is not a non-negative", "1"),
        (lambda: topi.nn.pad(data, (1, 1), pad_value=300), "constant 300 does not fit", ""),
    ]:
        with pytest.raises(CompileError, match=match) as info:
            call()
        assert info.value.axis == axis


# --------------------------------------------------------------------- a VTA tutorial's TE
def test_vta_convolution_tutorial_declaration_runs_on_the_cpu():
    """The TE of VTA's convolution tutorial (blocked NCHWnc int8 conv, int32 accumulation,
    shift, clip, narrow), with its virtual threads, as the tutorial spells it."""
    batch, block_in, block_out = 1, 4, 4
    in_channels, out_channels, height, width = 8, 8, 6, 6
    kernel_h = kernel_w = 3
    pad_h = pad_w = stride_h = stride_w = 1
    data_shape = (batch, in_channels // block_in, height, width, 1, block_in)
    kernel_shape = (
        out_channels // block_out,
        in_channels // block_in,
        kernel_h,
        kernel_w,
        block_out,
        block_in,
    )
    out_h = (height + 2 * pad_h - kernel_h) // stride_h + 1
    out_w = (width + 2 * pad_w - kernel_w) // stride_w + 1
    output_shape = (batch, out_channels // block_out, out_h, out_w, 1, block_out)
    inp_max = (1 << 7) - 1

    data = te.placeholder(data_shape, name="data", dtype="int8")
    kernel = te.placeholder(kernel_shape, name="kernel", dtype="int8")
    data_buf = topi.nn.pad(data, (0, 0, pad_h, pad_w, 0, 0), name="data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    ic = te.reduce_axis((0, in_channels // block_in), name="ic")
    ic_tns = te.reduce_axis((0, block_in), name="ic_tns")
    dy = te.reduce_axis((0, kernel_h), name="dy")
    dx = te.reduce_axis((0, kernel_w), name="dx")
    res_conv = te.compute(
        output_shape,
        lambda bo, co, i, j, bi, ci: te.sum(
            data_buf[bo, ic, i * stride_h + dy, j * stride_w + dx, bi, ic_tns].astype("int32")
            * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype("int32"),
            axis=[ic, dy, dx, ic_tns],
        ),
        name="res_conv",
    )
    res_shr = te.compute(output_shape, lambda *i: res_conv(*i) >> 8, name="res_shr")
    res_max = te.compute(output_shape, lambda *i: te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: te.min(res_max(*i), inp_max), "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype("int8"), name="res")

    s = create_schedule(res.op)
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    _, tx = s[res].split(oc, factor=1)
    s[res].reorder(tx, b, y, x, b_tns, oc_tns)
    s[res].bind(tx, te.thread_axis("cthread"))
    for stage in (res_shr, res_max, res_min):
        s[stage].compute_inline()

    data_np = _random(data_shape, "int8", seed=1)
    kernel_np = _random(kernel_shape, "int8", seed=2)
    (got,) = _run([res], [data, kernel], data_np, kernel_np, s=s)

    # numpy: unblock to NCHW / OIHW, convolve in int32, shift, clip, narrow, block again
    x_nchw = data_np.transpose(0, 4, 1, 5, 2, 3).reshape(batch, in_channels, height, width)
    w_oihw = kernel_np.transpose(0, 4, 1, 5, 2, 3).reshape(
        out_channels, in_channels, kernel_h, kernel_w
    )
    x_pad = np.pad(x_nchw.astype(np.int32), ((0, 0), (0, 0), (pad_h,) * 2, (pad_w,) * 2))
    conv = np.zeros((batch, out_channels, out_h, out_w), np.int32)
    for ky in range(kernel_h):
        for kx in range(kernel_w):
            window = x_pad[:, :, ky : ky + out_h, kx : kx + out_w]
            conv += np.einsum("nchw,oc->nohw", window, w_oihw[:, :, ky, kx].astype(np.int32))
    expected = np.clip(conv >> 8, 0, inp_max).astype(np.int8)
    blocked = expected.reshape(batch, 1, out_channels // block_out, block_out, out_h, out_w)
    np.testing.assert_array_equal(got, blocked.transpose(0, 2, 4, 5, 1, 3))
