"""Random valid programs on the RTL and on the functional simulator: bit-identical DRAM, on the
tiny preset and on the configurations the presets leave out (batch 2, 16/32-bit data, 64-bit
accumulators, command queues 1 to 4 deep, an ALU without multiplier), under random memory
timing."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.sim import MemoryTiming, simulate
from isa import AccelConfig
from simulator import FunctionalSimulator
from tests.conformance.random_programs import random_program
from tests.conformance.test_random_programs import UNUSUAL

CONFIGS = (AccelConfig.preset("tiny"), *UNUSUAL)


@settings(max_examples=8)
@given(seed=st.integers(0, 2**32 - 1), cfg=st.sampled_from(CONFIGS), ready=st.floats(0.3, 1.0))
def test_rtl_matches_the_functional_simulator(seed, cfg, ready):
    program = random_program(cfg, seed)
    expected = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(cfg).run(program, expected)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    simulate(cfg, program, dram, timing=MemoryTiming((0, 8), ready, seed), max_cycles=200_000)
    np.testing.assert_array_equal(dram, expected)
