"""Every conformance case on every runner, for every preset it supports: bit-exact DRAM."""

from __future__ import annotations

import pytest

from isa import AccelConfig
from tests.conformance.cases import CASES
from tests.conformance.runners import RUNNERS

_PARAMS = [
    pytest.param(runner, case, preset, id=f"{runner.name}-{case.name}-{preset}")
    for runner in RUNNERS
    for case in CASES
    if case.size in runner.sizes
    for preset in case.presets
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
