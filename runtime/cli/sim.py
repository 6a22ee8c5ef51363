"""``vtaforge sim``: time a saved program on the cycle-level simulator.

DRAM is sized from the program's whole footprint (:attr:`isa.Program.dram_extent`: micro-op
table, segments and regions) and zeroed; ``--input NAME=FILE.npy`` replaces the bytes of a
segment or region before the run, ``--output NAME=FILE.npy`` saves them after it (as a 1-D
``uint8`` array), ``--report FILE.json|FILE.csv`` writes the figures the table prints. The
memory timing is :mod:`runtime.cli.timing`'s options. Every output path is checked before the
simulation starts.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from isa import AccelConfig, DramRegion, Program, did_you_mean
from isa.files import read_npy
from runtime.cli.command import Command
from runtime.cli.common import (
    CliError,
    check_output_dir,
    check_output_file,
    check_report_path,
    parse_assignment,
    write_arrays,
    write_report,
    writing,
)
from runtime.cli.timing import add_timing_options, timing_from
from simulator import CycleSimulator, CycleStats, write_chrome_trace

__all__ = ["SIM", "report_row"]


def _configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``vtaforge sim``."""
    parser.add_argument("program", type=Path, metavar="PROGRAM.bin")
    parser.add_argument(
        "--config",
        metavar="PRESET|FILE",
        help="the accelerator to run on (default: the program's own); it must have the "
        "program's ISA and memory map, and may differ in clock, bus width and queue depth",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="before the run, fill segment or region NAME with the array's bytes (little-endian;"
        " exactly its size); repeatable",
    )
    parser.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="after the run, save segment or region NAME as a uint8 array; repeatable",
    )
    parser.add_argument(
        "--report", type=Path, metavar="FILE.json|FILE.csv", help="the stats, machine-readable"
    )
    parser.add_argument("--trace", type=Path, metavar="OUT.json", help="a Chrome/Perfetto trace")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="timeline and roofline PNGs")
    add_timing_options(parser)
    parser.add_argument(
        "--stepped", action="store_true", help="the slow cycle-by-cycle scheduler (same counts)"
    )
    parser.epilog = (
        "Runs the program from zeroed DRAM (plus its segments and --input arrays) on the "
        "cycle-level simulator and prints its stats. Segment and region names are in "
        "`vtaforge disasm PROGRAM.bin` (.segment and .region lines)."
    )


def _run(args: argparse.Namespace) -> int:
    """``vtaforge sim``: check the outputs, load, fill, run, report."""
    if args.report is not None:
        check_report_path(args.report)
    if args.trace is not None:
        check_output_file(args.trace, "--trace")
    outputs = [parse_assignment(text, "--output") for text in args.output]
    for _, path in outputs:
        check_output_file(Path(path), "--output")
    if args.plots is not None:
        check_output_dir(args.plots, "--plots")
    timing = timing_from(args.timing, args.read_latency, args.set)
    config = AccelConfig.resolve(args.config) if args.config else None
    program = Program.load(args.program, config=config)
    cfg = config or program.config
    regions = program.named_regions()
    inputs = [(_region(regions, name, "--input"), path) for name, path in map(_input, args.input)]
    program, dram = _initial_dram(program, inputs)
    outputs = [(_region(regions, name, "--output"), Path(path)) for name, path in outputs]
    stats = CycleSimulator(cfg, timing, stepped=args.stepped).run(program, dram)
    print(f"{args.program}: {cfg.fingerprint}, read latency {timing.read_latency}")
    print(stats.table())
    for region, path in outputs:
        write_arrays(path, "--output", dram[region.address : region.end])
        print(f"wrote {path} ({region.name}: {region.size} bytes)")
    if args.report:
        write_report(args.report, [report_row(args.program.name, stats)])
        print(f"wrote {args.report}")
    if args.trace:
        with writing(args.trace, "--trace"):
            write_chrome_trace(stats, args.trace, name=args.program.name)
        print(f"wrote {args.trace}")
    if args.plots:
        from simulator.plots import roofline_png, timeline_png

        with writing(args.plots, "--plots"):
            timeline_png(stats, args.plots / "timeline.png", title=args.program.name)
            roofline_png([(args.program.name, stats)], args.plots / "roofline.png")
        print(f"wrote {args.plots / 'timeline.png'} and {args.plots / 'roofline.png'}")
    return 0


# ---------------------------------------------------------------------- inputs and outputs
def _input(text: str) -> tuple[str, Path]:
    name, value = parse_assignment(text, "--input")
    return name, Path(value)


def _region(regions: dict[str, DramRegion], name: str, option: str) -> DramRegion:
    if name not in regions:
        known = ", ".join(regions) or "none"
        raise CliError(
            f"{option} {name}: the program has no segment or region {name!r}"
            f"{did_you_mean(name, regions)} (it has: {known})"
        )
    return regions[name]


def _initial_dram(
    program: Program, inputs: list[tuple[DramRegion, Path]]
) -> tuple[Program, np.ndarray]:
    """The program with each input segment's data replaced, and DRAM holding the input
    regions (the simulator writes the segments itself)."""
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    replaced: dict[str, bytes] = {}
    segments = {s.name for s in program.segments}
    for region, path in inputs:
        data = _array_bytes(path, region)
        if region.name in segments:
            replaced[region.name] = data
        else:
            dram[region.address : region.end] = np.frombuffer(data, dtype=np.uint8)
    if replaced:
        program = dataclasses.replace(
            program,
            segments=[
                dataclasses.replace(s, data=replaced.get(s.name, s.data)) for s in program.segments
            ],
        )
    return program, dram


def _array_bytes(path: Path, region: DramRegion) -> bytes:
    array = read_npy(path)
    if array.dtype.kind not in "biuf":
        raise CliError(f"--input {region.name}={path}: not a numeric array")
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    if len(data) != region.size:
        raise CliError(
            f"--input {region.name}={path}: the array has {len(data)} bytes "
            f"({array.dtype}{list(array.shape)}), {region.name} has {region.size}"
        )
    return data


# ---------------------------------------------------------------------- report
def report_row(name: str, stats: CycleStats) -> dict[str, Any]:
    """The figures of one run by name: totals, per-unit activity, per-buffer bytes, the
    counters and the timing parameters (one CSV row; the JSON report's fields)."""
    row: dict[str, Any] = {
        "program": name,
        "fingerprint": stats.config.fingerprint,
        "clock_mhz": stats.config.clock_mhz,
        "cycles": stats.cycles,
        "seconds": stats.seconds,
        "instructions": len(stats.instructions),
        "gemm_utilisation": stats.gemm_utilisation,
        "gops": stats.gops,
        "peak_gops": stats.config.peak_gops,
        "arithmetic_intensity": stats.arithmetic_intensity,
        "dram_bytes": stats.dram_bytes,
        "read_beats": stats.read_beats,
        "write_beats": stats.write_beats,
    }
    row |= dataclasses.asdict(stats.counters)
    for unit, activity in stats.units.items():
        row |= {f"{unit}_{k}": v for k, v in dataclasses.asdict(activity).items()}
    row |= {f"{buffer}_bytes": n for buffer, n in stats.bytes_moved.items()}
    row |= {f"timing_{k}": v for k, v in dataclasses.asdict(stats.timing).items()}
    return row


SIM = Command("sim", "time a program on the cycle-level simulator", _configure, _run)
