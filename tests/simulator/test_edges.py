"""The simulators at the edges of their buffers and transfers (issue 17 item 18): a kernel that
ends at the last micro-op slot, steps one row inside and one row past a buffer's end, loads
padded on one side only (right, bottom) on both simulators against numpy, a STORE with any one
pad, strided transfers whose last row ends one byte past DRAM, and the cycle model's bottom
padding and outstanding-write bound against closed forms.

Values are checked against numpy and the slow reference interpreter
(``tests/conformance/reference.py``); cycles against closed forms written here from the
microarchitecture the model mirrors (one SRAM row written per cycle, pad rows included; a write
burst may start only while fewer than ``outstanding_writes`` are unanswered).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    DramSegment,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Program,
    TimingConfig,
    Uop,
)
from simulator import CycleSimulator, FunctionalSimulator, SimulationError
from tests.conformance.reference import reference_run

TINY = AccelConfig.preset("tiny")
IMM = 5


def _uop_load(slot: int, uop_base: int, **flags) -> MemInsn:
    return MemInsn(
        opcode=Opcode.LOAD,
        memory_type=MemId.UOP,
        sram_base=slot,
        dram_base=uop_base,
        y_size=1,
        x_size=1,
        x_stride=1,
        **flags,
    )


def _store_out(rows: int, dram_base: int, **flags) -> MemInsn:
    return MemInsn(
        opcode=Opcode.STORE,
        memory_type=MemId.OUT,
        sram_base=0,
        dram_base=dram_base,
        y_size=1,
        x_size=rows,
        x_stride=rows,
        **flags,
    )


def _compute_noop(**flags) -> MemInsn:
    """A LOAD UOP of nothing: a compute instruction that only carries dependency flags."""
    return MemInsn(
        opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=0, y_size=0, x_size=0,
        x_stride=0, **flags,
    )  # fmt: skip


def _alu_program(slot: int, uop: Uop, *, iter_out: int = 1, dst_factor_out: int = 0) -> Program:
    """Load ``uop`` into micro-op slot ``slot``, add IMM to ACC through it (``iter_out`` times,
    the destination moving by ``dst_factor_out``), store OUT row 0 after the table, FINISH."""
    insns = [
        _uop_load(slot, 0),
        AluInsn(
            alu_opcode=AluOp.ADD,
            use_imm=True,
            imm=IMM,
            uop_bgn=slot,
            uop_end=slot + 1,
            iter_out=iter_out,
            iter_in=1,
            dst_factor_out=dst_factor_out,
            push_next_dep=True,
        ),
        _store_out(1, 1, pop_prev_dep=True, push_prev_dep=True),
        _compute_noop(pop_next_dep=True),
        FinishInsn(),
    ]
    return Program(TINY, insns, [uop], uop_base=0)


def _run_all(program: Program, size: int) -> list[np.ndarray]:
    """DRAM after the functional, the cycle-level and the reference interpreter's runs."""
    drams = []
    for simulator in (FunctionalSimulator(program.config), CycleSimulator(program.config)):
        dram = np.zeros(size, np.uint8)
        simulator.run(program, dram)
        drams.append(dram)
    reference = bytearray(size)
    reference_run(program, reference)
    return [*drams, np.frombuffer(bytes(reference), np.uint8)]


# ---------------------------------------------------------------------- micro-op slots
def test_a_kernel_ending_at_the_last_micro_op_slot_runs():
    last = TINY.uop_buff_depth - 1
    out_bytes = TINY.out_elem_bytes
    expected = np.full(out_bytes, IMM, np.uint8)  # ACC starts at 0: each lane becomes IMM
    for dram in _run_all(_alu_program(last, Uop(dst_idx=0, src_idx=0)), 2 * out_bytes):
        np.testing.assert_array_equal(dram[out_bytes:], expected)


def test_a_kernel_past_the_last_micro_op_slot_is_refused():
    depth = TINY.uop_buff_depth
    insn = AluInsn(
        alu_opcode=AluOp.ADD, use_imm=True, uop_bgn=depth - 1, uop_end=depth + 1, iter_out=1,
        iter_in=1,
    )  # fmt: skip
    with pytest.raises(SimulationError, match=f"uop_end <= {depth}"):
        FunctionalSimulator(TINY).run([insn, FinishInsn()], np.zeros(64, np.uint8))


# ---------------------------------------------------------------------- buffer rows
@pytest.mark.parametrize("reach", [0, 1], ids=["last-row", "one-past-the-end"])
def test_a_step_one_row_past_the_accumulator_is_refused(reach):
    """Two iterations from the last-but-one row (reach 0: ends on the last row) or from the
    last row (reach 1: the second step is one row past the end)."""
    depth = TINY.acc_buff_depth
    start = depth - 2 + reach
    program = _alu_program(0, Uop(dst_idx=start, src_idx=0), iter_out=2, dst_factor_out=1)
    dram = np.zeros(2 * TINY.out_elem_bytes, np.uint8)
    if reach:
        with pytest.raises(SimulationError, match=f"ACC row {depth} .* has {depth} rows"):
            FunctionalSimulator(TINY).run(program, dram)
    else:
        FunctionalSimulator(TINY).run(program, dram)


@pytest.mark.parametrize(("mem", "field"), [(MemId.INP, "src_idx"), (MemId.WGT, "wgt_idx")])
def test_a_gemm_step_one_row_past_an_input_buffer_is_refused(mem, field):
    depth = TINY.buffer_depth(mem)
    uop = Uop(dst_idx=0, src_idx=0, wgt_idx=0)
    gemm = dict(uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1)
    factor = "src_factor_out" if mem is MemId.INP else "wgt_factor_out"
    sim = FunctionalSimulator(TINY)
    for start, refused in ((depth - 2, False), (depth - 1, True)):
        kernel = Uop(**{**uop.__dict__, field: start})
        insns = [_uop_load(0, 0), GemmInsn(**gemm, **{factor: 1}), FinishInsn()]
        program = Program(TINY, insns, [kernel], uop_base=0)
        dram = np.zeros(64, np.uint8)
        if refused:
            with pytest.raises(SimulationError, match=f"{mem.name} row {depth} "):
                sim.run(program, dram)
        else:
            sim.run(program, dram)


# ---------------------------------------------------------------------- one-sided padding
_PADDINGS = {
    "right": dict(x_pad_1=2),
    "bottom": dict(y_pad_1=2),
    "left": dict(x_pad_0=1),
    "top": dict(y_pad_0=3),
    "bottom-right": dict(y_pad_1=1, x_pad_1=1),
}


def _padded_acc_program(y_size: int, x_size: int, pads: dict[str, int]) -> tuple[Program, int]:
    """LOAD a y_size x x_size block of ACC rows with ``pads``, STORE every loaded row (pad rows
    included) after the data; returns the program and where the stored rows start."""
    cfg = TINY
    elem = cfg.acc_elem_bytes
    rng = np.random.default_rng(7)
    data = rng.integers(-100, 100, (y_size * x_size, cfg.batch * cfg.block_out), np.int32)
    rows = (y_size + pads.get("y_pad_0", 0) + pads.get("y_pad_1", 0)) * (
        x_size + pads.get("x_pad_0", 0) + pads.get("x_pad_1", 0)
    )
    out_base = y_size * x_size * elem // cfg.out_elem_bytes + 8  # in OUT elements, after data
    load = MemInsn(
        opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=0, dram_base=0, y_size=y_size,
        x_size=x_size, x_stride=x_size, push_next_dep=False, **pads,
    )  # fmt: skip
    # ALU ADD 0 over every loaded row makes ACC visible in OUT (a copy, wrapped to 8 bits).
    uop_base = (out_base + rows) * cfg.out_elem_bytes // cfg.uop_elem_bytes + 4
    insns = [
        load,
        _uop_load(0, uop_base),
        AluInsn(
            alu_opcode=AluOp.ADD, use_imm=True, imm=0, uop_bgn=0, uop_end=1, iter_out=rows,
            iter_in=1, dst_factor_out=1, src_factor_out=1, push_next_dep=True,
        ),
        _store_out(rows, out_base, pop_prev_dep=True, push_prev_dep=True),
        _compute_noop(pop_next_dep=True),
        FinishInsn(),
    ]  # fmt: skip
    segments = [DramSegment("acc", 0, data.astype("<i4").tobytes())]
    program = Program(cfg, insns, [Uop(dst_idx=0, src_idx=0)], uop_base, segments)
    return program, out_base * cfg.out_elem_bytes


@pytest.mark.parametrize("side", list(_PADDINGS))
def test_a_load_padded_on_one_side_on_both_simulators(side):
    pads = _PADDINGS[side]
    y_size, x_size = 3, 2
    program, out_at = _padded_acc_program(y_size, x_size, pads)
    lanes = TINY.batch * TINY.block_out
    data = np.frombuffer(program.segments[0].data, "<i4").reshape(y_size, x_size, lanes)
    expected = np.pad(
        data,
        (
            (pads.get("y_pad_0", 0), pads.get("y_pad_1", 0)),
            (pads.get("x_pad_0", 0), pads.get("x_pad_1", 0)),
            (0, 0),
        ),
    ).astype(np.int8)  # OUT keeps the low 8 bits
    for dram in _run_all(program, program.dram_extent + expected.size + 64):
        stored = dram[out_at : out_at + expected.size].view(np.int8).reshape(expected.shape)
        np.testing.assert_array_equal(stored, expected)


@pytest.mark.parametrize("pad", ["y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"])
def test_a_store_with_any_one_pad_is_refused(pad):
    store = MemInsn(
        opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=0, y_size=1,
        x_size=1, x_stride=1, **{pad: 1},
    )  # fmt: skip
    for simulator in (FunctionalSimulator(TINY), CycleSimulator(TINY)):
        with pytest.raises(SimulationError, match="STORE does not pad"):
            simulator.run([store, FinishInsn()], np.zeros(64, np.uint8))


# ---------------------------------------------------------------------- cycles
def _lone_load_cycles(timing: TimingConfig, stepped: bool, **pads) -> int:
    """Cycles from a lone LOAD INP's start to its retirement."""
    elems = 4
    load = MemInsn(
        opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0, dram_base=0, y_size=1,
        x_size=elems, x_stride=elems, push_next_dep=True, **pads,
    )  # fmt: skip
    insns = [load, _compute_noop(pop_prev_dep=True), FinishInsn()]
    program = Program(TINY, insns, segments=[DramSegment("inp", 0, bytes(64))])
    stats = CycleSimulator(TINY, timing, stepped=stepped).run(program, np.zeros(128, np.uint8))
    return stats.instructions[0].retired - stats.instructions[0].started


@pytest.mark.parametrize("stepped", [False, True], ids=["event-driven", "stepped"])
@pytest.mark.parametrize("latency", [1, 9])
def test_bottom_padding_costs_one_cycle_per_pad_row(latency, stepped):
    """Pad rows are written one per cycle after the last data row: y_pad_1 lines of
    x_pad_0 + x_size + x_pad_1 rows add exactly that many cycles to a lone LOAD."""
    timing = TimingConfig(read_latency=latency)
    base = _lone_load_cycles(timing, stepped)
    for y_pad_1, x_pad_1 in ((1, 0), (3, 0), (2, 1)):
        width = 4 + x_pad_1
        padded = _lone_load_cycles(timing, stepped, y_pad_1=y_pad_1, x_pad_1=x_pad_1)
        assert padded - base == y_pad_1 * width + x_pad_1, (y_pad_1, x_pad_1)


def _strided_store_bursts(timing: TimingConfig, stepped: bool) -> list:
    """The write bursts of a STORE of 4 rows of 3 elements, 5 apart (a burst per row)."""
    store = MemInsn(
        opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=0, y_size=4,
        x_size=3, x_stride=5, push_prev_dep=True,
    )  # fmt: skip
    program = Program(TINY, [store, _compute_noop(pop_next_dep=True), FinishInsn()])
    stats = CycleSimulator(TINY, timing, stepped=stepped).run(program, np.zeros(256, np.uint8))
    return [b for b in stats.bursts if b.port == "write"]


@pytest.mark.parametrize("stepped", [False, True], ids=["event-driven", "stepped"])
@pytest.mark.parametrize("outstanding", [1, 2, 3])
def test_write_bursts_in_flight_never_exceed_the_outstanding_bound(outstanding, stepped):
    """A long write-response latency makes every burst wait: when one is accepted, the bursts
    accepted before it whose response (``write_response_latency`` after their last beat) has
    not arrived number fewer than ``outstanding_writes``, and the bound is reached."""
    latency = 20
    timing = TimingConfig(outstanding_writes=outstanding, write_response_latency=latency)
    bursts = _strided_store_bursts(timing, stepped)
    assert len(bursts) == 4
    in_flight = [
        sum(1 for b in bursts[:i] if b.last + latency >= burst.accepted)
        for i, burst in enumerate(bursts)
    ]
    assert max(in_flight) == outstanding - 1, in_flight  # reached, never exceeded
    if outstanding == 1:  # each burst is accepted the cycle after the previous one's response
        for before, after in itertools.pairwise(bursts):
            assert after.accepted == before.last + latency + 1


@pytest.mark.parametrize("x_stride", [2, 3, 7])
@pytest.mark.parametrize("opcode", [Opcode.LOAD, Opcode.STORE])
def test_a_strided_transfer_whose_last_row_is_past_dram_is_refused(opcode, x_stride):
    """Rows of 1 element, ``x_stride`` apart: the transfer ends one element past its last row's
    start, ``(y_size - 1) * x_stride + 1`` elements after its first; DRAM one byte short of
    that is refused (naming the last byte) and keeps every byte, one byte longer is not."""
    store = opcode is Opcode.STORE
    mem = MemId.OUT if store else MemId.ACC  # a LOAD ACC runs on compute, a STORE on store
    elem = TINY.elem_bytes(mem)
    y_size, dram_base = 3, 2
    end = (dram_base + (y_size - 1) * x_stride + 1) * elem
    insn = MemInsn(
        opcode=opcode, memory_type=mem, sram_base=0, dram_base=dram_base, y_size=y_size,
        x_size=1, x_stride=x_stride, push_prev_dep=store,
    )  # fmt: skip
    program = [insn, *([_compute_noop(pop_next_dep=True)] if store else []), FinishInsn()]
    short = np.full(end - 1, 7, np.uint8)
    with pytest.raises(SimulationError, match=f"DRAM bytes {dram_base * elem:#x}..{end - 1:#x}"):
        FunctionalSimulator(TINY).run(program, short)
    assert (short == 7).all()
    FunctionalSimulator(TINY).run(program, np.zeros(end, np.uint8))


@pytest.mark.parametrize("opcode", [Opcode.LOAD, Opcode.STORE])
def test_a_strided_transfer_of_no_rows_touches_nothing_wherever_it_starts(opcode):
    """``y_size`` 0 with a row length and a stride (a mutated word of the fuzz suite): the
    transfer moves no byte, so its start far past DRAM is no error, on both simulators with
    the race detector on, and DRAM keeps every byte; the reference interpreter agrees."""
    store = opcode is Opcode.STORE
    mem = MemId.OUT if store else MemId.ACC
    insn = MemInsn(
        opcode=opcode, memory_type=mem, sram_base=0, dram_base=4000, y_size=0, x_size=3,
        x_stride=5, push_prev_dep=store,
    )  # fmt: skip
    program = Program(TINY, [insn, *([_compute_noop(pop_next_dep=True)] if store else []),
                             FinishInsn()])  # fmt: skip
    for dram in _run_all(program, 64):
        assert (dram == 0).all()
