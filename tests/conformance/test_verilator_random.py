"""Differential testing: random valid programs (``random_program(cfg, seed)``) on the Verilated
RTL and on the functional simulator must leave bit-identical DRAM, on the tiny and the default
configurations (and tiny without the ALU multiplier), under an ideal memory and under random
back-pressure on every AXI channel.

Each batch runs in one simulator process. A program that differs (or fails on the RTL) is shrunk
by dropping instructions and reported with its seed and the disassembly of the reproducer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from isa import AccelConfig, Program, disassemble
from runtime.devices import RtlRunError
from simulator import FunctionalSimulator
from tests.conformance.common import CONFIGS
from tests.conformance.random_programs import random_program
from tests.conformance.runners import rtl_device
from tests.conformance.shrink import shrink

#: (suite configuration, memory readiness per cycle, programs per run): the seeds are 0..N-1 of
#: each batch.
BATCHES = (
    ("tiny", 1.0, 80),
    ("tiny", 0.5, 20),
    ("tiny_nomul", 0.7, 24),
    ("default", 1.0, 50),
    ("default", 0.7, 10),
)


def differences(cfg: AccelConfig, programs: Sequence[Program], ready: float) -> list[str | None]:
    """Per program, None when the RTL's DRAM equals the functional simulator's, else how it
    differs (or why the RTL failed)."""
    expected, drams = [], []
    for program in programs:
        dram = np.zeros(program.dram_extent, dtype=np.uint8)
        drams.append(dram.copy())
        FunctionalSimulator(cfg).run(program, dram)
        expected.append(dram)
    try:
        device = rtl_device(cfg, ready_probability=ready, seed=7)
        device.run_many(list(zip(programs, drams, strict=True)))
        failures = {}
    except RtlRunError as err:
        failures = err.failures
    found: list[str | None] = []
    for index, (dram, reference) in enumerate(zip(drams, expected, strict=True)):
        wrong = np.flatnonzero(dram != reference)
        if index in failures:
            found.append(f"the RTL failed: {failures[index]}")
        elif wrong.size:
            shown = ", ".join(f"{a:#x}: {dram[a]:#04x} != {reference[a]:#04x}" for a in wrong[:4])
            found.append(f"{wrong.size} DRAM bytes differ ({shown}, ...)")
        else:
            found.append(None)
    return found


@pytest.mark.parametrize(("preset", "ready", "count"), BATCHES)
def test_random_programs_give_the_functional_simulators_bytes(preset, ready, count):
    cfg = CONFIGS[preset]
    programs = [random_program(cfg, seed) for seed in range(count)]
    found = differences(cfg, programs, ready)
    failed = [(seed, problem) for seed, problem in enumerate(found) if problem]
    if not failed:
        return
    seed, problem = failed[0]

    def still_fails(candidates: Sequence[Program]) -> list[bool]:
        return [found is not None for found in differences(cfg, candidates, ready)]

    small = shrink(programs[seed], still_fails)
    pytest.fail(
        f"{len(failed)} of {count} random programs differ on {preset} (memory ready {ready}); "
        f"seeds {[s for s, _ in failed]}.\nFirst: random_program(CONFIGS[{preset!r}], "
        f"{seed}): {problem}\nReproducer ({len(small.instructions)} of "
        f"{len(programs[seed].instructions)} instructions):\n{disassemble(small)}"
    )
