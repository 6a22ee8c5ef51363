"""Every conformance case on every runner, for every preset it supports: bit-exact DRAM."""

from __future__ import annotations

import numpy as np
import pytest

from isa import AccelConfig
from simulator import FunctionalSimulator
from tests.conformance.cases import CASES
from tests.conformance.runners import RUNNERS

_PARAMS = [
    pytest.param(runner, case, preset, id=f"{runner.name}-{case.name}-{preset}")
    for runner in RUNNERS
    for case in CASES
    if case.size in runner.sizes
    for preset in case.presets
    if runner.presets is None or preset in runner.presets
]


def test_case_names_are_unique():
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(("runner", "case", "preset"), _PARAMS)
def test_conformance(runner, case, preset):
    built = case.build(AccelConfig.preset(preset), 0)
    dram = built.dram.copy()
    runner.run(built.program, dram)
    built.check(dram)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_check_sees_every_output_byte_and_real_data(case):
    """A check that cannot fail proves nothing: flipping one bit of any output buffer must
    fail it, and the correct output must not be constant."""
    cfg = AccelConfig.preset(case.presets[-1])
    built = case.build(cfg, 1)
    dram = built.dram.copy()
    FunctionalSimulator(cfg).run(built.program, dram)
    built.check(dram)
    for buffer in built.outputs:
        assert np.unique(dram[buffer.address : buffer.end]).size > 1, buffer.name
        for address in (buffer.address, buffer.end - 1):
            broken = dram.copy()
            broken[address] ^= 0x10
            with pytest.raises(AssertionError):
                built.check(broken)
