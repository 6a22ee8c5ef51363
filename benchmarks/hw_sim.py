"""Amaranth RTL simulation of the whole accelerator (tiny config): cycles per program (the hw
tests' programs and the conformance suite's small cases, under an ideal and a slow memory) and
simulation speed, beside the simulator's speed on the GEMM core alone (the same simulator on a
design of a few hundred cells) measured in the same run. The last column checks DRAM against
numpy (hw programs) or the functional simulator (conformance cases).

Run: ``python benchmarks/hw_sim.py``.
"""

from __future__ import annotations

import time

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
from _harness import report
from amaranth.sim import Simulator

from hw.gemm import GemmCore
from hw.sim import MemoryTiming, simulate
from isa import AccelConfig
from simulator import FunctionalSimulator
from tests.conformance.cases import CASES
from tests.conformance.common import Size
from tests.hw.programs import DRAM_BYTES, all_cases

CFG = AccelConfig.preset("tiny")
GEMM_CYCLES = 20_000


def gemm_core_speed() -> float:
    """Cycles per second of the GEMM core alone, operands changing every cycle."""
    dut = GemmCore(CFG)
    rng = np.random.default_rng(0)
    operands = rng.integers(0, 1 << 32, (GEMM_CYCLES, 2)).tolist()

    async def bench(ctx):
        for inp, wgt in operands:
            ctx.set(dut.inp.as_value(), inp)
            ctx.set(dut.wgt.as_value(), wgt & ((1 << len(dut.wgt.as_value())) - 1))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    started = time.perf_counter()
    sim.run()
    return GEMM_CYCLES / (time.perf_counter() - started)


def programs():
    """(name, program, initial DRAM, check(dram) -> bool): the hw tests' programs and the
    conformance suite's small cases (checked against the functional simulator)."""
    for case in all_cases(CFG):
        expected = case.expected

        def check(dram, expected=expected):
            return all(dram[a : a + len(d)].tobytes() == d for a, d in expected.items())

        yield case.name, case.program, np.zeros(DRAM_BYTES, dtype=np.uint8), check
    for case in CASES:
        if case.size is Size.SMALL and "tiny" in case.presets:
            built = case.build(CFG, 0)
            reference = built.dram.copy()
            FunctionalSimulator(CFG).run(built.program, reference)
            yield (
                f"conformance/{case.name}",
                built.program,
                built.dram,
                lambda dram, reference=reference: np.array_equal(dram, reference),
            )


def main() -> None:
    rows = []
    core = gemm_core_speed()
    for name, program, initial, check in programs():
        for label, timing in (
            ("ideal", MemoryTiming()),
            ("latency 1-10, 60% ready", MemoryTiming((1, 10), 0.6, seed=1)),
        ):
            dram = initial.copy()
            result = simulate(CFG, program, dram, timing=timing, max_cycles=100_000)
            rows.append(
                [
                    name,
                    label,
                    result.cycles,
                    result.read_beats,
                    result.write_beats,
                    round(result.wall_seconds, 3),
                    round(result.cycles_per_second),
                    round(result.cycles_per_second / core, 3),
                    "ok" if check(dram) else "WRONG",
                ]
            )
    rows.append(["gemm_core_alone", "-", GEMM_CYCLES, 0, 0, "-", round(core), 1.0, "-"])
    report(
        "hw_sim",
        [
            "program",
            "memory",
            "cycles",
            "rd beats",
            "wr beats",
            "wall s",
            "cycles/s",
            "vs core",
            "dram",
        ],
        rows,
        config=CFG.fingerprint,
    )


if __name__ == "__main__":
    main()
