"""Both simulators on a configuration without the ALU multiplier (``alu_mul=False``): a MUL, as
a record or as a word, is refused before anything runs, naming the instruction; a program built
for a configuration with MUL is refused as built for another configuration."""

from __future__ import annotations

import numpy as np
import pytest

from isa import AccelConfig, AluInsn, AluOp, MemId, Program, ProgramBuilder, Stage, encode
from runtime.programs import row_kernel
from simulator import CycleSimulator, FunctionalSimulator, SimulationError

TINY = AccelConfig.preset("tiny")
NOMUL = TINY.replace(alu_mul=False)
SIMULATORS = [FunctionalSimulator, CycleSimulator]


def _scaled_rows(cfg: AccelConfig, op: AluOp) -> Program:
    """Load two accumulator rows, apply ``op`` by 3, store them."""
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, 2, np.arange(2 * cfg.acc_elem_bytes, dtype=np.uint8))
    out = b.alloc("out", MemId.OUT, 2)
    b.load_2d(acc, sram=0, y_size=1, x_size=2)
    b.alu(row_kernel(0, 0, 2), op, imm=3)
    b.dep_push(Stage.COMPUTE, Stage.STORE)
    b.dep_pop(Stage.COMPUTE, Stage.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=2)
    return b.finish()


def _mul_index(program: Program) -> int:
    return next(
        i
        for i, insn in enumerate(program.instructions)
        if isinstance(insn, AluInsn) and insn.alu_opcode is AluOp.MUL
    )


@pytest.mark.parametrize("simulator", SIMULATORS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("as_words", [False, True], ids=["records", "words"])
def test_a_mul_is_refused_before_anything_runs(simulator, as_words):
    program = _scaled_rows(TINY, AluOp.MUL)
    index = _mul_index(program)
    insns = program.instructions
    stream = [encode(i, TINY) for i in insns] if as_words else list(insns)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    program.write_to(dram)
    before = dram.copy()
    with pytest.raises(SimulationError, match="no ALU multiplier \\(alu_mul=False\\)") as info:
        simulator(NOMUL).run(stream, dram)
    assert info.value.index == index
    assert "alu_opcode=MUL" in str(info.value)
    np.testing.assert_array_equal(dram, before)


@pytest.mark.parametrize("simulator", SIMULATORS, ids=lambda s: s.__name__)
def test_a_program_for_a_multiplier_is_for_another_configuration(simulator):
    program = _scaled_rows(TINY, AluOp.MUL)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    with pytest.raises(SimulationError, match="alu_mul True != False"):
        simulator(NOMUL).run(program, dram)


@pytest.mark.parametrize("simulator", SIMULATORS, ids=lambda s: s.__name__)
def test_every_other_operation_runs_as_with_the_multiplier(simulator):
    for op in NOMUL.alu_ops:
        results = []
        for cfg in (TINY, NOMUL):
            program = _scaled_rows(cfg, op)
            dram = np.zeros(program.dram_extent, dtype=np.uint8)
            simulator(cfg).run(program, dram)
            results.append(dram)
        np.testing.assert_array_equal(*results, err_msg=op.name)
