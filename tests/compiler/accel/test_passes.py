"""Before/after tests for each pass of the accelerator's pipeline (``accel_pipeline``), on small
schedules: what each pass changes in the loop IR, what the code generator makes of it in the
program (transfer pads, decoded GEMM steps), and that every example runs bit-exact on fsim."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, create_schedule, te
from compiler.accel import Env
from compiler.accel.stmts import ComputeStep, Dma, SramRow, UopKernel
from compiler.expr import Binary, Const
from compiler.loop_ir import Allocate, AttrKey, AttrStmt, For, ForKind, Load, Seq, Store
from compiler.passes.simplify import simplify
from isa import AluOp, MemId, Opcode, Operand
from tests.compiler.accel.helpers import (
    Case,
    allocated,
    alu_case,
    conv_case,
    decoded_gemms,
    dram_row,
    env_of,
    epilogue_case,
    index_form,
    loads,
    matmul_case,
    nodes,
    with_loops,
)

TINY = env_of("tiny")
NOMUL = Env(TINY.cfg.replace(alu_mul=False))


def _pragmas(func, name: str) -> list[AttrStmt]:
    return [n for n in nodes(func, AttrStmt) if n.key is AttrKey.PRAGMA and n.value[0] == name]


def _assert_bit_exact(case: Case, function=None) -> None:
    got, want = case.run(function)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------- the pipeline
def test_pipeline_is_the_documented_sequence():
    names = [p.name for p in matmul_case(TINY).passes]
    assert names == [
        "simplify",
        "inject_dma",
        "share_acc_storage",
        "lower_alu",
        "tensorize_gemm",
        "inject_virtual_thread",
        "fold_uop_loops",
        "simplify",
    ]


# ------------------------------------------------------------------------------- simplify
def test_simplify_drops_unit_loops_and_keeps_the_others():
    case = conv_case(TINY)
    before, after = case.around("simplify")
    unit = [f.var.name for f in nodes(before, For) if f.extent == 1]
    assert unit  # the batch and BATCH-lane loops, among others
    assert [f for f in nodes(after, For) if f.extent == 1] == []
    kept = sorted((f.var.name, f.extent) for f in nodes(before, For) if f.extent > 1)
    assert sorted((f.var.name, f.extent) for f in nodes(after, For)) == kept


def test_final_simplify_folds_the_thread_constants_left_by_virtual_threads():
    case = conv_case(TINY, size=8, threads=2)
    folded, final = case.lower(len(case.passes) - 1), case.lower()

    def const_products(func):
        return [n for n in nodes(func, Binary) if isinstance(n.a, Const) and isinstance(n.b, Const)]

    assert const_products(folded)  # e.g. ``1 * 32`` from substituting thread 1
    assert const_products(final) == []
    assert str(simplify(final)) == str(final)


# ----------------------------------------------------------------------------- inject_dma
def _dma(func, stage: str) -> Dma:
    (dma,) = [d for d in nodes(func, Dma) if d.stage == stage]
    return dma


def test_inject_dma_turns_copy_nests_into_2d_transfers():
    case = matmul_case(TINY, n=3, m=4, loads_in_reduction=True)
    before, after = case.around("inject_dma")
    assert len(_pragmas(before, "dma_copy")) == 3
    assert nodes(before, Dma) == []
    assert _pragmas(after, "dma_copy") == []
    assert sorted(d.stage for d in nodes(after, Dma)) == ["A_buf", "B_buf", "C"]

    a = _dma(after, "A_buf")  # one INP row per reduction step
    assert (a.opcode, a.mem, a.dram.name, a.sram.buffer.name) == (
        Opcode.LOAD,
        MemId.INP,
        "A",
        "A_buf",
    )
    assert (a.y_extent, a.x_extent, a.x_stride) == (1, 1, 1)
    assert index_form(a.dram_index) == {"ko": 1}

    b = _dma(after, "B_buf")  # column ko of B: m rows, n apart
    assert (b.opcode, b.mem, b.dram.name) == (Opcode.LOAD, MemId.WGT, "B")
    assert (b.y_extent, b.x_extent, b.x_stride) == (4, 1, 3)
    assert index_form(b.dram_index) == {"ko": 1}
    assert index_form(b.sram.index) == {}

    c = _dma(after, "C")
    assert (c.opcode, c.mem, c.dram.name, c.sram.buffer.name) == (
        Opcode.STORE,
        MemId.OUT,
        "C",
        "C_buf",
    )
    assert (c.y_extent, c.x_extent, c.x_stride) == (1, 4, 4)
    for dma in (a, b, c):
        assert dma.y_bounds is None and dma.x_bounds is None
    _assert_bit_exact(case)


def test_inject_dma_merges_contiguous_rows_into_one_line():
    case = matmul_case(TINY, n=3, m=4, loads_in_reduction=False)
    _, after = case.around("inject_dma")
    a, b = _dma(after, "A_buf"), _dma(after, "B_buf")
    assert (a.y_extent, a.x_extent, a.x_stride) == (1, 3, 3)
    assert (b.y_extent, b.x_extent, b.x_stride) == (1, 12, 12)
    assert [loops for _, loops in with_loops(after, Dma)] == [[], [], []]  # one transfer each


@pytest.mark.parametrize("gap", [0, 1])
def test_inject_dma_grows_a_2d_transfer_over_a_loop_whose_blocks_follow_each_other(gap):
    """``X_buf[i] = X[i, :rows, :cols]`` copied with the loop over ``i`` left outside the copy:
    each ``i`` is a 2-D transfer of ``rows`` lines of ``cols`` rows, ``width`` rows apart in
    DRAM. Block ``i + 1`` follows block ``i`` in SRAM (``rows * cols`` rows on); in DRAM it
    does when ``X`` has no ``gap`` lines between blocks, and then the loop is absorbed: one
    transfer of ``n * rows`` lines. With a gap the loop stays (a transfer per block)."""
    n, rows, cols, width = 3, 2, 2, 5
    tail = (TINY.BATCH, TINY.BLOCK_OUT)
    x = te.placeholder((n, rows + gap, width, *tail), TINY.acc_dtype, "X")
    x_buf = te.compute((n, rows, cols, *tail), lambda *i: x(*i), "X_buf")
    r = te.compute(x_buf.shape, lambda *i: x_buf(*i) + 1, "R")
    c = te.compute(x_buf.shape, lambda *i: r(*i).astype(TINY.out_dtype), "C")
    s = create_schedule(c)
    s[x_buf].set_scope(TINY.acc_scope)
    s[x_buf].pragma(s[x_buf].op.axis[1], TINY.dma_copy)  # the loop over i stays outside
    s[r].set_scope(TINY.acc_scope)
    s[r].pragma(s[r].op.axis[0], TINY.alu)
    s[c].pragma(s[c].op.axis[0], TINY.dma_copy)
    case = Case(
        TINY, s, (x, c), lambda a: (a[:, :rows, :cols] + 1).astype(np.int8), int32_range=100
    )
    _, after = case.around("inject_dma")
    ((load, loops),) = [(d, lp) for d, lp in with_loops(after, Dma) if d.stage == "X_buf"]
    blocks = 1 if gap else n
    assert [extent for _, extent in loops] == ([n] if gap else [])
    assert (load.y_extent, load.x_extent, load.x_stride) == (blocks * rows, cols, width)
    assert load.y_bounds is None and load.x_bounds is None
    _assert_bit_exact(case)


def test_inject_dma_reads_padding_bounds_from_the_pad_condition():
    case = conv_case(TINY, size=6, ci=2, tile_h=2, ic_step=2)
    before, after = case.around("inject_dma")
    assert len(_pragmas(before, "dma_copy")) == 3
    ((load, loops),) = [(d, lp) for d, lp in with_loops(after, Dma) if d.stage == "data_pad"]
    # One transfer per channel block: padded lines cannot be merged across blocks.
    assert loops == [("ax2.outer", 3), ("ax1", 2)]
    assert (load.opcode, load.mem) == (Opcode.LOAD, MemId.INP)
    assert (load.y_extent, load.x_extent, load.x_stride) == (4, 8, 6)
    # Rows of tile t: padded rows 2t .. 2t+3, i.e. image rows 2t-1 .. 2t+2.
    assert [index_form(e) for e in load.y_bounds] == [
        {"ax2.outer": -2, "1": 1},
        {"ax2.outer": -2, "1": 7},
    ]
    assert [index_form(e) for e in load.x_bounds] == [{"1": 1}, {"1": 7}]
    assert index_form(load.dram_index) == {"ax2.outer": 12, "ax1": 36, "1": -7}
    assert index_form(load.sram.index) == {"ax1": 32}
    weights = _dma(after, "kernel.local.wgt_buffer")
    assert weights.y_bounds is None and weights.x_bounds is None


def test_inject_dma_loads_int8_into_the_accumulator_sign_extended():
    case = alu_case(
        TINY,
        lambda x, y: te.maximum(x >> 1, -20),
        lambda x, y: np.maximum(x >> 1, -20),
        x_dtype="int8",
    )
    before, after = case.around("inject_dma")
    assert len(_pragmas(before, "dma_copy")) == 2
    load = _dma(after, "X_buf")
    assert (load.opcode, load.mem, load.dram.name) == (Opcode.LOAD, MemId.ACC_8BIT, "X")
    assert (load.y_extent, load.x_extent, load.x_stride) == (1, 6, 6)
    store = _dma(after, "C")
    assert (store.opcode, store.mem, store.sram.buffer.name) == (Opcode.STORE, MemId.OUT, "R")
    _assert_bit_exact(case)  # zero-extended, -128 would come out as 64, not -20


PADDED_CONVS = {
    "stride1": {"size": 6, "tile_h": 2},
    "stride2": {"size": 8, "stride": 2, "tile_h": 2},
    "stride2-odd": {"size": 7, "stride": 2, "tile_h": 2},
    "pad2-k5": {"size": 6, "kernel": 5, "pad": 2, "tile_h": 3},
    "two-blocks-per-step": {"size": 6, "tile_h": 3, "ic_step": 2},
    "vthreads": {"size": 8, "tile_h": 2, "threads": 2},
}


def _expected_input_loads(geometry: dict) -> list[tuple]:
    """(DRAM row offset, y_size, x_size, x_stride, pads) of every INP load of the padded
    convolution, computed from the geometry alone."""
    size, pad, stride = geometry["size"], geometry["pad"], geometry["stride"]
    kernel, out, tile_h = geometry["kernel"], geometry["out"], geometry["tile_h"]
    lines = (tile_h - 1) * stride + kernel
    columns = (out - 1) * stride + kernel
    x_lo, x_hi = max(-pad, 0), min(columns - pad, size)
    x_pads = (x_lo + pad, columns - pad - x_hi)
    expected = []
    for tile in range(out // tile_h):
        top = tile * tile_h * stride - pad  # image row of the tile's first line
        y_lo, y_hi = max(top, 0), min(top + lines, size)
        y_pads = (y_lo - top, top + lines - y_hi)
        for block in range(geometry["ci"]):
            offset = block * size * size + y_lo * size + x_lo
            pads = (*y_pads, *x_pads)
            expected.append((offset, y_hi - y_lo, x_hi - x_lo, size, pads))
    return sorted(expected)


@pytest.mark.parametrize("params", PADDED_CONVS.values(), ids=PADDED_CONVS.keys())
def test_each_input_load_is_padded_as_its_tile_needs(params):
    case = conv_case(TINY, **params)
    function = case.build()
    base = dram_row(function, "data")
    got = sorted(
        (
            insn.dram_base - base,
            insn.y_size,
            insn.x_size,
            insn.x_stride,
            (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1),
        )
        for insn in loads(function, MemId.INP)
    )
    assert got == _expected_input_loads(case.geometry)
    _assert_bit_exact(case, function)


# ---------------------------------------------------------------------- share_acc_storage
def _alu_stores(func) -> list[Store]:
    return [n for attr in _pragmas(func, "alu") for n in nodes(attr, Store)]


def _loads_of(store: Store) -> list[str]:
    return sorted(n.buffer.name for n in nodes(store.value, Load))


def test_share_acc_storage_computes_in_place_into_a_dying_accumulator():
    case = epilogue_case(TINY, source_read_later=False)
    before, after = case.around("share_acc_storage")
    assert {"C_buf", "S", "T"} <= allocated(before)
    assert [s.buffer.name for s in _alu_stores(before)] == ["S", "T"]
    assert allocated(after) == {"A_buf", "B_buf", "C_buf"}
    stores = _alu_stores(after)
    assert [s.buffer.name for s in stores] == ["C_buf", "C_buf"]
    assert [_loads_of(s) for s in stores] == [["C_buf"], ["C_buf"]]
    _assert_bit_exact(case)


def test_share_acc_storage_keeps_a_buffer_whose_source_is_read_later():
    case = epilogue_case(TINY, source_read_later=True)
    before, after = case.around("share_acc_storage")
    # S reads C_buf, which T reads again: S keeps its own rows. T reads S last: in place.
    assert allocated(after) == allocated(before) - {"T"}
    assert "S" in allocated(after)
    stores = _alu_stores(after)
    assert [s.buffer.name for s in stores] == ["S", "S"]
    assert [_loads_of(s) for s in stores] == [["C_buf"], ["C_buf", "S"]]
    _assert_bit_exact(case)


# ------------------------------------------------------------------------------- lower_alu
ADD, SHR, MAX, MUL = AluOp.ADD, AluOp.SHR, AluOp.MAX, AluOp.MUL

ALU_EXPRESSIONS = {
    "shr": (lambda x, y: x >> 8, lambda x, y: x >> 8, [(False, SHR, 8, None)]),
    "shl": (lambda x, y: x << 2, lambda x, y: x << 2, [(False, SHR, -2, None)]),
    "max0": (lambda x, y: te.maximum(x, 0), lambda x, y: np.maximum(x, 0), [(False, MAX, 0, None)]),
    "bias": (lambda x, y: x + y, lambda x, y: x + y, [(False, ADD, None, "Y_buf")]),
    "minus3": (lambda x, y: x - 3, lambda x, y: x - 3, [(False, ADD, -3, None)]),
    "times5": (lambda x, y: x * 5, lambda x, y: x * 5, [(False, MUL, 5, None)]),
    "times-minus3": (lambda x, y: x * -3, lambda x, y: x * -3, [(False, MUL, -3, None)]),
    "negate": (lambda x, y: -x, lambda x, y: -x, [(False, MUL, -1, None)]),
    "cast-int8": (
        lambda x, y: x.astype("int8").astype("int32"),
        lambda x, y: x.astype(np.int8).astype(np.int32),
        [(False, SHR, -24, None), (False, SHR, 24, None)],
    ),
    "requantise": (
        lambda x, y: te.minimum(te.maximum((x >> 8) + y, 0), 127),
        lambda x, y: np.clip((x >> 8) + y, 0, 127),
        [
            (False, SHR, 8, None),
            (False, ADD, None, "Y_buf"),
            (False, MAX, 0, None),
            (False, AluOp.MIN, 127, None),
        ],
    ),
}


@pytest.mark.parametrize(
    ("te_fn", "np_fn", "ops"), ALU_EXPRESSIONS.values(), ids=ALU_EXPRESSIONS.keys()
)
def test_lower_alu_emits_one_step_per_operation(te_fn, np_fn, ops):
    case = alu_case(TINY, te_fn, np_fn, rows=(2, 3))
    before, after = case.around("lower_alu")
    assert len(_pragmas(before, "alu")) == 1
    assert nodes(before, ComputeStep) == []
    assert _pragmas(after, "alu") == []
    steps = with_loops(after, ComputeStep)
    got = [
        (s.reset, s.alu_op, s.imm, s.src.buffer.name if s.src is not None else None)
        for s, _ in steps
    ]
    assert got == ops  # in place into X_buf, loaded here and read nowhere else: no copy
    for step, loops in steps:
        assert step.stage == "R" and step.wgt is None
        assert step.dst.buffer.name == "X_buf"  # R computes in place
        assert index_form(step.dst.index) == {"ax0": 3, "ax1": 1}
        assert loops == [("ax0", 2), ("ax1", 3)]
        if step.src is not None:
            assert index_form(step.src.index) == {"ax0": 3, "ax1": 1}
    _assert_bit_exact(case)


@pytest.mark.parametrize(
    ("te_fn", "np_fn", "ops"), ALU_EXPRESSIONS.values(), ids=ALU_EXPRESSIONS.keys()
)
def test_lower_alu_without_the_alu_multiplier(te_fn, np_fn, ops):
    """A stage that needs MUL is a CompileError naming it where the configuration has no
    multiplier; every other stage compiles as with one, bit-exactly."""
    case = alu_case(NOMUL, te_fn, np_fn, rows=(2, 3))
    if not any(op is MUL for _, op, *_ in ops):
        _assert_bit_exact(case)
        return
    with pytest.raises(CompileError) as info:
        case.lower()
    assert (info.value.tensor, info.value.op) == ("R", "MUL")
    assert info.value.detail == (
        "the stage needs the ALU's MUL, but this configuration has no ALU multiplier "
        "(alu_mul=False)"
    )


def test_lower_alu_works_in_place_without_a_copy():
    case = epilogue_case(TINY, source_read_later=False)
    _, after = case.around("lower_alu")
    steps = [s for s in nodes(after, ComputeStep) if s.alu_op is not None]
    assert [(s.dst.buffer.name, s.src, s.alu_op, s.imm, s.reset) for s in steps] == [
        ("C_buf", None, SHR, 3, False),
        ("C_buf", None, MAX, 0, False),
    ]
    assert all(index_form(s.dst.index) == {"ax1": 1} for s in steps)


# -------------------------------------------------------------------------- tensorize_gemm
def test_tensorize_gemm_makes_row_steps_and_a_reset():
    case = matmul_case(TINY, n=3, m=4, loads_in_reduction=False)
    before, after = case.around("tensorize_gemm")
    assert [a.key for a in nodes(before, AttrStmt)] == [AttrKey.TENSORIZE]
    assert {s.buffer.name for s in nodes(before, Store)} == {"C_buf"}  # the init, the update
    assert nodes(before, ComputeStep) == []

    assert [a for a in nodes(after, AttrStmt) if a.key is AttrKey.TENSORIZE] == []
    assert nodes(after, Store) == []
    (reset, reset_loops), (gemm, gemm_loops) = with_loops(after, ComputeStep)
    assert reset.reset and reset.is_gemm and reset.stage == "C_buf"
    assert (reset.dst.buffer.name, index_form(reset.dst.index)) == ("C_buf", {"co": 1})
    assert reset_loops == [("co", 4)]
    assert not gemm.reset and gemm.is_gemm
    assert (gemm.dst.buffer.name, index_form(gemm.dst.index)) == ("C_buf", {"co": 1})
    assert (gemm.src.buffer.name, index_form(gemm.src.index)) == ("A_buf", {"ko": 1})
    assert (gemm.wgt.buffer.name, index_form(gemm.wgt.index)) == ("B_buf", {"co": 3, "ko": 1})
    assert gemm_loops == [("ko", 3), ("co", 4)]
    _assert_bit_exact(case)


# ------------------------------------------------------------------- inject_virtual_thread
def _thread(row: SramRow, per_thread: int) -> int:
    return index_form(row.index).get("1", 0) // per_thread


def _flat(stmt) -> list:
    """The statements of a body, through allocations and sequences."""
    if isinstance(stmt, Allocate):
        return _flat(stmt.body)
    if isinstance(stmt, Seq):
        return [part for inner in stmt.stmts for part in _flat(inner)]
    return [stmt]


def test_inject_virtual_thread_replicates_buffers_and_interleaves_the_threads():
    case = conv_case(TINY, size=8, tile_h=2, threads=2)
    before, after = case.around("inject_virtual_thread")
    (vthread,) = [f for f in nodes(before, For) if f.kind is ForKind.VTHREAD]
    assert vthread.extent == 2
    shapes = {a.buffer.name: a.buffer.shape for a in nodes(before, Allocate)}
    assert set(shapes) == {"res_conv", "data_pad", "kernel.local.wgt_buffer"}

    assert [f for f in nodes(after, For) if f.kind is ForKind.VTHREAD] == []
    doubled = {a.buffer.name: a.buffer.shape for a in nodes(after, Allocate)}
    assert doubled == {name: (2, *shape) for name, shape in shapes.items()}

    rows = {"data_pad": 4 * 10, "kernel.local.wgt_buffer": 2 * 9, "res_conv": 2 * 2 * 8}
    (reduction,) = [f for f in nodes(after, For) if f.var.name == "ic.outer"]
    body = []
    for stmt in _flat(reduction.body):
        if isinstance(stmt, Dma):
            body.append(("load", stmt.stage, _thread(stmt.sram, rows[stmt.sram.buffer.name])))
        else:
            (step,) = nodes(stmt, ComputeStep)
            body.append(("gemm", step.stage, _thread(step.dst, rows["res_conv"])))
    # Both threads' loads first, then both threads' GEMMs: thread 1's loads can overlap
    # thread 0's GEMM.
    assert body == [
        ("load", "data_pad", 0),
        ("load", "kernel.local.wgt_buffer", 0),
        ("load", "data_pad", 1),
        ("load", "kernel.local.wgt_buffer", 1),
        ("gemm", "res_conv", 0),
        ("gemm", "res_conv", 1),
    ]
    gemm0, gemm1 = nodes(reduction, ComputeStep)
    for operand, offset in (("dst", 32), ("src", 40), ("wgt", 18)):
        form0 = index_form(getattr(gemm0, operand).index)
        form1 = index_form(getattr(gemm1, operand).index)
        assert form1 == form0 | {"1": form0.get("1", 0) + offset}
    _assert_bit_exact(case)


# -------------------------------------------------------------------------- fold_uop_loops
def test_fold_uop_loops_puts_the_destination_moving_loop_innermost():
    case = matmul_case(TINY, n=3, m=4, loads_in_reduction=False)
    before, after = case.around("fold_uop_loops")
    assert nodes(before, UopKernel) == []
    assert [loops for _, loops in with_loops(before, ComputeStep)] == [
        [("co", 4)],
        [("ko", 3), ("co", 4)],
    ]
    kernels = with_loops(after, UopKernel)
    assert [loops for _, loops in kernels] == [[], []]  # every loop folded into a kernel
    reset, gemm = (k for k, _ in kernels)
    as_names = lambda pairs: [(v.name, n) for v, n in pairs]  # noqa: E731
    assert (as_names(reset.loops), as_names(reset.unrolled)) == ([("co", 4)], [])
    # ko inside co would write the same accumulator row at consecutive steps.
    assert (as_names(gemm.loops), as_names(gemm.unrolled)) == ([("ko", 3), ("co", 4)], [])

    function = case.build()
    (insn, steps), *rest = [g for g in decoded_gemms(function.program) if not g[0].reset_reg]
    assert rest == []
    triples = set(zip(*(steps[op].tolist() for op in Operand), strict=True))
    assert triples == {(co, ko, co * 3 + ko) for co in range(4) for ko in range(3)}
    assert (insn.iter_out, insn.iter_in) == (3, 4)
    _assert_bit_exact(case, function)


FOLD_CASES = {
    "matmul": lambda: matmul_case(TINY, n=3, m=4, loads_in_reduction=True),
    "conv": lambda: conv_case(TINY, size=6, tile_h=2),
    "conv-stride2": lambda: conv_case(TINY, size=8, stride=2, tile_h=2, ic_step=2),
    "conv-vthreads": lambda: conv_case(TINY, size=8, tile_h=2, threads=2),
    "conv-default-config": lambda: conv_case(env_of("default"), size=4, ci=2, co=2, tile_h=4),
}


def _gemm_row_steps(case: Case) -> int:
    """How many GEMM steps (one accumulator row each) the computation needs."""
    g = case.geometry
    if "m" in g:
        return g["m"] * g["n"]
    return g["co"] * g["out"] * g["out"] * g["ci"] * g["kernel"] ** 2


@pytest.mark.parametrize("make", FOLD_CASES.values(), ids=FOLD_CASES.keys())
def test_fold_uop_loops_makes_kernels_that_keep_the_accumulator_window(make):
    case = make()
    before, after = case.around("fold_uop_loops")
    nests = {id(s): {name for name, _ in loops} for s, loops in with_loops(before, ComputeStep)}
    assert nodes(before, UopKernel) == [] and nests
    limit = case.env.cfg.uop_buff_depth // 2
    kernels = nodes(after, UopKernel)
    assert len(kernels) == len(nests)
    for kernel in kernels:
        assert len(kernel.loops) <= 2
        extents = [n for _, n in kernel.unrolled]
        assert kernel.uop_count == int(np.prod(extents)) <= limit
    for step in nodes(after, ComputeStep):
        assert any(k.step is step for k in kernels)  # no compute step outside a kernel

    function = case.build()
    window = case.env.cfg.acc_raw_window
    total = 0
    for insn, steps in decoded_gemms(function.program):
        assert insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn) == len(
            steps[Operand.DST]
        )
        if insn.reset_reg:
            continue
        dst = steps[Operand.DST]
        total += len(dst)
        for distance in range(1, window + 1):
            clash = np.nonzero(dst[distance:] == dst[:-distance])[0]
            assert clash.size == 0, f"step {clash[:1]} rewrites a row {distance} steps later"
    assert total == _gemm_row_steps(case)
    _assert_bit_exact(case, function)


# ----------------------------------------------------------------- every example, end to end
EXAMPLES = {
    "matmul-loads-per-step": lambda: matmul_case(TINY, loads_in_reduction=True),
    "matmul-loads-once": lambda: matmul_case(TINY, loads_in_reduction=False),
    "matmul-default-config": lambda: matmul_case(env_of("default"), n=4, m=4),
    "epilogue-in-place": lambda: epilogue_case(TINY, source_read_later=False),
    "epilogue-source-read-later": lambda: epilogue_case(TINY, source_read_later=True),
    "conv-padded": lambda: conv_case(TINY, size=6, tile_h=3),
    "conv-vthreads-two-blocks-per-step": lambda: conv_case(
        TINY, size=8, tile_h=2, threads=2, ic_step=2
    ),
}


@pytest.mark.parametrize("make", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_examples_run_bit_exact_on_fsim(make):
    case = make()
    for seed in (1, 2):
        got, want = case.run(seed=seed)
        np.testing.assert_array_equal(got, want)
