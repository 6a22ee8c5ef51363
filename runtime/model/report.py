"""What a model run measured, per step and in total, as data and as a printed table, and the
run's whole-model Chrome trace and plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isa import AccelConfig

__all__ = ["ModelReport", "StepReport", "write_model_plots", "write_model_trace"]


@dataclass(frozen=True)
class StepReport:
    """One step: where it ran (and, on the CPU, whether its ``kernel`` was the compiled
    ``"llvm"`` library or ``"numpy"``), host seconds, and on the accelerator its cycles, GEMM
    steps (micro-ops issued to the core), DRAM bytes moved; the node's multiply-accumulates."""

    node: str
    op: str
    device: str
    wall_seconds: float
    cycles: int | None = None
    gemm_steps: int | None = None
    dram_bytes: int | None = None
    macs: int = 0
    kernel: str = ""

    @property
    def utilisation(self) -> float | None:
        """GEMM steps per cycle, where both are known."""
        if self.cycles and self.gemm_steps is not None:
            return self.gemm_steps / self.cycles
        return None


@dataclass(frozen=True)
class ModelReport:
    """Every step's :class:`StepReport` of one run on ``device``, with totals."""

    model: str
    config: AccelConfig
    steps: tuple[StepReport, ...]
    device: str

    @property
    def accel_steps(self) -> tuple[StepReport, ...]:
        return tuple(s for s in self.steps if s.device == "accel")

    @property
    def cycles(self) -> int | None:
        """Accelerator cycles of the whole model (None on a level without time)."""
        cycles = [s.cycles for s in self.accel_steps]
        return None if any(c is None for c in cycles) else sum(cycles)  # type: ignore[misc]

    @property
    def accel_seconds(self) -> float | None:
        """Accelerator time at the configuration's clock."""
        cycles = self.cycles
        return None if cycles is None else cycles / (self.config.clock_mhz * 1e6)

    @property
    def cpu_seconds(self) -> float:
        """Host time of the CPU steps."""
        return sum(s.wall_seconds for s in self.steps if s.device == "cpu")

    @property
    def macs(self) -> dict[str, int]:
        """Multiply-accumulates by where they ran."""
        out = {"accel": 0, "cpu": 0}
        for s in self.steps:
            out[s.device] += s.macs
        return out

    def summary(self) -> dict[str, Any]:
        """The totals as a JSON-ready dict."""
        accel = self.accel_steps
        gemm = sum(s.gemm_steps or 0 for s in accel)
        return {
            "model": self.model,
            "config": self.config.fingerprint,
            "device": self.device,
            "steps": len(self.steps),
            "accel_steps": len(accel),
            "cpu_steps": len(self.steps) - len(accel),
            "cycles": self.cycles,
            "accel_ms": None if self.accel_seconds is None else 1e3 * self.accel_seconds,
            "gemm_utilisation": gemm / self.cycles if self.cycles else None,
            "dram_bytes": sum(s.dram_bytes or 0 for s in accel),
            "cpu_ms": 1e3 * self.cpu_seconds,
            "macs_accel": self.macs["accel"],
            "macs_cpu": self.macs["cpu"],
        }

    def rows(self) -> list[dict[str, Any]]:
        """The per-step table as data (one row per step: where it ran, its cycles, bytes and
        host time), then a total row with the end-to-end latency: the accelerator's time at
        its clock plus the CPU steps' host time (None on a level without time)."""
        total = self.summary()
        rows = [
            {
                "step": step.node,
                "op": step.op,
                "device": step.device,
                "kernel": step.kernel,
                "cycles": step.cycles,
                "utilisation": step.utilisation,
                "dram_bytes": step.dram_bytes,
                "macs": step.macs,
                "host_ms": 1e3 * step.wall_seconds,
                "latency_ms": None,
            }
            for step in self.steps
        ]
        accel_ms = total["accel_ms"]
        rows.append(
            {
                "step": "(total)",
                "op": "",
                "device": self.device,
                "kernel": "",
                "cycles": total["cycles"],
                "utilisation": total["gemm_utilisation"],
                "dram_bytes": total["dram_bytes"],
                "macs": total["macs_accel"] + total["macs_cpu"],
                "host_ms": total["cpu_ms"],
                "latency_ms": None if accel_ms is None else accel_ms + total["cpu_ms"],
            }
        )
        return rows

    def table(self) -> str:
        """The per-step table and the totals as aligned text."""
        head = f"{'step':<28} {'op':<15} {'on':<11} {'cycles':>11} {'util':>6} {'DRAM MB':>8}"
        lines = [head + f" {'host ms':>8}", "-" * (len(head) + 9)]
        for s in self.steps:
            cycles = "" if s.cycles is None else f"{s.cycles:,}"
            util = "" if s.utilisation is None else f"{100 * s.utilisation:.1f}%"
            mb = "" if s.dram_bytes is None else f"{s.dram_bytes / 1e6:.2f}"
            where = f"{s.device} ({s.kernel})" if s.kernel else s.device
            lines.append(
                f"{s.node[:28]:<28} {s.op[:15]:<15} {where:<11} {cycles:>11} {util:>6} "
                f"{mb:>8} {1e3 * s.wall_seconds:>8.1f}"
            )
        t = self.summary()
        lines.append("-" * (len(head) + 9))
        share = t["macs_accel"] / max(1, t["macs_accel"] + t["macs_cpu"])
        lines.append(
            f"{t['accel_steps']} steps on the accelerator, {t['cpu_steps']} on the CPU; "
            f"{100 * share:.1f} % of the multiply-accumulates on the accelerator"
        )
        if t["cycles"]:  # None on a level without time, 0 when no step ran on the accelerator
            lines.append(
                f"accelerator: {t['cycles']:,} cycles = {t['accel_ms']:.2f} ms at "
                f"{self.config.clock_mhz:g} MHz, GEMM utilisation "
                f"{100 * t['gemm_utilisation']:.1f} %, {t['dram_bytes'] / 1e6:.1f} MB of DRAM "
                "traffic"
            )
        lines.append(f"CPU steps: {t['cpu_ms']:.1f} ms of host time")
        return "\n".join(lines)


#: The trace's process of the host's CPU steps (the accelerator's is the simulator's, 1).
_HOST_PID = 2


def write_model_trace(
    cycle_stats: Sequence[tuple[str, Any]],
    path: str | Path,
    name: str = "model",
    report: ModelReport | None = None,
) -> None:
    """One Chrome trace of the run: every accelerator step's slices (named after its node),
    back to back in accelerator time; with ``report``, the CPU steps too, in step order on a
    host track (their host time), so the trace is the whole model's timeline."""
    from simulator import chrome_trace

    timed = iter(cycle_stats)
    steps = report.steps if report is not None else [None] * len(cycle_stats)
    events: list[dict[str, Any]] = []
    if report is not None:
        events.append(_host_meta("process_name", f"{name}: CPU steps (host time)"))
        events.append(_host_meta("thread_name", "CPU"))
    offset_us, named = 0.0, False
    for step in steps:
        if step is not None and step.device != "accel":
            duration = 1e6 * step.wall_seconds
            events.append(
                {
                    "name": f"{step.node} ({step.op})",
                    "ph": "X",
                    "pid": _HOST_PID,
                    "tid": 1,
                    "ts": offset_us,
                    "dur": duration,
                    "args": {"kernel": step.kernel or "numpy", "macs": step.macs},
                }
            )
            offset_us += duration
            continue
        node, stats = next(timed)
        trace = chrome_trace(stats, name)
        for event in trace["traceEvents"]:
            if event.get("ph") == "M":  # the process's and tracks' names, once
                if not named:
                    events.append(event)
                continue
            shifted = dict(event, ts=event["ts"] + offset_us)
            shifted["args"] = dict(event.get("args", {}), node=node)
            events.append(shifted)
        named = True
        offset_us += stats.cycles / stats.config.clock_mhz
    Path(path).write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))


def _host_meta(kind: str, value: str) -> dict[str, Any]:
    key = "name"
    return {"name": kind, "ph": "M", "pid": _HOST_PID, "tid": 1, "args": {key: value}}


def write_model_plots(cycle_stats: Sequence[tuple[str, Any]], directory: str | Path) -> list[Path]:
    """The timeline of the longest accelerator step and the roofline of every step that uses
    the GEMM core, as PNGs in ``directory``; returns their paths."""
    from simulator.plots import roofline_png, timeline_png

    if not cycle_stats:
        return []
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    node, longest = max(cycle_stats, key=lambda item: item[1].cycles)
    timeline, roofline = out / "timeline.png", out / "roofline.png"
    timeline_png(longest, timeline, title=f"{node}: the longest accelerator step")
    roofline_png([(n, s) for n, s in cycle_stats if s.ops > 0] or list(cycle_stats), roofline)
    return [timeline, roofline]
