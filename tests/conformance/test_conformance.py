"""Every conformance case on every runner, for every preset it supports: bit-exact DRAM.

A batched runner (one simulator process per call) runs all of a preset's cases in one test,
which names every case that fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from isa import AccelConfig
from runtime.devices import RtlRunError
from simulator import FunctionalSimulator
from tests.conformance.cases import CASES
from tests.conformance.common import Built, ConformanceCase
from tests.conformance.runners import RUNNERS, Runner


def _selected(runner: Runner, preset: str) -> list[ConformanceCase]:
    return [case for case in CASES if case.size in runner.sizes and preset in case.presets]


def _presets(runner: Runner) -> list[str]:
    names = AccelConfig.preset_names()
    return [p for p in names if runner.presets is None or p in runner.presets]


_PARAMS = [
    pytest.param(runner, case, preset, id=f"{runner.name}-{case.name}-{preset}")
    for runner in RUNNERS
    if not runner.batched
    for preset in _presets(runner)
    for case in _selected(runner, preset)
]
_BATCHES = [
    pytest.param(runner, preset, id=f"{runner.name}-{preset}")
    for runner in RUNNERS
    if runner.batched
    for preset in _presets(runner)
]


def _check(runner: Runner, built: Built, dram: np.ndarray) -> None:
    built.check(dram)
    if runner.whole_dram:
        expected = built.dram.copy()
        FunctionalSimulator(built.program.config).run(built.program, expected)
        np.testing.assert_array_equal(
            dram, expected, err_msg=f"{runner.name} and functional DRAM differ"
        )


def test_case_names_are_unique():
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(("runner", "case", "preset"), _PARAMS)
def test_conformance(runner, case, preset):
    built = case.build(AccelConfig.preset(preset), 0)
    dram = built.dram.copy()
    runner.run([(built.program, dram)])
    _check(runner, built, dram)


@pytest.mark.parametrize(("runner", "preset"), _BATCHES)
def test_conformance_batch(runner, preset):
    cases = _selected(runner, preset)
    builts = [case.build(AccelConfig.preset(preset), 0) for case in cases]
    drams = [built.dram.copy() for built in builts]
    failures = {}
    try:
        runner.run([(built.program, dram) for built, dram in zip(builts, drams, strict=True)])
    except RtlRunError as err:
        failures = {cases[index].name: reason for index, reason in err.failures.items()}
    for case, built, dram in zip(cases, builts, drams, strict=True):
        if case.name not in failures:
            try:
                _check(runner, built, dram)
            except AssertionError as err:
                failures[case.name] = str(err)
    assert not failures, f"{len(failures)} of {len(cases)} cases fail on {runner.name}:\n" + (
        "\n".join(f"{name}: {reason}" for name, reason in failures.items())
    )


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
