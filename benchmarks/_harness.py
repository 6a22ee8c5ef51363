"""Shared plumbing for the benchmark harnesses: timing, the printed table, the JSON record.

Each harness measures our code and its peers in the same run, prints one table with ratios and
writes ``benchmarks/results/NAME.json`` (machine, versions, rows), so numbers are comparable.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/NAME.py` from anywhere
    sys.path.insert(0, str(ROOT))

__all__ = ["ROOT", "best_of", "cpu_name", "report"]


def cpu_name() -> str:
    """The host CPU's model name (figures that depend on the host are named after it)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def best_of(fn: Callable[[], Any], repeat: int = 5, min_time: float = 0.2) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` rounds, each at least ``min_time``."""
    fn()  # warm up
    best = float("inf")
    for _ in range(repeat):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / calls)
    return best


def report(name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], **meta: Any) -> None:
    """Print ``rows`` under ``columns`` and write them to ``results/NAME.json``."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print(f"== {name}")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    RESULTS.mkdir(exist_ok=True)
    record = {
        "benchmark": name,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "columns": list(columns),
        "rows": [list(row) for row in rows],
        **meta,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
