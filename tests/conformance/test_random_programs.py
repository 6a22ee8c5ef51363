"""Random valid programs: the functional simulator against the slow reference interpreter, and
against itself under every module order (the result must not depend on the scheduler)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa import AccelConfig, Stage
from simulator import FunctionalSimulator
from tests.conformance.cases import CASES
from tests.conformance.common import Size
from tests.conformance.random_programs import random_program
from tests.conformance.reference import reference_run

PRESETS = ("tiny", "default")
seeds = st.integers(0, 2**32 - 1)


def _simulate(program, **options) -> np.ndarray:
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(program.config, **options).run(program, dram)
    return dram


def _reference(program) -> np.ndarray:
    dram = bytearray(program.dram_extent)
    reference_run(program, dram)
    return np.frombuffer(bytes(dram), dtype=np.uint8)


@given(seed=seeds, preset=st.sampled_from(PRESETS))
def test_simulator_matches_reference_interpreter(seed, preset):
    program = random_program(AccelConfig.preset(preset), seed)
    np.testing.assert_array_equal(_simulate(program), _reference(program))


@settings(max_examples=20)
@given(seed=seeds, preset=st.sampled_from(PRESETS))
def test_result_does_not_depend_on_module_order(seed, preset):
    program = random_program(AccelConfig.preset(preset), seed)
    first = _simulate(program)
    for order in itertools.permutations(Stage):
        np.testing.assert_array_equal(_simulate(program, module_order=order), first)
    np.testing.assert_array_equal(_simulate(program, detect_races=False), first)


@pytest.mark.parametrize("preset", PRESETS)
def test_generator_is_deterministic_and_varied(preset):
    cfg = AccelConfig.preset(preset)
    assert random_program(cfg, 7) == random_program(cfg, 7)
    assert len({random_program(cfg, seed).instructions for seed in range(5)}) == 5


_SMALL_TINY = [c for c in CASES if c.size is Size.SMALL and "tiny" in c.presets]


@pytest.mark.parametrize("case", _SMALL_TINY, ids=lambda c: c.name)
def test_reference_interpreter_passes_the_small_cases(case):
    """The oracle itself is checked against numpy on the conformance cases."""
    built = case.build(AccelConfig.preset("tiny"), 3)
    dram = bytearray(built.dram.tobytes())
    reference_run(built.program, dram)
    built.check(np.frombuffer(bytes(dram), dtype=np.uint8).copy())
