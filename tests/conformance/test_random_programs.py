"""Random valid programs: the functional simulator against the slow reference interpreter, and
against itself under every module order (the result must not depend on the scheduler)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa import AccelConfig, AluInsn, AluOp, Stage
from simulator import FunctionalSimulator
from tests.conformance.cases import CASES
from tests.conformance.common import CONFIGS, Size
from tests.conformance.random_programs import random_program
from tests.conformance.reference import reference_run

#: Suite configurations (``common.CONFIGS`` names) the random programs run on.
PRESETS = ("tiny", "default", "tiny_nomul")
seeds = st.integers(0, 2**32 - 1)


def _simulate(program, **options) -> np.ndarray:
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(program.config, **options).run(program, dram)
    return dram


def _reference(program) -> np.ndarray:
    dram = bytearray(program.dram_extent)
    reference_run(program, dram)
    return np.frombuffer(bytes(dram), dtype=np.uint8)


@settings(max_examples=3 * settings.default.max_examples)  # the suite's key differential test
@given(seed=seeds, preset=st.sampled_from(PRESETS))
def test_simulator_matches_reference_interpreter(seed, preset):
    program = random_program(CONFIGS[preset], seed)
    np.testing.assert_array_equal(_simulate(program), _reference(program))


#: Corners of the configuration space the presets leave out: batch > 1, unequal blocks, 16- and
#: 32-bit data, 64-bit accumulators (products in int64 rather than float64), queues 1 deep, an
#: ALU without multiplier.
UNUSUAL = (
    AccelConfig(
        batch=2,
        block_in=8,
        block_out=4,
        inp_width=16,
        acc_width=64,
        uop_buff_size=4096,
        inp_buff_size=4096,
        wgt_buff_size=4096,
        acc_buff_size=8192,
        cmd_queue_depth=4,
    ),
    AccelConfig(
        batch=2,
        block_in=1,
        block_out=2,
        inp_width=32,
        wgt_width=32,
        acc_width=64,
        uop_buff_size=1024,
        inp_buff_size=1024,
        wgt_buff_size=1024,
        acc_buff_size=4096,
        cmd_queue_depth=2,
    ),
    AccelConfig(
        block_in=4,
        block_out=8,
        uop_buff_size=1024,
        inp_buff_size=512,
        wgt_buff_size=1024,
        acc_buff_size=1024,
        cmd_queue_depth=1,
        alu_mul=False,
    ),
)


@settings(max_examples=30)
@given(seed=seeds, cfg=st.sampled_from(UNUSUAL))
def test_simulator_matches_reference_on_unusual_configurations(seed, cfg):
    program = random_program(cfg, seed)
    np.testing.assert_array_equal(_simulate(program), _reference(program))


@settings(max_examples=20)
@given(seed=seeds, preset=st.sampled_from(PRESETS))
def test_result_does_not_depend_on_module_order(seed, preset):
    program = random_program(CONFIGS[preset], seed)
    first = _simulate(program)
    for order in itertools.permutations(Stage):
        np.testing.assert_array_equal(_simulate(program, module_order=order), first)
    np.testing.assert_array_equal(_simulate(program, detect_races=False), first)


@pytest.mark.parametrize("preset", PRESETS)
def test_generator_is_deterministic_and_varied(preset):
    cfg = CONFIGS[preset]
    assert random_program(cfg, 7) == random_program(cfg, 7)
    assert len({random_program(cfg, seed).instructions for seed in range(5)}) == 5


def test_generator_draws_only_the_alu_operations_of_the_configuration():
    def alu_ops(cfg: AccelConfig) -> set[AluOp]:
        programs = [random_program(cfg, seed) for seed in range(20)]
        return {i.alu_opcode for p in programs for i in p.instructions if isinstance(i, AluInsn)}

    assert alu_ops(CONFIGS["tiny"]) == set(AluOp)
    assert alu_ops(CONFIGS["tiny_nomul"]) == set(AluOp) - {AluOp.MUL}


_SMALL_TINY = [c for c in CASES if c.size is Size.SMALL and "tiny" in c.presets]


@pytest.mark.parametrize("case", _SMALL_TINY, ids=lambda c: c.name)
def test_reference_interpreter_passes_the_small_cases(case):
    """The oracle itself is checked against numpy on the conformance cases."""
    built = case.build(AccelConfig.preset("tiny"), 3)
    dram = bytearray(built.dram.tobytes())
    reference_run(built.program, dram)
    built.check(np.frombuffer(bytes(dram), dtype=np.uint8).copy())


def test_reference_reset_steps_read_nothing():
    """A reset ALU step's source index is not read (SEMANTICS 6), even past the buffer: the
    simulator and the reference both run it and agree."""
    from isa import AluOp, Kernel, Loop, MemId, ProgramBuilder, Uop

    cfg = AccelConfig.preset("tiny")
    b = ProgramBuilder(cfg)
    out = b.alloc("out", MemId.OUT, 4)
    far = cfg.acc_buff_depth  # source rows 256.. do not exist
    kernel = Kernel((Uop(dst_idx=0, src_idx=far - 1),), (Loop(4, dst_factor=1, src_factor=1),))
    b.alu(kernel, AluOp.ADD, reset=True)
    b.dep_push(Stage.COMPUTE, Stage.STORE)
    b.dep_pop(Stage.COMPUTE, Stage.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=4)
    program = b.finish()
    np.testing.assert_array_equal(_simulate(program), _reference(program))
