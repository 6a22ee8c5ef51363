"""Every conformance case on every runner, for every suite configuration it runs on (the presets
it supports, and their variants: tiny without the ALU multiplier): bit-exact DRAM. Cases that use
MUL are refused, with each level's typed error, where there is no multiplier.

A batched runner (one simulator process per call) runs all of a configuration's cases in one
test, which names every case that fails.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from compiler.errors import CompileError
from isa import AccelConfig, AluInsn, AluOp, BuilderError, Program, ProgramError
from runtime.devices import RtlRunError
from simulator import CycleSimulator, FunctionalSimulator, SimulationError
from tests.conformance.cases import CASES
from tests.conformance.common import CONFIGS, Built, ConformanceCase, preset_of
from tests.conformance.runners import RUNNERS, Runner

_NO_MULTIPLIER = r"alu_opcode=MUL is not available: this configuration has no ALU multiplier"


def _selected(runner: Runner, config: str) -> list[ConformanceCase]:
    return [case for case in CASES if case.size in runner.sizes and case.runs_on(config)]


def _configs(runner: Runner) -> list[str]:
    return [name for name in CONFIGS if runner.configs is None or name in runner.configs]


_PARAMS = [
    pytest.param(runner, case, config, id=f"{runner.name}-{case.name}-{config}")
    for runner in RUNNERS
    if not runner.batched
    for config in _configs(runner)
    for case in _selected(runner, config)
]
_BATCHES = [
    pytest.param(runner, config, id=f"{runner.name}-{config}")
    for runner in RUNNERS
    if runner.batched
    for config in _configs(runner)
]
#: Cases that use MUL, and the configurations without a multiplier that refuse them.
_REFUSED = [
    pytest.param(case, name, id=f"{case.name}-{name}")
    for case in CASES
    if case.uses_mul
    for name, cfg in CONFIGS.items()
    if not cfg.alu_mul and preset_of(name) in case.presets
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


@pytest.mark.parametrize(("runner", "case", "config"), _PARAMS)
def test_conformance(runner, case, config):
    built = case.build(CONFIGS[config], 0)
    dram = built.dram.copy()
    runner.run([(built.program, dram)])
    _check(runner, built, dram)


@pytest.mark.parametrize(("runner", "config"), _BATCHES)
def test_conformance_batch(runner, config):
    cases = _selected(runner, config)
    builts = [case.build(CONFIGS[config], 0) for case in cases]
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


def test_tiny_without_mul_runs_every_tiny_case_but_the_mul_ones():
    tiny = {case.name for case in CASES if case.runs_on("tiny")}
    nomul = {case.name for case in CASES if case.runs_on("tiny_nomul")}
    assert nomul <= tiny and tiny - nomul == {
        "alu_mul_imm",
        "alu_mul_vec",
        "model_step_per_channel_conv2",
        "model_step_per_channel_fc",
    }


@pytest.mark.parametrize(("case", "config"), _REFUSED)
def test_cases_using_mul_are_refused_without_the_multiplier(case, config):
    """The builder refuses the case (the program builder naming the MUL, or the compiler the
    scheme that needs it); its program for the variant's preset (which holds a MUL, so
    ``uses_mul`` is true) is no Program for the variant; both simulators refuse its
    instructions, naming the MUL. (The RTL runners take Programs only, so they cannot get it.)"""
    cfg = CONFIGS[config]
    with pytest.raises((BuilderError, CompileError)) as refused:
        case.build(cfg, 0)
    if isinstance(refused.value, CompileError):
        assert "lacks (alu_mul=False)" in str(refused.value)
    else:
        assert re.search(_NO_MULTIPLIER, str(refused.value))
    program = case.build(CONFIGS[preset_of(config)], 0).program
    muls = [
        i
        for i, insn in enumerate(program.instructions)
        if isinstance(insn, AluInsn) and insn.alu_opcode is AluOp.MUL
    ]
    assert muls, f"{case.name} says it uses MUL but has none"
    with pytest.raises(ProgramError, match=f"instruction {muls[0]}: .*{_NO_MULTIPLIER}"):
        Program(cfg, program.instructions, program.uops, program.uop_base, program.segments)
    for simulator in (FunctionalSimulator, CycleSimulator):
        dram = np.zeros(program.dram_extent, dtype=np.uint8)
        with pytest.raises(SimulationError, match=_NO_MULTIPLIER) as info:
            simulator(cfg).run(program.instructions, dram)
        assert info.value.index == muls[0]


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
