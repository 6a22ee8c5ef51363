"""Broken programs: every way a program can be wrong gives the right error, naming the
instruction (index and disassembly), and a failing instruction writes nothing."""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
import sys

import numpy as np
import pytest

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    DramBuffer,
    DramSegment,
    FinishInsn,
    GemmInsn,
    Kernel,
    Loop,
    MemId,
    MemInsn,
    Opcode,
    Program,
    ProgramBuilder,
    Stage,
    Uop,
    encode,
    format_insn,
    stage_of,
)
from simulator import DeadlockError, FunctionalSimulator, RaceError, SimulationError
from tests.conformance.cases import CASES

TINY = AccelConfig.preset("tiny")


def _case_program(name: str, cfg: AccelConfig = TINY) -> Program:
    return next(c for c in CASES if c.name == name).build(cfg, 0).program


def _run(program: Program, **options) -> np.ndarray:
    dram = np.zeros(max(program.dram_extent, 4096), dtype=np.uint8)
    FunctionalSimulator(program.config, **options).run(program, dram)
    return dram


def _edit(program: Program, index: int, **fields) -> Program:
    insns = list(program.instructions)
    insns[index] = dataclasses.replace(insns[index], **fields)
    return dataclasses.replace(program, instructions=tuple(insns))


def _flagged(program: Program, flag: str, stage: Stage) -> list[int]:
    return [
        i
        for i, insn in enumerate(program.instructions)
        if getattr(insn, flag) and stage_of(insn) is stage
    ]


def _names_instruction(err: SimulationError, program: Program, index: int) -> None:
    assert err.index == index
    assert f"instruction {index} ({format_insn(program.instructions[index])})" in str(err)


# ---------------------------------------------------------------------- deadlocks
def test_dropping_a_push_deadlocks_the_popping_module():
    program = _case_program("blocked_gemm_vt1")
    pushes = _flagged(program, "push_next_dep", Stage.LOAD)  # l2g
    pops = _flagged(program, "pop_prev_dep", Stage.COMPUTE)  # l2g
    g2l_pops = _flagged(program, "pop_next_dep", Stage.LOAD)
    broken = _edit(program, pushes[0], push_next_dep=False)
    with pytest.raises(DeadlockError) as info:
        _run(broken)
    err = info.value
    # The first GEMM now waits for the second load's l2g, and the second load (which comes
    # first in the load queue) waits for that GEMM's g2l: a cycle.
    blocked = {b.unit: b.index for b in err.blocked}
    assert (blocked["compute"], blocked["load"]) == (pops[0], g2l_pops[1])
    assert "waiting to pop l2g (0 tokens)" in str(err)
    assert "waiting to pop g2l (0 tokens)" in str(err)
    assert f"({format_insn(program.instructions[pops[0]])})" in str(err)
    assert "token counters: l2g=0 g2l=0 g2s=0 s2g=0" in str(err)


def test_dropping_a_drain_pop_leaves_a_counter_at_finish():
    program = _case_program("blocked_gemm_vt1")
    drain = _flagged(program, "pop_next_dep", Stage.LOAD)[-1]  # the epilogue's g2l drain
    broken = _edit(program, drain, pop_next_dep=False)
    finish = len(program.instructions) - 1
    with pytest.raises(SimulationError) as info:
        _run(broken)
    assert type(info.value) is SimulationError
    _names_instruction(info.value, program, finish)
    assert "token counters must be zero at FINISH, but g2l=1" in str(info.value)


def test_a_store_not_ordered_before_finish_is_an_error():
    program = _case_program("save_load_out")
    finish = len(program.instructions) - 1
    last_pop = max(_flagged(program, "pop_next_dep", Stage.COMPUTE))  # s2g, before FINISH
    store = max(i for i, insn in enumerate(program.instructions) if stage_of(insn) is Stage.STORE)
    broken = _edit(program, last_pop, pop_next_dep=False)
    with pytest.raises(SimulationError) as info:
        _run(broken)
    _names_instruction(info.value, program, finish)
    assert f"instruction {store}" in str(info.value)
    assert "does not happen before FINISH" in str(info.value)


def test_full_command_queue_deadlocks_fetch():
    """Compute waits for a token that only a load behind 16 queued compute instructions
    pushes: with a 16-deep queue fetch stalls (a deadlock), with a deeper one it runs."""

    def program(cfg: AccelConfig) -> Program:
        b = ProgramBuilder(cfg)
        inp = b.alloc("inp", MemId.INP, 1)
        b.dep_pop(Stage.LOAD, Stage.COMPUTE)
        for _ in range(TINY.cmd_queue_depth + 2):
            b.alu(Kernel((Uop(dst_idx=0, src_idx=0),)), AluOp.ADD, imm=1)
        b.load_2d(inp, sram=0, y_size=1, x_size=1)
        b.dep_push(Stage.LOAD, Stage.COMPUTE)
        return b.finish()

    _run(program(TINY.replace(cmd_queue_depth=64)))
    shallow = program(TINY)
    with pytest.raises(DeadlockError) as info:
        _run(shallow)
    units = {b.unit: b for b in info.value.blocked}
    assert set(units) == {"compute", "fetch"}
    assert units["compute"].index == 0
    assert "the compute command queue is full (16 instructions)" in str(info.value)
    # fetch stopped at the instruction that no longer fits: 1 taken + 16 queued before it
    assert units["fetch"].index == 17


# ---------------------------------------------------------------------- races
def test_dropping_the_token_of_a_load_is_a_race_on_the_rows_it_wrote():
    program = _case_program("blocked_gemm_vt1")
    push = _flagged(program, "push_next_dep", Stage.LOAD)[0]  # on the first WGT load
    pop = _flagged(program, "pop_prev_dep", Stage.COMPUTE)[0]  # on the first GEMM
    broken = _edit(_edit(program, push, push_next_dep=False), pop, pop_prev_dep=False)
    inp_load = push - 1
    assert program.instructions[inp_load].memory_type is MemId.INP
    for order in itertools.permutations(Stage):
        with pytest.raises(RaceError) as info:
            _run(broken, module_order=order)
        err = info.value
        assert err.buffer == "INP"
        assert err.rows == tuple(range(16))  # the 4 x 4 input tile
        assert {err.earlier[0], err.later[0]} == {inp_load, pop}
        assert f"instruction {inp_load} (LOAD memory_type=INP" in str(err)


def test_a_store_reordered_before_its_compute_is_a_race_whatever_runs_first():
    program = _case_program("save_load_out")
    insns = list(program.instructions)
    alu = next(i for i, insn in enumerate(insns) if isinstance(insn, AluInsn))
    store = next(i for i, insn in enumerate(insns) if insn.opcode is Opcode.STORE and insn.x_size)
    moved = dataclasses.replace(insns[store], pop_prev_dep=False)
    reordered = [*insns[:alu], moved, *(i for k, i in enumerate(insns[alu:], alu) if k != store)]
    broken = dataclasses.replace(program, instructions=tuple(reordered))
    for order in itertools.permutations(Stage):
        dram_before = np.zeros(max(program.dram_extent, 4096), dtype=np.uint8)
        dram = dram_before.copy()
        with pytest.raises(RaceError) as info:
            FunctionalSimulator(TINY, module_order=order).run(broken, dram)
        err = info.value
        assert err.buffer == "OUT"
        assert {err.earlier[0], err.later[0]} == {alu, alu + 1}
        assert "no dependency token orders the two" in str(err)


def test_a_racing_store_writes_nothing():
    cfg = TINY
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, 4, np.arange(16, dtype="<i4"))
    out = b.alloc("out", MemId.OUT, 4)
    b.load_2d(acc, sram=0, y_size=1, x_size=4)
    b.alu(Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(4, 1, 1),)), AluOp.ADD, imm=1)
    b.store_2d(out, sram=0, y_size=1, x_size=4)  # no token from compute
    program = b.finish()
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    with pytest.raises(RaceError):
        FunctionalSimulator(cfg, module_order=(Stage.COMPUTE, Stage.STORE, Stage.LOAD)).run(
            program, dram
        )
    assert not dram[out.address : out.end].any()


# ---------------------------------------------------------------------- bad instructions
def _mem(opcode=Opcode.LOAD, memory_type=MemId.INP, **fields) -> MemInsn:
    spec = {"sram_base": 0, "dram_base": 0, "y_size": 1, "x_size": 1, "x_stride": 1}
    return MemInsn(opcode=opcode, memory_type=memory_type, **{**spec, **fields})


def _gemm(**fields) -> GemmInsn:
    return GemmInsn(**{"uop_bgn": 0, "uop_end": 1, "iter_out": 1, "iter_in": 1, **fields})


def _alu(**fields) -> AluInsn:
    spec = {"uop_bgn": 0, "uop_end": 1, "iter_out": 1, "iter_in": 1, "alu_opcode": AluOp.ADD}
    return AluInsn(**{**spec, **fields})


_UOP_LOAD = _mem(memory_type=MemId.UOP, x_size=2, x_stride=2)
_DEPTH = TINY.inp_buff_depth
BAD = {
    "SRAM rows beyond the buffer": (
        [_mem(sram_base=_DEPTH - 2, x_size=3, x_stride=3), FinishInsn()],
        0,
        f"writes INP rows {_DEPTH - 2}..{_DEPTH}, but the buffer has {_DEPTH} rows",
    ),
    "padding beyond the buffer": (
        [_mem(sram_base=_DEPTH - 4, x_pad_1=4), FinishInsn()],
        0,
        "but the buffer has",
    ),
    "DRAM read beyond its end": (
        [_mem(dram_base=4096 // 4), FinishInsn()],
        0,
        "DRAM bytes 0x1000..0x1003 are accessed, but DRAM has 0x1000 bytes",
    ),
    "micro-op range beyond the buffer": (
        [_gemm(uop_bgn=TINY.uop_buff_depth - 1, uop_end=TINY.uop_buff_depth + 1), FinishInsn()],
        0,
        "is not uop_bgn < uop_end",
    ),
    "micro-op range backwards": ([_gemm(uop_bgn=3, uop_end=2), FinishInsn()], 0, "uop_end"),
    "accumulator index beyond the buffer": (
        [_UOP_LOAD, _gemm(iter_out=3, dst_factor_out=TINY.acc_buff_depth - 1), FinishInsn()],
        1,
        f"reaches ACC row {2 * (TINY.acc_buff_depth - 1)} through dst_idx",
    ),
    "input index beyond the buffer": (
        [_UOP_LOAD, _gemm(iter_in=3, src_factor_in=_DEPTH - 1, dst_factor_in=1), FinishInsn()],
        1,
        f"reaches INP row {2 * (_DEPTH - 1)} through src_idx",
    ),
    "ALU source beyond the buffer": (
        [_UOP_LOAD, _alu(iter_in=3, src_factor_in=200, dst_factor_in=1), FinishInsn()],
        1,
        "reaches ACC row 400 through src_idx",
    ),
    "accumulator window": (
        [_UOP_LOAD, _gemm(iter_in=2), FinishInsn()],
        1,
        "step 1 reads ACC row 0 (dst) that step 0 writes, 1 step(s) earlier",
    ),
    "ALU window through src": (
        [_UOP_LOAD, _alu(iter_in=2, dst_factor_in=1), FinishInsn()],
        1,
        "step 1 reads ACC row 0 (src) that step 0 writes",
    ),
    "load pops its previous neighbour": (
        [_mem(pop_prev_dep=True), FinishInsn()],
        0,
        "pop_prev_dep not allowed on a load instruction",
    ),
    "store pushes its next neighbour": (
        [_mem(Opcode.STORE, MemId.OUT, push_next_dep=True), FinishInsn()],
        0,
        "push_next_dep not allowed on a store instruction",
    ),
    "FINISH pops": ([FinishInsn(pop_prev_dep=True)], 0, "FINISH carries no flags"),
    "FINISH pushes": ([FinishInsn(push_next_dep=True)], 0, "push_next_dep not allowed"),
    "LOAD into OUT": ([_mem(memory_type=MemId.OUT), FinishInsn()], 0, "LOAD cannot target OUT"),
    "STORE from ACC": (
        [_mem(Opcode.STORE, MemId.ACC), FinishInsn()],
        0,
        "STORE reads OUT only, not ACC",
    ),
    "STORE with padding": (
        [_mem(Opcode.STORE, MemId.OUT, x_pad_0=1), FinishInsn()],
        0,
        "STORE does not pad",
    ),
    "FINISH before the end": ([FinishInsn(), FinishInsn()], 0, "FINISH must be the last"),
    "no FINISH": ([_mem()], 0, "does not end with FINISH"),
    "field too wide": (
        [_mem(x_size=1 << TINY.mem_size_bits), FinishInsn()],
        0,
        "field x_size=65536 does not fit its 16 bits",
    ),
    "unknown opcode": ([7, FinishInsn()], 0, "unknown opcode 7"),
    "reserved micro-op bits": (
        [_mem(memory_type=MemId.UOP, dram_base=16), FinishInsn()],
        0,
        "micro-op word 0 of the transfer has reserved bits set (0xffffffff)",
    ),
}


@pytest.mark.parametrize(("insns", "index", "message"), BAD.values(), ids=list(BAD))
def test_bad_instructions_name_index_and_disassembly(insns, index, message):
    dram = np.zeros(4096, dtype=np.uint8)
    dram[64:68] = 0xFF  # a word no tiny micro-op can be (its top 8 bits are reserved)
    before = dram.copy()
    with pytest.raises(SimulationError) as info:
        FunctionalSimulator(TINY).run(insns, dram)
    err = info.value
    assert type(err) is SimulationError
    assert err.index == index
    text = str(err)
    assert text.startswith(f"instruction {index}")
    if not isinstance(insns[index], int):
        assert f"({format_insn(insns[index])})" in text
    assert message in text
    assert np.array_equal(dram, before)


def test_a_store_partly_outside_dram_writes_nothing():
    dram = np.full(64, 7, dtype=np.uint8)
    store = _mem(Opcode.STORE, MemId.OUT, dram_base=15, y_size=3, x_size=1, x_stride=1)
    store_first = (Stage.STORE, Stage.LOAD, Stage.COMPUTE)
    with pytest.raises(SimulationError, match="instruction 0 .*DRAM bytes 0x3c..0x47"):
        FunctionalSimulator(TINY, module_order=store_first).run([store, FinishInsn()], dram)
    assert (dram == 7).all()


def test_token_counter_cannot_overflow():
    limit = (1 << TINY.token_counter_bits) - 1
    push = _mem(x_size=0, push_next_dep=True)  # a load no-op pushing l2g
    with pytest.raises(SimulationError, match=f"instruction {limit} .*above {limit}"):
        FunctionalSimulator(TINY).run([push] * (limit + 1) + [FinishInsn()], np.zeros(16, np.uint8))


def test_whole_program_errors():
    sim = FunctionalSimulator(TINY)
    with pytest.raises(SimulationError, match="the program is empty"):
        sim.run([], np.zeros(16, np.uint8))
    with pytest.raises(SimulationError, match="1-D numpy array of uint8"):
        sim.run([FinishInsn()], np.zeros(16, np.int32))
    default = Program(AccelConfig(), [FinishInsn()])
    with pytest.raises(SimulationError, match="block_in 16 != 4"):
        sim.run(default, np.zeros(16, np.uint8))
    big = Program(TINY, [FinishInsn()], segments=[DramSegment("x", 100, b"\1")])
    with pytest.raises(SimulationError, match="too small"):
        sim.run(big, np.zeros(16, np.uint8))
    with pytest.raises(SimulationError, match="instruction 1: a str is neither"):
        sim.run([FinishInsn(), "FINISH"], np.zeros(16, np.uint8))
    # a simulator also takes instruction records or words (a device takes a Program alone)
    with pytest.raises(
        SimulationError, match=r"^program must be an isa\.Program or a sequence of instructions"
    ):
        sim.run(FinishInsn(), np.zeros(16, np.uint8))
    with pytest.raises(SimulationError, match="module_order"):
        FunctionalSimulator(TINY, module_order=(Stage.LOAD, Stage.LOAD, Stage.STORE))


def test_words_and_records_run_alike():
    program = _case_program("relu")
    words = [encode(insn, TINY) for insn in program.instructions]
    by_record = _run(program)
    dram = np.zeros(max(program.dram_extent, 4096), dtype=np.uint8)
    program.write_to(dram)
    FunctionalSimulator(TINY).run(words, dram)
    assert np.array_equal(dram, by_record)


def _store_then_load(rows: int, store: dict, load: dict) -> tuple[Program, DramBuffer]:
    """``rows`` accumulator rows, one added to each, stored (``store``: store_2d's arguments) to
    ``out``, then loaded back (``load``) with no token from the store: the program and ``out``."""
    b = ProgramBuilder(TINY)
    acc = b.alloc("acc", MemId.ACC, rows, np.arange(4 * rows, dtype="<i4"))
    out = b.alloc("out", MemId.OUT, 16)
    b.load_2d(acc, sram=0, y_size=1, x_size=rows)
    b.alu(Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(rows, 1, 1),)), AluOp.ADD, imm=1)
    b.dep_push(Stage.COMPUTE, Stage.STORE)
    b.dep_pop(Stage.COMPUTE, Stage.STORE)
    b.store_2d(out, sram=0, **store)
    b.load_2d(out, sram=0, y_size=1, memory_type=MemId.INP, **load)
    return b.finish(), out


def test_reloading_stored_data_without_a_token_is_a_race_on_its_bytes():
    # elements 1 and 2 stored, 0-3 loaded
    program, out = _store_then_load(4, {"y_size": 1, "x_size": 2, "offset": 1}, {"x_size": 4})
    store = next(i for i, x in enumerate(program.instructions) if x.opcode is Opcode.STORE)
    load = next(
        i
        for i, x in enumerate(program.instructions)
        if isinstance(x, MemInsn) and x.memory_type is MemId.INP
    )
    for order in itertools.permutations(Stage):
        with pytest.raises(RaceError) as info:
            _run(program, module_order=order)
        err = info.value
        assert err.buffer == "DRAM"
        assert err.rows == tuple(range(out.address + 4, out.address + 12))
        assert {err.earlier[0], err.later[0]} == {store, load}
        first, last = out.address + 4, out.address + 11
        assert f"race on DRAM bytes {first}..{last} (8): " in str(err)


def test_a_race_names_one_row_a_span_or_a_sample_of_its_rows():
    program, _ = _store_then_load(4, {"y_size": 1, "x_size": 2, "offset": 1}, {"x_size": 4})
    store, load = program.instructions[2], program.instructions[3]
    earlier, later = (2, store, "writes"), (3, load, "reads")
    for rows, shown in (
        ([7], "7"),
        ([3, 0, 1, 2], "0..3 (4)"),
        ([0, 2, 4, 6, 8, 10, 12], "0, 2, 4, 6, 8, 10, ... (7)"),
    ):
        message = str(RaceError("ACC", rows, earlier, later))
        assert message.startswith(f"race on ACC rows {shown}: instruction 2 "), message


def test_a_strided_store_races_only_on_the_bytes_of_its_rows():
    # elements 0-1, 5-6 and 10-11 stored (three rows of two, five apart)
    store = {"y_size": 3, "x_size": 2, "x_stride": 5}
    between, _ = _store_then_load(8, store, {"offset": 2, "x_size": 3})  # 2-4: between rows
    across, out = _store_then_load(8, store, {"offset": 6, "x_size": 3})  # 6-8: a row's last
    elem = TINY.elem_bytes(MemId.OUT)
    for order in itertools.permutations(Stage):
        _run(between, module_order=order)  # no race: the rows' gaps are not written
        with pytest.raises(RaceError) as info:
            _run(across, module_order=order)
        assert info.value.buffer == "DRAM"
        assert info.value.rows == tuple(range(out.address + 6 * elem, out.address + 7 * elem))


def test_race_detection_without_room_for_its_table_is_a_simulation_error():
    # Its DRAM table (six bytes per byte of DRAM) is allocated zeroed: a process whose address
    # space cannot hold it gets a typed error, not a MemoryError (a child process allowed 2 GiB
    # more than it uses, for 1 GiB of DRAM and a 6 GiB table).
    script = """
import re, resource
import numpy as np
from isa import AccelConfig, ProgramBuilder
from simulator import FunctionalSimulator, SimulationError
cfg = AccelConfig.preset("tiny")
used = int(re.search(r"VmSize:\\s+(\\d+) kB", open("/proc/self/status").read())[1]) << 10
resource.setrlimit(resource.RLIMIT_AS, (used + (2 << 30), used + (2 << 30)))
try:
    FunctionalSimulator(cfg).run(ProgramBuilder(cfg).finish(), np.zeros(1 << 30, np.uint8))
except SimulationError as err:
    print(err)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "race detection needs 6,442,450,944 bytes" in done.stdout
    assert "detect_races=False" in done.stdout
