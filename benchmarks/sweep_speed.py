"""Speed of a design-space sweep (:func:`runtime.sweep.sweep`): configurations per second
uncached (compiled and simulated) in one process and in worker processes, and cached (the
second sweep only reads its files), with the resource model pricing every configuration.

The grid varies ``tiny``'s GEMM shape and bus width (8 configurations); the workloads are a small
conv layer (8x8, 16 -> 16 channels, 3x3) and the small CNN of :mod:`compiler.workloads` (compiled
whole). Times depend on the host: the CPU and its core count are in the output.

Run: ``python benchmarks/sweep_speed.py [--processes N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import _harness  # noqa: F401  (puts the repository on sys.path)
from _harness import cpu_name, report

from compiler.accel.templates import ConvLayer
from compiler.workloads import ConvWorkload, ModelWorkload
from runtime.sweep import grid, sweep

WORKLOADS = [
    ConvWorkload(ConvLayer("conv16", 8, 16, 16, 3, 1, 1, 0)),
    ModelWorkload("small_cnn"),
]


def timed(configs: list, cache: Path | None, processes: int) -> tuple[float, int]:
    """Seconds of one sweep and its number of error rows."""
    started = time.perf_counter()
    table = sweep(configs, WORKLOADS, cache=cache, processes=processes, progress=False)
    return time.perf_counter() - started, int(table["error"].notna().sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    configs = grid("tiny", block_in=[4, 8], block_out=[4, 8], axi_width=[64, 128])
    rows = []
    directory = Path(tempfile.mkdtemp(prefix="vtaforge-sweep-"))
    try:
        runs = [
            ("uncached, 1 process", None, 1),
            (f"uncached, {args.processes} processes", directory, args.processes),
            ("cached", directory, args.processes),
        ]
        for label, cache, processes in runs:
            seconds, failed = timed(configs, cache, processes)
            rows.append(
                [
                    label,
                    len(configs),
                    len(configs) * len(WORKLOADS),
                    failed,
                    seconds,
                    len(configs) / seconds,
                ]
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    report(
        "sweep_speed",
        ["sweep", "configs", "rows", "error rows", "seconds", "configs/s"],
        rows,
        cpu=cpu_name(),
        workloads=[w.key for w in WORKLOADS],
        processes=args.processes,
    )
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
