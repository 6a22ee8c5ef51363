"""How fast the cycle-level simulator runs, in simulated cycles per wall second.

Workloads: ResNet-18's C2 conv layer (56x56, 64 -> 64, 3x3) at the default configuration, and
a blocked GEMM at the tiny one. Each is timed three ways: the timing model alone, on a finished
functional run's events (``simulator.time_run``); the functional simulator alone (race
detection on, as by default), which bounds the next figure; and whole (``CycleSimulator.run``:
functional simulation, then timing). Targets for the whole run: 10,000,000 simulated cycles per
second on C2, 2,000,000 on the tiny GEMM. A run after the first finds the plans of its GEMM/ALU
instructions and transfers made (``simulator.memo``, shared by every run in the process); the
whole run is also timed with them cleared before each call (``simulator.clear_memos``), as a
program's first run in a process meets it.

Then ResNet-18's conv layers together: C2..C12 compiled with the conv2d template's default
knobs (``compiler.workloads.resnet18_layers``; compile time excluded), each distinct layer run
whole once (values and cycles, fresh simulator, the memos cleared before the first) and
counted as often as it occurs in the network (C2 x4, C6/C9/C12 x3, the others once). Target:
under 2 s in all. The whole compiled network (pooling, adds and dense layer included) is
``benchmarks/model_sim.py``'s workload.

Peers measured in the same run:

- SCALE-Sim (``pip install scalesim``, the ``bench`` extra) on the same C2 layer, configured as
  close to the default VTA configuration as its parameters allow (``benchmarks/_scalesim.py``
  says how and what differs). It models a different machine (a systolic array), so its cycle
  count differs from ours; the comparison is speed. It runs in a child process under a wall
  cap (``--scalesim-cap``, 180 s); past the cap it is timed on the layer's first 8 output rows.
  Where it is not installed (the ``bench`` extra pins NumPy below 2.4, which SCALE-Sim 3.0
  needs), its row says so and how to get it, and every other row still runs; or
  ``--scalesim-python`` names another environment's interpreter that has it (a virtual
  environment with ``pip install 'scalesim>=3,<4' 'numpy<2.4'``), which runs the peer.
- the model's own cycle-stepped scheduler (the same results, one cycle at a time);
- the Amaranth RTL simulation (``hw.simulate``) on a small tiny-config program.

The GEMM utilisation of one and two virtual threads shows the latency hiding the model sees.

Run: ``python benchmarks/sim_speed.py [--scalesim-cap SECONDS] [--scalesim-python PYTHON]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
import time

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
from _harness import best_of, cpu_name, report
from _scalesim import ConvLayer, PeerRun, peer

from compiler.workloads import resnet18_layers
from hw import MemoryTiming, simulate
from isa import AccelConfig, TimingConfig
from runtime.programs import KERNEL, RESNET18_C2
from simulator import (
    CycleSimulator,
    FunctionalSimulator,
    clear_memos,
    compiled_modules,
    time_run,
)
from tests.conformance.cases import CASES
from tests.conformance.conv_cases import build_conv2d
from tests.conformance.gemm_cases import GemmShape, build_gemm

C2_TARGET, TINY_TARGET = 10_000_000, 2_000_000  # simulated cycles per second, whole run
NETWORK_TARGET = 2.0  # seconds for ResNet-18's conv layers, whole runs
DEFAULT, TINY = AccelConfig.preset("default"), AccelConfig.preset("tiny")
TINY_GEMM = GemmShape(m=64, k=16, n=16, tile_m=16, tile_k=8, tile_n=8, threads=2)
COLUMNS = ["workload", "mode", "cycles", "GEMM util", "seconds", "cycles/s", "x target"]
NO_SCALESIM = "not installed"
SCALESIM_HOW = (
    "to measure it: pip install -e '.[bench]' (or make bench) in an environment where "
    "NumPy < 2.4 may be installed (SCALE-Sim 3.0 needs it), or pass --scalesim-python with "
    "another environment's interpreter that has SCALE-Sim"
)
TIMING, WHOLE = "timing model only", "with functional"
COLD = "with functional, memos cleared"
#: ResNet-18's C2 layer as SCALE-Sim takes it (input padded by 1 on each side), and the slice
#: it is timed on when the whole layer does not finish under the cap.
C2 = ConvLayer(
    "resnet18 C2",
    RESNET18_C2.height + KERNEL - 1,
    RESNET18_C2.width + KERNEL - 1,
    RESNET18_C2.in_channels,
    RESNET18_C2.out_channels,
    KERNEL,
)
C2_SLICE = dataclasses.replace(C2, name="resnet18 C2, first 8 output rows", ifmap_height=10)


def workloads():
    """(name, config, built program, cycles/s target) for every workload, with 1 and 2 virtual
    threads."""
    for threads in (2, 1):
        shape = dataclasses.replace(RESNET18_C2, threads=threads)
        built = build_conv2d(DEFAULT, 0, shape)
        yield f"resnet18 C2, {threads} thread(s)", DEFAULT, built, C2_TARGET
    for threads in (2, 1):
        shape = dataclasses.replace(TINY_GEMM, threads=threads)
        built = build_gemm(TINY, 0, shape)
        yield f"blocked GEMM 64x16x16, {threads} thread(s)", TINY, built, TINY_TARGET


def _row(
    name: str, mode: str, cycles: int, util: str, seconds: float, target: float | None = None
) -> list[object]:
    rate = cycles / seconds
    return [name, mode, cycles, util, seconds, rate, "-" if target is None else rate / target]


def _ours(name: str, cfg: AccelConfig, built, target: int) -> list[list[object]]:
    """Our rows for one workload (the target applies to the whole run)."""
    functional = FunctionalSimulator(cfg)
    result = functional.run(built.program, built.dram.copy())
    stats = time_run(cfg, result)
    util = f"{100 * stats.gemm_utilisation:.1f} %"
    timing_only = best_of(lambda: time_run(cfg, result), repeat=3, min_time=0.3)
    functional_only = best_of(lambda: functional.run(built.program, built.dram.copy()), repeat=3)
    whole = best_of(lambda: CycleSimulator(cfg).run(built.program, built.dram.copy()), repeat=3)

    def cold() -> None:
        clear_memos()
        CycleSimulator(cfg).run(built.program, built.dram.copy())

    rows = [
        _row(name, TIMING, stats.cycles, util, timing_only),
        _row(name, "functional simulator only", stats.cycles, util, functional_only),
        _row(name, WHOLE, stats.cycles, util, whole, target),
        _row(name, COLD, stats.cycles, util, best_of(cold, repeat=3), target),
    ]
    if "C2, 2" in name:  # the same model one cycle at a time, once
        started = time.perf_counter()
        time_run(cfg, result, stepped=True)
        rows.append(_row(name, "peer: stepped", stats.cycles, util, time.perf_counter() - started))
    return rows


def _network_rows() -> tuple[list[list[object]], float]:
    """One whole run of each of ResNet-18's conv layers C2..C12 and the network's total
    (each layer counted as often as it occurs); the total's seconds."""
    rows, cycles, seconds = [], 0, 0.0
    clear_memos()  # nothing made for the workloads before
    for workload in resnet18_layers():
        program, layer = workload.build(DEFAULT), workload.layer
        dram = np.zeros(program.dram_extent, dtype=np.uint8)
        started = time.perf_counter()
        stats = CycleSimulator(DEFAULT).run(program, dram)
        wall = time.perf_counter() - started
        util = f"{100 * stats.gemm_utilisation:.1f} %"
        rows.append(_row(f"resnet18 {layer.name} (compiled)", WHOLE, stats.cycles, util, wall))
        cycles += layer.in_resnet18 * stats.cycles
        seconds += layer.in_resnet18 * wall
    name = "resnet18 C2..C12 as in the network"
    rows.append(_row(name, WHOLE, cycles, "-", seconds))
    return rows, seconds


def _rtl_rows() -> list[list[object]]:
    """The Amaranth RTL and our timing model on a conformance program (equal cycles)."""
    name = "conformance blocked_gemm_vt2 (tiny)"
    built = next(c for c in CASES if c.name == "blocked_gemm_vt2").build(TINY, 0)
    rtl = simulate(TINY, built.program, built.dram.copy(), timing=MemoryTiming())
    model = CycleSimulator(TINY).run(built.program, built.dram.copy())
    assert model.cycles == rtl.cycles, (model.cycles, rtl.cycles)
    result = FunctionalSimulator(TINY).run(built.program, built.dram.copy())
    ours = best_of(lambda: time_run(TINY, result), repeat=3)
    util = f"{100 * model.gemm_utilisation:.1f} %"
    return [
        _row(name, TIMING, rtl.cycles, util, ours),
        _row(name, "peer: Amaranth RTL", rtl.cycles, util, rtl.wall_seconds),
    ]


def _scalesim(cap: float, python: str | None) -> PeerRun | None:
    """SCALE-Sim on C2, or on its slice when C2 runs past ``cap`` seconds, run by ``python``
    (None: this interpreter); None when this interpreter has no SCALE-Sim and no other is
    given."""
    if python is None:
        if importlib.util.find_spec("scalesim") is None:
            return None
        python = sys.executable
    for layer in (C2, C2_SLICE):
        run = peer(layer, cap, python)
        if run is not None:
            return run
    raise SystemExit(f"SCALE-Sim did not finish {C2_SLICE.name} in {cap:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scalesim-cap", type=float, default=180.0, metavar="SECONDS")
    parser.add_argument(
        "--scalesim-python",
        metavar="PYTHON",
        help="an interpreter with SCALE-Sim installed, to run the peer where this one has none",
    )
    args = parser.parse_args()
    rows = []
    for name, cfg, built, target in workloads():
        rows += _ours(name, cfg, built, target)
    network_rows, network_seconds = _network_rows()
    rows += network_rows
    rows += _rtl_rows()
    scale = _scalesim(args.scalesim_cap, args.scalesim_python)
    if scale is None:
        rows.append([C2.name, "peer: SCALE-Sim", NO_SCALESIM, "-", "-", "-", "-"])
        scalesim = {"installed": False, "how": SCALESIM_HOW}
    else:
        peer_mode = f"peer: SCALE-Sim {scale.version}"
        rows.append(_row(scale.layer.name, peer_mode, scale.cycles, "-", scale.seconds))
        c2 = {row[1]: row[5] for row in rows if row[0] == "resnet18 C2, 2 thread(s)"}
        ratios = {mode: c2[mode] / scale.cycles_per_second for mode in (TIMING, WHOLE)}
        scalesim = {
            **dataclasses.asdict(scale),
            "cycles_per_second": scale.cycles_per_second,
            "ours_over_scalesim": {f"resnet18 C2, 2 thread(s), {m}": r for m, r in ratios.items()},
        }
    report(
        "sim_speed",
        COLUMNS,
        rows,
        target_cycles_per_second={"resnet18 C2": C2_TARGET, "tiny GEMM": TINY_TARGET},
        network_seconds={"measured": network_seconds, "target": NETWORK_TARGET},
        cpu=cpu_name(),
        scalesim=scalesim,
        timing=dataclasses.asdict(TimingConfig()),
        compiled_modules=compiled_modules(),
        note="a shared 2-core machine: timings are noisy",
    )
    if scale is None:
        print(f"SCALE-Sim: {NO_SCALESIM}; {SCALESIM_HOW}. No ratio to it in this run.")
    else:
        print(
            f"SCALE-Sim: {scale.cycles:,} cycles of {scale.layer.name} ({scale.stall_cycles:,} "
            f"stalls) in {scale.seconds:.1f} s, {scale.cycles_per_second:,.0f} cycles/s. Ours "
            f"on C2 (2 threads): {ratios[TIMING]:,.0f}x its speed (timing model only), "
            f"{ratios[WHOLE]:,.0f}x (with functional). Different machines: the comparison is "
            f"speed."
        )
    compiled = ", ".join(compiled_modules()) or "none: run `make setup` to build them"
    print(f"Compiled simulator modules (mypyc, setup.py): {compiled}.")
    print(
        f"ResNet-18's conv layers, whole runs as in the network: {network_seconds:.2f} s "
        f"(target < {NETWORK_TARGET:g} s) on {cpu_name()}."
    )


if __name__ == "__main__":
    main()
