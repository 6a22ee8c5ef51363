"""The same programs on every level behind ``runtime.open_device``: the Verilated RTL (``rtl``)
beside the cycle-level simulator (``sim``, under the RTL memory's timing) and the functional
simulator (``fsim``), on the tiny and default configurations.

Programs: the conformance suite's small cases, a few random programs, and (default only) the
ResNet-18 C2 conv layer (56x56, 64 -> 64 channels, 3x3). Per program it prints the RTL's cycle
count and bus beats, the cycle-level model's count and its error against the RTL (the
calibration table), each level's wall time, simulated cycles per second (the RTL's cycles over
each level's wall time) and the ratios of wall times, and checks that every level left the same
DRAM. The RTL runs a configuration's programs in one simulator process; its start-up and the
model's build (or cache lookup) are reported apart. The simulators' memos are cleared before
each level's batch (``simulator.clear_memos``). A level is one entry of ``LEVELS``.

Run: ``python benchmarks/rtl_vs_sim.py [--fresh-build]`` (``--fresh-build`` builds the
Verilator models in a temporary folder, to time the builds).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
from _harness import ROOT, report

from isa import AccelConfig, Program
from runtime import DeviceKind, open_device
from runtime.devices import AXI_RAM_TIMING
from runtime.programs import RESNET18_C2
from simulator import clear_memos
from tests.conformance.cases import CASES
from tests.conformance.common import Size
from tests.conformance.conv_cases import build_conv2d
from tests.conformance.random_programs import random_program

PRESETS = ("tiny", "default")
RANDOM_SEEDS = range(3)
#: The levels compared, the first being the reference whose DRAM the others must match.
LEVELS = (DeviceKind.FSIM, DeviceKind.SIM, DeviceKind.RTL)


def _options(kind: DeviceKind, cache_dir: Path) -> dict:
    """How each level is opened: the RTL from the build cache, the model under its memory."""
    if kind is DeviceKind.RTL:
        return {"cache_dir": cache_dir}
    if kind is DeviceKind.SIM:
        return {"timing": AXI_RAM_TIMING}
    return {}


def programs(cfg: AccelConfig, preset: str) -> list[tuple[str, Program, np.ndarray]]:
    """(name, program, initial DRAM) of every program measured on ``cfg``."""
    found = []
    for case in CASES:
        if case.size is Size.SMALL and preset in case.presets:
            built = case.build(cfg, 0)
            found.append((case.name, built.program, built.dram))
    for seed in RANDOM_SEEDS:
        program = random_program(cfg, seed)
        found.append((f"random_{seed}", program, np.zeros(program.dram_extent, dtype=np.uint8)))
    if preset == "default":
        built = build_conv2d(cfg, 0, RESNET18_C2)
        found.append(("resnet18_c2_conv", built.program, built.dram))
    return found


def measure(preset: str, cache_dir: Path) -> tuple[list[list], dict]:
    """The table rows of ``preset`` and a summary (open, batch and start-up times, totals)."""
    cfg = AccelConfig.preset(preset)
    items = programs(cfg, preset)
    walls: dict[DeviceKind, list[float]] = {}
    drams: dict[DeviceKind, list[np.ndarray]] = {}
    summary: dict[str, float] = {}
    for kind in LEVELS:
        started = time.perf_counter()
        device = open_device(kind, cfg, **_options(kind, cache_dir))
        summary[f"{kind.value} open s"] = time.perf_counter() - started
        jobs = [(program, initial.copy()) for _, program, initial in items]
        clear_memos()  # a level reuses nothing another level's runs worked out
        started = time.perf_counter()
        stats = device.run_many(jobs)
        batch = time.perf_counter() - started
        walls[kind] = [s.wall_seconds for s in stats]
        drams[kind] = [dram for _, dram in jobs]
        summary[f"{kind.value} wall s"] = sum(walls[kind])
        summary[f"{kind.value} start-up s"] = batch - sum(walls[kind])
        if kind is DeviceKind.RTL:
            rtl = stats
        if kind is DeviceKind.SIM:
            model = [s.cycles for s in stats]
    cycles = [s.cycles for s in rtl]
    summary["rtl cycles"] = sum(cycles)
    rows = []
    for index, (name, program, _) in enumerate(items):
        same = all(np.array_equal(drams[k][index], drams[LEVELS[0]][index]) for k in LEVELS)
        row = [preset, name, len(program.instructions), cycles[index]]
        row += [rtl[index].read_beats, rtl[index].write_beats]
        row += [model[index], 100.0 * (model[index] - cycles[index]) / cycles[index]]
        for kind in LEVELS:
            row += [walls[kind][index], cycles[index] / walls[kind][index]]
        rtl_wall = walls[DeviceKind.RTL][index]
        ratios = [rtl_wall / walls[DeviceKind.SIM][index], rtl_wall / walls[DeviceKind.FSIM][index]]
        rows.append([*row, *ratios, "ok" if same else "DIFF"])
    return rows, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-build", action="store_true", help="time the Verilator builds")
    args = parser.parse_args()
    rows, summaries = [], {}
    with tempfile.TemporaryDirectory(prefix="vtaforge-rtl-bench-") as scratch:
        cache_dir = Path(scratch) if args.fresh_build else ROOT / "build" / "rtl"
        for preset in PRESETS:
            found, summaries[preset] = measure(preset, cache_dir)
            rows += found
    columns = ["config", "program", "insns", "rtl cycles", "rd beats", "wr beats"]
    columns += ["sim cycles", "sim err %"]
    for kind in LEVELS:
        columns += [f"{kind.value} wall s", f"{kind.value} cycles/s"]
    columns += ["rtl/sim wall", "rtl/fsim wall", "dram"]
    report("rtl_vs_sim", columns, rows, levels=[k.value for k in LEVELS], summary=summaries)
    for preset, summary in summaries.items():
        cycles = summary["rtl cycles"]
        speeds = ", ".join(
            f"{kind.value} {summary[f'{kind.value} wall s']:.2f} s "
            f"({cycles / summary[f'{kind.value} wall s']:,.0f} cycles/s)"
            for kind in LEVELS
        )
        print(
            f"{preset}: {cycles:,} RTL cycles; {speeds}; rtl/sim "
            f"{summary['rtl wall s'] / summary['sim wall s']:.1f}x, rtl/fsim "
            f"{summary['rtl wall s'] / summary['fsim wall s']:.1f}x; rtl open "
            f"{summary['rtl open s']:.1f} s, simulator start-up {summary['rtl start-up s']:.1f} s"
        )


if __name__ == "__main__":
    main()
