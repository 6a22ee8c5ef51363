"""The cycle-level model against the Amaranth RTL (``hw.simulate``) with a deterministic
memory: the same cycle count (launch to FINISH) and the same data beats on both memory ports, on
small conformance and random programs, for two read latencies. The model mirrors the RTL's
microarchitecture, so it is exact here; each test prints its program's figures."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Fragment

from hw import MemoryTiming, simulate
from hw.gemm import GemmCore
from isa import AccelConfig, TimingConfig
from simulator import CycleSimulator
from tests.conformance.cases import CASES
from tests.conformance.random_programs import random_program

TINY = AccelConfig.preset("tiny")
_CASES = ("save_load_out", "padded_load_all", "acc_8bit_load", "alu_add_vec", "relu", "gemm_vt2")


def _programs():
    for name in _CASES:
        built = next(c for c in CASES if c.name == name).build(TINY, 0)
        yield name, built.program, built.dram
    for seed in (0,):
        program = random_program(TINY, seed)
        yield f"random {seed}", program, None


_PARAMS = [
    pytest.param(program, dram, latency, id=f"{name}-latency{latency}")
    for name, program, dram in _programs()
    for latency in (1, 4)
]


@pytest.mark.parametrize(("program", "dram", "latency"), _PARAMS)
def test_model_cycles_equal_the_rtls(program, dram, latency):
    initial = dram if dram is not None else np.zeros(program.dram_extent, dtype=np.uint8)
    rtl = simulate(TINY, program, initial.copy(), timing=MemoryTiming((latency, latency), 1.0))
    model = CycleSimulator(TINY, TimingConfig(read_latency=latency)).run(program, initial.copy())
    error = 100 * (model.cycles - rtl.cycles) / rtl.cycles
    print(f"rtl {rtl.cycles} model {model.cycles} cycles ({error:+.2f} %)")
    assert (model.cycles, model.read_beats, model.write_beats) == (
        rtl.cycles,
        rtl.read_beats,
        rtl.write_beats,
    )


@pytest.mark.parametrize("preset", AccelConfig.preset_names())
def test_the_gemm_core_latency_is_the_models(preset):
    cfg = AccelConfig.preset(preset)
    core = GemmCore(cfg)
    Fragment.get(core, None)  # elaborated, as the accelerator does
    assert TimingConfig().gemm_latency(cfg) == core.latency
