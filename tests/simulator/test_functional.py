"""The functional simulator's events, counters and corner cases of SEMANTICS.md; values are
checked against the reference interpreter of the conformance suite."""

from __future__ import annotations

import numpy as np
import pytest

import simulator.loop_plans
from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    BuilderError,
    FinishInsn,
    GemmInsn,
    Kernel,
    Loop,
    MemId,
    MemInsn,
    Opcode,
    ProgramBuilder,
    Stage,
    Uop,
    popped_tokens,
    pushed_tokens,
    stage_of,
)
from runtime.demo_gemm import demo_gemm_program
from simulator import (
    AluEvent,
    FinishEvent,
    FunctionalSimulator,
    GemmEvent,
    LoadEvent,
    StoreEvent,
)
from tests.conformance.common import row_kernel, store_acc_planes
from tests.conformance.random_programs import random_program
from tests.conformance.reference import reference_run

PRESETS = ("tiny", "default")


def _both(program) -> tuple[np.ndarray, np.ndarray]:
    """DRAM after the simulator and after the reference interpreter."""
    simulated = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(program.config).run(program, simulated)
    reference = bytearray(program.dram_extent)
    reference_run(program, reference)
    return simulated, np.frombuffer(bytes(reference), dtype=np.uint8)


def test_counters_are_vtas_profiler_on_the_demo():
    program = demo_gemm_program(AccelConfig())
    dram = np.zeros(program.dram_extent + 4096, dtype=np.uint8)
    counters = FunctionalSimulator(program.config).run(program, dram).counters
    # 4 input rows of 16 bytes, 4 weight tiles of 256, one micro-op, 16 output rows of 16;
    # 16 multiplying GEMM steps (the reset does not count) and 3 ALU passes over 16 rows.
    assert counters.inp_load_nbytes == 64
    assert counters.wgt_load_nbytes == 1024
    assert counters.uop_load_nbytes == 4
    assert counters.acc_load_nbytes == 0
    assert counters.out_store_nbytes == 256
    assert counters.gemm_counter == 16
    assert counters.alu_counter == 48


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seed", range(4))
def test_events_describe_every_instruction(preset, seed):
    cfg = AccelConfig.preset(preset)
    program = random_program(cfg, seed)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    result = FunctionalSimulator(cfg).run(program, dram)
    insns = program.instructions
    assert sorted(e.index for e in result.events) == list(range(len(insns)))
    assert isinstance(result.events[-1], FinishEvent)
    for stage in Stage:
        indices = [e.index for e in result.module_events(stage)]
        assert indices == [i for i, insn in enumerate(insns) if stage_of(insn) is stage]
    expected = dict.fromkeys(
        (
            "inp_load_nbytes",
            "wgt_load_nbytes",
            "acc_load_nbytes",
            "uop_load_nbytes",
            "out_store_nbytes",
            "gemm_counter",
            "alu_counter",
        ),
        0,
    )
    for event in result.events:
        insn = insns[event.index]
        assert event.module is stage_of(insn)
        assert event.pops == popped_tokens(insn)
        assert event.pushes == pushed_tokens(insn)
        if isinstance(insn, MemInsn):
            kind = LoadEvent if insn.opcode is Opcode.LOAD else StoreEvent
            assert type(event) is kind
            elem = cfg.elem_bytes(insn.memory_type)
            assert event.dram_address == insn.dram_base * elem
            assert event.nbytes == insn.x_size * insn.y_size * elem
            assert (event.y_size, event.x_size, event.x_stride) == (
                insn.y_size,
                insn.x_size,
                insn.x_stride,
            )
            if kind is LoadEvent:
                width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
                lines = insn.y_pad_0 + insn.y_size + insn.y_pad_1
                assert event.sram_rows == (width * lines if insn.x_size else 0)
                name = {MemId.ACC_8BIT: "acc"}.get(insn.memory_type, insn.memory_type.name)
                expected[f"{name.lower()}_load_nbytes"] += event.nbytes
            else:
                expected["out_store_nbytes"] += event.nbytes
        elif isinstance(insn, GemmInsn | AluInsn):
            steps = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
            assert event.steps == steps
            assert event.reset == insn.reset_reg
            if isinstance(insn, GemmInsn):
                assert type(event) is GemmEvent
                expected["gemm_counter"] += 0 if insn.reset_reg else steps
            else:
                assert type(event) is AluEvent
                assert (event.op, event.use_imm) == (insn.alu_opcode, insn.use_imm)
                expected["alu_counter"] += steps
    assert vars(result.counters) == expected


def test_race_detection_off_gives_the_same_run():
    program = random_program(AccelConfig.preset("tiny"), 11)
    runs = []
    for detect in (True, False):
        dram = np.zeros(program.dram_extent, dtype=np.uint8)
        runs.append(
            (FunctionalSimulator(program.config, detect_races=detect).run(program, dram), dram)
        )
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1])


def _alu_program(cfg: AccelConfig, op: AluOp, imm: int, seed: int):
    rng = np.random.default_rng(seed)
    rows = 8
    values = rng.integers(-(1 << 31), 1 << 31, size=(rows, cfg.batch * cfg.block_out))
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, rows, values.astype("<i4"))
    b.load_2d(acc, sram=0, y_size=1, x_size=rows)
    b.alu(row_kernel(0, 0, rows), op, imm=imm)
    store_acc_planes(b, rows, first=0, scratch=rows, name="planes")
    return b.finish()


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    ("op", "imm"),
    [(AluOp.SHR, n) for n in (-1000, -64, -33, -32, -31, -1, 0, 1, 31, 32, 33, 63, 64, 1000)]
    + [(AluOp.MUL, n) for n in (-129, -128, -1, 0, 127, 128, 255, 256, 32767)],
)
def test_alu_operand_bits_at_the_edges(preset, op, imm):
    """SHR reads a log2(acc_width)+1-bit signed amount and MUL an 8-bit signed factor from
    the 16-bit immediate; shifting left by acc_width gives 0."""
    simulated, reference = _both(_alu_program(AccelConfig.preset(preset), op, imm, abs(imm)))
    np.testing.assert_array_equal(simulated, reference)


@pytest.mark.parametrize("seed", range(6))
def test_long_instructions_run_in_chunks_alike(monkeypatch, seed):
    """With a tiny chunk size every GEMM/ALU instruction runs chunk by chunk (and its touched
    rows are gathered through masks); the result must not change."""
    monkeypatch.setattr(simulator.loop_plans, "CHUNK_VALUES", 1)
    simulated, reference = _both(random_program(AccelConfig.preset("tiny"), seed))
    np.testing.assert_array_equal(simulated, reference)


def test_legal_no_ops():
    cfg = AccelConfig.preset("tiny")
    nothing = {"sram_base": 0, "dram_base": 10**6, "y_size": 9, "x_size": 0, "x_stride": 0}
    insns = [
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.OUT, push_next_dep=True, **nothing),
        MemInsn(opcode=Opcode.STORE, memory_type=MemId.ACC, x_pad_0=3, **nothing),
        GemmInsn(uop_bgn=5, uop_end=2, iter_out=0, iter_in=3),
        AluInsn(uop_bgn=1, uop_end=1, iter_out=4, iter_in=4, alu_opcode=AluOp.ADD),
        MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, push_prev_dep=True, **nothing),
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.UOP,
            pop_prev_dep=True,
            pop_next_dep=True,
            **nothing,
        ),
        FinishInsn(),
    ]
    dram = np.zeros(64, dtype=np.uint8)
    result = FunctionalSimulator(cfg).run(insns, dram)
    assert len(result.events) == len(insns)
    assert not dram.any()


def test_reset_gemm_reads_no_input_rows():
    """A reset step's src and wgt indices are not checked (SEMANTICS section 5)."""
    cfg = AccelConfig.preset("tiny")
    b = ProgramBuilder(cfg)
    far = Uop(dst_idx=0, src_idx=cfg.inp_buff_depth - 1, wgt_idx=cfg.wgt_buff_depth - 1)
    b.gemm(Kernel((far,), (Loop(4, dst_factor=1, src_factor=7, wgt_factor=9),)), reset=True)
    program = b.finish()
    simulated, reference = _both(program)
    np.testing.assert_array_equal(simulated, reference)


@pytest.mark.parametrize("insn_kind", ["gemm", "alu"])
def test_reset_steps_read_nothing_so_the_window_does_not_apply(insn_kind):
    """SEMANTICS 5 and 6: a reset step only writes, so resetting one row three steps in a row
    is legal, while the same loop without reset breaks the read-after-write window."""
    cfg = AccelConfig.preset("tiny")
    same_row = Kernel((Uop(dst_idx=3, src_idx=0),), (Loop(3, dst_factor=0, src_factor=0),))

    def build(reset: bool):
        b = ProgramBuilder(cfg)
        if insn_kind == "gemm":
            b.gemm(same_row, reset=reset)
        else:
            b.alu(same_row, AluOp.ADD, imm=1, reset=reset)
        return b.finish()

    simulated, reference = _both(build(reset=True))
    np.testing.assert_array_equal(simulated, reference)
    with pytest.raises(BuilderError, match="read-after-write|window"):
        build(reset=False)
