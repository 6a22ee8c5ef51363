"""The reproducer shrinker: it keeps the culprit, drops what it can, and only offers the
predicate programs the functional simulator accepts."""

import numpy as np

from isa import AccelConfig, AluInsn, GemmInsn
from simulator import FunctionalSimulator
from tests.conformance.random_programs import random_program
from tests.conformance.shrink import shrink

TINY = AccelConfig.preset("tiny")


def test_shrink_keeps_the_culprit_and_drops_the_rest():
    program = random_program(TINY, 5, operations=12)
    culprit = next(i for i in program.instructions if isinstance(i, AluInsn | GemmInsn))
    offered = []

    def still_fails(candidates):
        offered.extend(candidates)
        return [culprit in candidate.instructions for candidate in candidates]

    small = shrink(program, still_fails)
    assert culprit in small.instructions
    assert len(small.instructions) < len(program.instructions) // 2
    assert small.instructions[-1] == program.instructions[-1]
    for candidate in [*offered, small]:  # every program it offered or returned is valid
        FunctionalSimulator(TINY).run(candidate, np.zeros(candidate.dram_extent, dtype=np.uint8))


def test_shrink_returns_the_program_when_nothing_smaller_fails():
    program = random_program(TINY, 6)
    calls = []

    def never(candidates):
        calls.append(len(candidates))
        return [False] * len(candidates)

    assert shrink(program, never, rounds=5) == program
    assert 1 <= len(calls) <= 5
