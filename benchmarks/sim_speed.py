"""How fast the cycle-level simulator runs, in simulated cycles per wall second.

Workloads: ResNet-18's C2 conv layer (56x56, 64 -> 64, 3x3) at the default configuration, and
a blocked GEMM at the tiny one, each timed (a) the timing model alone, on a finished functional
run's events (``simulator.time_run``), and (b) whole, functional simulation included
(``CycleSimulator.run``, race detection on as by default). The target is 1,000,000 simulated
cycles per second. Peers measured in the same run: the model's own cycle-stepped scheduler
(the same results, one cycle at a time) and the Amaranth RTL simulation (``hw.simulate``) on
a small tiny-config program. The GEMM utilisation of one and two virtual threads shows the
latency hiding the model sees.

Run: ``python benchmarks/sim_speed.py``.
"""

from __future__ import annotations

import dataclasses
import time

import _harness  # noqa: F401  (puts the repository on sys.path)
from _harness import best_of, report

from hw import MemoryTiming, simulate
from isa import AccelConfig, TimingConfig
from runtime.kernels import RESNET18_C2
from simulator import CycleSimulator, FunctionalSimulator, time_run
from tests.conformance.cases import CASES
from tests.conformance.conv_cases import build_conv2d
from tests.conformance.gemm_cases import GemmShape, build_gemm

TARGET = 1_000_000
DEFAULT, TINY = AccelConfig.preset("default"), AccelConfig.preset("tiny")
TINY_GEMM = GemmShape(m=64, k=16, n=16, tile_m=16, tile_k=8, tile_n=8, threads=2)


def workloads():
    """(name, config, built program) for every workload, with 1 and 2 virtual threads."""
    for threads in (2, 1):
        shape = dataclasses.replace(RESNET18_C2, threads=threads)
        yield f"resnet18 C2, {threads} thread(s)", DEFAULT, build_conv2d(DEFAULT, 0, shape)
    for threads in (2, 1):
        shape = dataclasses.replace(TINY_GEMM, threads=threads)
        yield f"blocked GEMM 64x16x16, {threads} thread(s)", TINY, build_gemm(TINY, 0, shape)


def _speeds(cfg: AccelConfig, built) -> tuple[object, float, float]:
    """(the stats, seconds of the timing model alone, seconds with functional simulation)."""
    result = FunctionalSimulator(cfg).run(built.program, built.dram.copy())
    timing_only = best_of(lambda: time_run(cfg, result), repeat=3, min_time=0.3)
    whole = best_of(lambda: CycleSimulator(cfg).run(built.program, built.dram.copy()), repeat=3)
    return time_run(cfg, result), timing_only, whole


def main() -> None:
    rows = []
    for name, cfg, built in workloads():
        stats, timing_only, whole = _speeds(cfg, built)
        util = f"{100 * stats.gemm_utilisation:.1f} %"
        for mode, seconds in (("timing model only", timing_only), ("with functional", whole)):
            rate = stats.cycles / seconds
            rows.append([name, mode, stats.cycles, util, seconds, rate, rate / TARGET])
        if "C2, 2" in name:  # the same model one cycle at a time, once
            result = FunctionalSimulator(cfg).run(built.program, built.dram.copy())
            started = time.perf_counter()
            time_run(cfg, result, stepped=True)
            seconds = time.perf_counter() - started
            rate = stats.cycles / seconds
            rows.append([name, "peer: stepped", stats.cycles, util, seconds, rate, rate / TARGET])

    built = next(c for c in CASES if c.name == "blocked_gemm_vt2").build(TINY, 0)
    rtl = simulate(TINY, built.program, built.dram.copy(), timing=MemoryTiming())
    model = CycleSimulator(TINY).run(built.program, built.dram.copy())
    assert model.cycles == rtl.cycles, (model.cycles, rtl.cycles)
    result = FunctionalSimulator(TINY).run(built.program, built.dram.copy())
    ours = best_of(lambda: time_run(TINY, result), repeat=3)
    util = f"{100 * model.gemm_utilisation:.1f} %"
    for mode, seconds in (("timing model only", ours), ("peer: Amaranth RTL", rtl.wall_seconds)):
        rate = rtl.cycles / seconds
        rows.append(
            [
                "conformance blocked_gemm_vt2 (tiny)",
                mode,
                rtl.cycles,
                util,
                seconds,
                rate,
                rate / TARGET,
            ]
        )
    report(
        "sim_speed",
        ["workload", "mode", "cycles", "GEMM util", "seconds", "cycles/s", "x target"],
        rows,
        target_cycles_per_second=TARGET,
        timing=dataclasses.asdict(TimingConfig()),
        note="a shared 2-core machine: timings are noisy",
    )


if __name__ == "__main__":
    main()
