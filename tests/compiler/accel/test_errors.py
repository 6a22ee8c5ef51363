"""Schedules the accelerator cannot run, and calls it cannot take: each raises
:class:`CompileError` (or :class:`ScheduleError`) that says where the problem is: the stage or
tensor, the axis, the buffer or the operation, with the numbers that do not fit."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, ScheduleError, build, create_schedule, te
from compiler.accel.templates import CONV2D
from tests.compiler.accel.helpers import (
    Case,
    alu_case,
    conv2d_inputs,
    conv_case,
    env_of,
    epilogue_case,
    matmul_case,
)

TINY = env_of("tiny")


def _build_error(case: Case) -> CompileError:
    """The CompileError that building ``case`` raises."""
    with pytest.raises(CompileError) as info:
        case.build()
    return info.value


# ----------------------------------------------------------------------- the GEMM intrinsic
@pytest.mark.parametrize(
    ("order", "at", "extents"),
    [
        ("ko bo co bi ci ki", "co", "[4, 4]"),  # one loop too many inside the tensorize axis
        ("ko bo co bi ci ki", "ki", "[]"),  # only the reduction loop inside
        ("ko bo bi co ci ki", "bi", "[4, 4]"),  # a non-intrinsic loop reordered inside
    ],
    ids=["outer-axis", "inner-axis", "loop-inside"],
)
def test_a_nest_that_is_not_the_gemm_intrinsic(order, at, extents):
    error = _build_error(matmul_case(TINY, order=order, tensorize=at))
    assert error.op == "gemm"
    assert "cannot tensorize" in error.detail
    assert f"spatial loop extents {extents} differ from the intrinsic's [4]" in error.detail


def test_a_gemm_operand_left_in_global_memory():
    error = _build_error(matmul_case(TINY, scoped=("B_buf", "C_buf"), copies=("B_buf", "C")))
    assert error.tensor == "C_buf"
    assert "inp operand from 'A_buf' in global" in error.detail
    assert "local.inp_buffer" in error.detail


def test_an_accumulator_not_tensorized_nor_alu():
    error = _build_error(matmul_case(TINY, tensorize=None))
    assert error.tensor == "C_buf"
    assert "needs pragma alu (or tensorize with env.gemm)" in error.detail


# ------------------------------------------------------------------------------ the buffers
def test_a_tile_that_does_not_fit_its_buffer():
    cfg = TINY.cfg
    n, m = 80, 4  # B_buf: 320 weight rows
    error = _build_error(matmul_case(TINY, n=n, m=m, loads_in_reduction=False))
    assert error.tensor == "B_buf"
    rows, row_bytes, depth = n * m, cfg.wgt_elem_bytes, cfg.wgt_buff_depth
    assert (rows, row_bytes, depth) == (320, 16, 256)
    assert "does not fit the WGT buffer" in error.detail
    assert (
        f"it needs rows 0..{rows - 1} ({rows * row_bytes} bytes after the 0 bytes" in error.detail
    )
    assert f"the buffer has {depth} rows ({depth * row_bytes} bytes)" in error.detail


def test_a_buffer_that_fits_alone_but_not_beside_the_live_ones():
    cfg = TINY.cfg
    m = 130  # C_buf takes ACC rows 0..129; S, alive beside it, would need 130..259
    error = _build_error(epilogue_case(TINY, n=1, m=m, source_read_later=True))
    assert error.tensor == "S"
    size = cfg.acc_elem_bytes
    assert (
        f"needs rows {m}..{2 * m - 1} ({m * size} bytes after the {m * size} bytes" in error.detail
    )
    assert f"{2 * m * size} in all" in error.detail
    depth = cfg.acc_buff_depth
    assert f"the buffer has {depth} rows ({depth * cfg.acc_elem_bytes} bytes)" in error.detail
    # Computed in place (S and T share C_buf's rows), the same sizes fit.
    epilogue_case(TINY, n=1, m=m, source_read_later=False).build()


# ----------------------------------------------------------------------------- the copies
@pytest.mark.parametrize("stage", ["A_buf", "B_buf", "C"])
def test_a_copy_stage_without_dma_copy(stage):
    copies = tuple(s for s in ("A_buf", "B_buf", "C") if s != stage)
    error = _build_error(matmul_case(TINY, copies=copies))
    assert error.tensor == stage
    assert f"stage {stage!r} is a copy stage without the dma_copy pragma" in error.detail


def test_a_copy_into_a_buffer_left_in_global_memory():
    error = _build_error(matmul_case(TINY, scoped=("B_buf", "C_buf")))
    assert error.tensor == "A_buf"
    assert "accumulator-scope buffer" in error.detail


def _global_stage_before_a_copy():
    """``X2 = X + 1`` computed in global memory, then copied into the accumulator."""
    shape = (2, 3, TINY.BATCH, TINY.BLOCK_OUT)
    x = te.placeholder(shape, TINY.acc_dtype, "X")
    x2 = te.compute(shape, lambda *i: x(*i) + 1, "X2")
    x_buf = te.compute(shape, lambda *i: x2(*i), "X_buf")
    c = te.compute(shape, lambda *i: x_buf(*i).astype(TINY.out_dtype), "C")
    s = create_schedule(c)
    s[x_buf].set_scope(TINY.acc_scope)
    s[x_buf].pragma(s[x_buf].op.axis[0], TINY.dma_copy)
    s[c].pragma(s[c].op.axis[0], TINY.dma_copy)
    return s, [x, c]


def test_a_stage_left_in_global_memory():
    s, args = _global_stage_before_a_copy()
    with pytest.raises(CompileError) as info:
        build(s, args, target=TINY.target)
    assert info.value.tensor == "X2"
    assert "stage 'X2' lives in global memory: set_scope it" in info.value.detail


@pytest.mark.parametrize("kind", ["vectorize", "parallel"])
def test_a_copy_loop_the_dma_cannot_run(kind):
    case = matmul_case(TINY, loads_in_reduction=False)
    c = case.args[-1]
    getattr(case.schedule[c], kind)(case.schedule[c].op.axis[1])
    error = _build_error(case)
    assert error.tensor == "C"
    assert f"the loop 'ax1' inside a dma_copy is {kind.replace('ize', 'ized')}" in error.detail


def test_padding_with_a_value_other_than_zero():
    error = _build_error(conv_case(TINY, pad_value=3))
    assert error.tensor == "data_pad"
    assert "pads with zeros only" in error.detail


def test_virtual_threads_sharing_a_buffer_they_write():
    case = matmul_case(TINY, loads_in_reduction=False, tensorize=None)
    s, c_buf = case.schedule, case.args[-1].op.inputs[0]
    bo, co, bi, ci = s[c_buf].op.axis
    ko, ki = s[c_buf].op.reduce_axis
    thread, co_i = s[c_buf].split(co, nparts=2)
    s[c_buf].reorder(thread, ko, bo, co_i, bi, ci, ki)
    s[c_buf].vthread(thread)
    s[c_buf].tensorize(bi, TINY.gemm)
    error = _build_error(case)
    assert error.tensor == "C_buf"
    assert "virtual threads of loop 'co.outer' would share 'C_buf'" in error.detail


# -------------------------------------------------------------------------------- the ALU
ALU_ERRORS = {
    "tensor-times-tensor": (lambda x, y: x * y, "*", "only a constant multiplier"),
    "floor-div": (lambda x, y: x // 3, "//", "no operation for '//'"),
    "tensor-minus-tensor": (lambda x, y: x - y, "-", "no operation for '-'"),
    "modulo": (lambda x, y: x % 4, "%", "no operation for '%'"),
    "shift-left-by-tensor": (lambda x, y: x << y, "<<", "shifts by a constant, or right by a row"),
    "multiply-by-int16-row": (
        lambda x, y: x * y.astype("int16").astype("int32"),
        "*",
        "or a row cast to int8, is exact",
    ),
    "wide-multiplier": (lambda x, y: x * 300, "*", "multiplier 300 does not fit the ALU's 8-bit"),
    "two-computed-operands": (lambda x, y: (x >> 1) + (y >> 1), "+", "both operands are computed"),
    "wide-immediate": (lambda x, y: x + 40000, "ADD", "constant 40000 of ADD does not fit"),
    "wide-clip": (lambda x, y: te.max(x, -70000), "MAX", "constant -70000 of MAX does not fit"),
}


@pytest.mark.parametrize(("te_fn", "op", "fragment"), ALU_ERRORS.values(), ids=ALU_ERRORS.keys())
def test_an_expression_the_alu_cannot_compute(te_fn, op, fragment):
    error = _build_error(alu_case(TINY, te_fn, lambda x, y: x))
    assert (error.tensor, error.op) == ("R", op)
    assert fragment in error.detail


def _alu_stage_error(shape, compute_r, extra=()) -> CompileError:
    """The CompileError of building ``C = int8(R)``, ``R = compute_r(X_buf, *extra)`` one ALU
    stage with ``X`` copied into the accumulator as ``X_buf`` (``extra``: more arguments)."""
    x = te.placeholder(shape, TINY.acc_dtype, "X")
    x_buf = te.compute(shape, lambda *i: x(*i), "X_buf")
    r = te.compute(shape, compute_r(x_buf, *extra), "R")
    c = te.compute(shape, lambda *i: r(*i).astype(TINY.out_dtype), "C")
    s = create_schedule(c)
    for t in (x_buf, r):
        s[t].set_scope(TINY.acc_scope)
    s[x_buf].pragma(s[x_buf].op.axis[0], TINY.dma_copy)
    s[r].pragma(s[r].op.axis[0], TINY.alu)
    s[c].pragma(s[c].op.axis[0], TINY.dma_copy)
    with pytest.raises(CompileError) as info:
        build(s, [x, *extra, c], target=TINY.target)
    return info.value


def test_an_alu_operand_not_in_the_accumulator():
    shape = (2, 3, TINY.BATCH, TINY.BLOCK_OUT)
    y = te.placeholder(shape, TINY.acc_dtype, "Y")
    error = _alu_stage_error(shape, lambda x_buf, y: lambda *i: x_buf(*i) + y(*i), (y,))
    assert error.tensor == "R"
    assert "the ALU reads 'Y' from global" in error.detail


def test_an_alu_stage_that_reads_rows_it_overwrites_in_place():
    """``R[i] = X[i] + X[n-1-i]`` computes in place into ``X_buf`` (X is read nowhere else), so
    the ALU would read row ``n-1-i`` after an earlier step overwrote it (the middle row reads
    itself, the outer ones each other): refused, naming the buffer, not run to a wrong sum."""
    n = 3
    shape = (n, 1, TINY.BATCH, TINY.BLOCK_OUT)
    error = _alu_stage_error(shape, lambda x_buf: lambda i, *e: x_buf(i, *e) + x_buf(n - 1 - i, *e))
    assert error.tensor == "R"
    assert error.detail == "the ALU reads rows of 'X_buf' that the same operation writes"


# ------------------------------------------------------------------------------- schedules
def test_compute_at_a_loop_of_another_stage():
    case = matmul_case(TINY, loads_in_reduction=False)
    c = case.args[-1]
    c_buf = c.op.inputs[0]
    a_buf = c_buf.op.inputs[0]
    with pytest.raises(ScheduleError) as info:
        case.schedule[a_buf].compute_at(case.schedule[c_buf], case.schedule[c].op.axis[1])
    assert (info.value.stage, info.value.axis) == ("A_buf", "ax1")
    assert "not a loop of stage 'C_buf'" in info.value.detail


# ---------------------------------------------------------------------------- the function
def _matmul_function():
    case = matmul_case(TINY, n=3, m=4)
    a, b = case.inputs()
    return case.build(), a, b, np.zeros((1, 4, 1, 4), np.int8)


def test_calling_with_a_wrong_shape():
    f, a, b, c = _matmul_function()
    with pytest.raises(CompileError) as info:
        f(a, b[:2], c)
    assert info.value.tensor == "B"
    assert "expects int8[4, 3, 4, 4], got int8[2, 3, 4, 4]" in info.value.detail


def test_calling_with_a_wrong_dtype():
    f, a, b, c = _matmul_function()
    with pytest.raises(CompileError) as info:
        f(a.astype(np.int32), b, c)
    assert info.value.tensor == "A"
    assert "expects int8[1, 3, 1, 4], got int32[1, 3, 1, 4]" in info.value.detail


def test_calling_with_too_few_arrays_or_a_list_or_a_read_only_output():
    f, a, b, c = _matmul_function()
    with pytest.raises(CompileError) as info:
        f(a, b)
    assert info.value.op == "main"
    assert "takes 3 arrays (A, B, C), got 2" in info.value.detail
    with pytest.raises(CompileError) as info:
        f(a, b.tolist(), c)
    assert (info.value.tensor, info.value.detail) == ("B", "needs a numpy array, got list")
    with pytest.raises(CompileError) as info:
        f(a, b, np.broadcast_to(c, c.shape))
    assert info.value.tensor == "C"
    assert "read-only" in info.value.detail
    assert not c.any()  # nothing ran


# ------------------------------------------------------------------------- the CONV2D knobs
def _conv2d(env, size, channels_in, channels_out, kernel, padding, config=None):
    data, weights, bias = conv2d_inputs(env, size, channels_in, channels_out, kernel)
    return CONV2D(data, weights, bias, env=env, stride=1, padding=padding, config=config)


def test_conv2d_row_threads_need_an_even_number_of_row_tiles():
    config = {"tile_h": 2, "tile_w": 6, "tile_co": 2, "tile_ci": 2}
    config |= {"h_threads": 2, "oc_threads": 1, "weights_resident": True}
    with pytest.raises(CompileError) as info:
        _conv2d(TINY, 6, 8, 8, 3, 1, config)  # 6 rows in tiles of 2: 3 tiles
    assert info.value.op == "conv2d"
    assert "h_threads=2 needs an even number of row tiles (3)" in info.value.detail


def test_conv2d_channel_threads_need_an_even_number_of_channel_tiles():
    config = {"tile_h": 8, "tile_w": 8, "tile_co": 1, "tile_ci": 2}
    config |= {"h_threads": 1, "oc_threads": 2, "weights_resident": False}
    with pytest.raises(CompileError) as info:
        _conv2d(TINY, 8, 8, 12, 3, 1, config)  # 3 output blocks in tiles of 1
    assert info.value.op == "conv2d"
    assert "oc_threads=2 needs an even number of channel tiles (3)" in info.value.detail


def test_conv2d_resident_weights_need_a_one_step_reduction():
    with pytest.raises(CompileError) as info:
        _conv2d(TINY, 8, 8, 8, 3, 1, {"weights_resident": True, "tile_ci": 1})
    assert info.value.op == "conv2d"
    assert "tile_ci=2, not 1" in info.value.detail


def test_conv2d_unknown_knobs_and_values():
    with pytest.raises(CompileError) as info:
        _conv2d(TINY, 8, 8, 8, 3, 1, {"tile_h": 3})
    assert info.value.op == "conv2d_packed"
    assert "knob 'tile_h' = 3 is not one of (4, 8, 2, 1)" in info.value.detail
    with pytest.raises(CompileError) as info:
        _conv2d(TINY, 8, 8, 8, 3, 1, {"tile": 3})
    assert "unknown knob 'tile'" in info.value.detail


def test_conv2d_layer_too_big_for_the_tiny_buffers():
    cfg = TINY.cfg
    kernel = 17  # even one output pixel of one channel block needs 17 x 17 input rows
    with pytest.raises(CompileError) as info:
        _conv2d(TINY, kernel, 4, 4, kernel, 0)
    rows = kernel * kernel
    need, have = rows * cfg.inp_elem_bytes, cfg.inp_buff_depth * cfg.inp_elem_bytes
    assert (rows, need, have) == (289, 1156, 1024)
    assert info.value.op == "conv2d"
    assert "the tile does not fit the INP buffer" in info.value.detail
    assert f"need {need} bytes ({rows} rows)" in info.value.detail
    assert f"the buffer has {have} bytes ({cfg.inp_buff_depth} rows)" in info.value.detail
