"""Whole-accelerator RTL simulations (tiny config) of hand-written programs, against numpy.

The memory model answers with random latency and back-pressure; every byte of DRAM outside the
expected results must be left as it was. Cycle counts are printed (``pytest -s``).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.sim import HwSimulationError, MemoryTiming, simulate
from isa import (
    AccelConfig,
    ConfigMismatchError,
    FinishInsn,
    GemmInsn,
    MemId,
    Program,
    Uop,
)
from runtime.demo_gemm import demo_gemm_program
from tests.hw.programs import DRAM_BYTES, all_cases, demo_case, load, two_round_gemm_case
from tests.hw.util import TINY

CASES = all_cases(TINY)


def check(case, dram_before, dram):
    changed = np.zeros(len(dram), dtype=bool)
    for address, data in case.expected.items():
        got = dram[address : address + len(data)].tobytes()
        assert got == data, f"{case.name}: DRAM at {address:#x}"
        changed[address : address + len(data)] = True
    assert np.array_equal(dram[~changed], dram_before[~changed]), "a store wrote elsewhere"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_program_leaves_numpys_results_in_dram(case):
    timing = MemoryTiming(read_latency=(1, 10), ready_probability=0.6, seed=7)
    dram = np.random.default_rng(0).integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    case.program.write_to(dram)
    before = dram.copy()
    result = simulate(TINY, case.program, dram, max_cycles=30_000, timing=timing)
    print(f"{case.name}: {result.cycles} cycles ({result.cycles_per_second:,.0f} cycles/s)")
    check(case, before, dram)


@settings(max_examples=3)
@given(seed=st.integers(0, 2**16), latency=st.integers(0, 12), ready=st.floats(0.3, 1.0))
def test_token_ordered_rounds_under_random_memory_timing(seed, latency, ready):
    case = two_round_gemm_case(TINY, seed)
    dram = np.zeros(DRAM_BYTES, dtype=np.uint8)
    case.program.write_to(dram)
    before = dram.copy()
    simulate(TINY, case.program, dram, timing=MemoryTiming((0, latency), ready, seed))
    check(case, before, dram)


def test_other_shapes_and_bus_widths():
    """Batch 2, unequal blocks, a 128-bit bus (elements narrower and wider than a beat)."""
    cfg = TINY.replace(batch=2, block_out=8, axi_width=128)
    case = demo_case(cfg)
    dram = np.zeros(DRAM_BYTES, dtype=np.uint8)
    case.program.write_to(dram)
    before = dram.copy()
    simulate(cfg, case.program, dram, timing=MemoryTiming((0, 5), 0.7, seed=3))
    check(case, before, dram)


def test_ideal_memory_gives_fewer_cycles_than_a_slow_one():
    case = CASES[0]
    ideal = simulate(TINY, case.program, np.zeros(DRAM_BYTES, dtype=np.uint8))
    slow = simulate(
        TINY,
        case.program,
        np.zeros(DRAM_BYTES, dtype=np.uint8),
        timing=MemoryTiming(read_latency=(20, 20)),
    )
    assert ideal.cycles < slow.cycles
    assert ideal.read_beats == slow.read_beats > 0


def test_a_program_without_finish_is_refused():
    program = Program(TINY, [load(MemId.UOP, 0, 0, 0, 0, 0)])
    with pytest.raises(HwSimulationError, match="FINISH"):
        simulate(TINY, program, np.zeros(64, dtype=np.uint8))


def test_a_missing_token_is_reported_with_the_module_states():
    gemm = GemmInsn(pop_prev_dep=True, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)
    program = Program(TINY, [gemm, FinishInsn()], [Uop(dst_idx=0, src_idx=0)])
    with pytest.raises(HwSimulationError, match="did not finish within 300 cycles") as info:
        simulate(TINY, program, np.zeros(64, dtype=np.uint8), max_cycles=300)
    assert info.value.status["l2g"] == 0
    assert info.value.status["compute_idle"] == 0


def test_a_load_outside_dram_is_an_error():
    program = Program(TINY, [load(MemId.ACC, 0, 1000, 1, 1, 1), FinishInsn()])
    with pytest.raises(HwSimulationError, match="outside DRAM"):
        simulate(TINY, program, np.zeros(256, dtype=np.uint8))


def test_a_program_for_another_configuration_is_refused():
    program = demo_gemm_program(AccelConfig.preset("default"))
    with pytest.raises(ConfigMismatchError):
        simulate(TINY, program, np.zeros(DRAM_BYTES, dtype=np.uint8))


def test_dram_must_be_a_byte_array():
    with pytest.raises(HwSimulationError, match="uint8"):
        simulate(TINY, demo_gemm_program(TINY), np.zeros(DRAM_BYTES, dtype=np.int32))


@pytest.mark.parametrize("waiting", [TINY.cmd_queue_depth + 1, TINY.cmd_queue_depth + 2])
def test_a_full_command_queue_stalls_fetch(waiting):
    """SEMANTICS 2: compute holds one instruction outside its queue of cmd_queue_depth, so
    1 + depth compute instructions can wait on a token pushed by a later LOAD; one more leaves
    that LOAD stuck behind a stalled fetch, and the program deadlocks."""
    blocked = GemmInsn(pop_prev_dep=True, uop_bgn=0, uop_end=0, iter_out=1, iter_in=1)
    noops = [load(MemId.UOP, 0, 0, 0, 0, 0)] * (waiting - 1)
    unblock = load(MemId.INP, 0, 0, 0, 0, 0, push_next_dep=True)
    program = Program(TINY, [blocked, *noops, unblock, FinishInsn()])
    dram = np.zeros(64, dtype=np.uint8)
    if waiting <= 1 + TINY.cmd_queue_depth:
        simulate(TINY, program, dram, max_cycles=2000)
    else:
        with pytest.raises(HwSimulationError, match="did not finish") as info:
            simulate(TINY, program, dram, max_cycles=2000)
        assert info.value.status["fetch_busy"] == 1
        assert info.value.status["load_idle"] == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"read_latency": (3, 1)}, "read_latency"), ({"ready_probability": 0.0}, "ready_probability")],
)
def test_bad_memory_timing_is_a_typed_error(kwargs, match):
    with pytest.raises(HwSimulationError, match=match):
        MemoryTiming(**kwargs)
