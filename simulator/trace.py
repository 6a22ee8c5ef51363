"""Timelines of a timed run in the Chrome trace-event JSON format (open it in Perfetto's UI or
``chrome://tracing``).

One track per module (load, compute, store) with one slice per instruction, from its start to
its retirement, and before it, when it had to wait, a ``wait <token>`` slice from the cycle its
module took it; fetch's track marks each instruction's dispatch into its command queue; the read
and write ports' tracks hold one slice per burst, from its first data beat to its last.
Timestamps are microseconds at the configured clock; every slice's ``args`` give the cycles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from isa import Stage
from simulator.stats import CycleStats

__all__ = ["TRACKS", "chrome_trace", "write_chrome_trace"]

#: Track (thread) ids: fetch, the three modules, then the memory ports.
TRACKS = {"fetch": 1, "load": 2, "compute": 3, "store": 4, "read port": 5, "write port": 6}
_MODULE_TRACK = {Stage.LOAD: "load", Stage.COMPUTE: "compute", Stage.STORE: "store"}
_PID = 1


def chrome_trace(stats: CycleStats, name: str = "vtaforge") -> dict[str, Any]:
    """The trace of ``stats`` as a JSON-ready dict (``{"traceEvents": [...]}``)."""
    us = 1.0 / stats.config.clock_mhz  # one cycle, in microseconds
    events: list[dict[str, Any]] = [
        # (a process's name: the trace format reads no thread id on it)
        _meta("process_name", 0, f"{name} on {stats.config.fingerprint}"),  # pragma: no mutate
        *(_meta("thread_name", tid, track) for track, tid in TRACKS.items()),
        *(_meta("thread_sort_index", tid, tid) for tid in TRACKS.values()),
    ]
    for insn in stats.instructions:
        tid = TRACKS[_MODULE_TRACK[insn.module]]
        cycles = {
            "index": insn.index,
            "dispatched": insn.dispatched,
            "taken": insn.taken,
            "started": insn.started,
            "retired": insn.retired,
        }
        if insn.token_wait > 0:
            tokens = " ".join(t.value for t in insn.pops)
            events.append(
                _slice(f"wait {tokens}", "token", tid, insn.taken + 1, insn.token_wait, us, cycles)
            )
        events.append(
            _slice(insn.label, "instruction", tid, insn.started, insn.duration, us, cycles)
        )
        events.append(
            {
                "name": f"dispatch {insn.index} {insn.label}",
                "cat": "fetch",
                "ph": "i",
                "s": "t",
                "ts": insn.dispatched * us,
                "pid": _PID,
                "tid": TRACKS["fetch"],
                "args": cycles,
            }
        )
    for burst in stats.bursts:
        track = f"{burst.port} port"
        args = {"beats": burst.beats, "accepted": burst.accepted, "first": burst.first}
        duration = burst.last - burst.first + 1
        events.append(_slice(burst.unit, "burst", TRACKS[track], burst.first, duration, us, args))
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_chrome_trace(stats: CycleStats, path: str | Path, name: str = "vtaforge") -> None:
    """Write :func:`chrome_trace` of ``stats`` to ``path``."""
    Path(path).write_text(json.dumps(chrome_trace(stats, name)))


def _meta(kind: str, tid: int, value: str | int) -> dict[str, Any]:
    key = "sort_index" if kind == "thread_sort_index" else "name"
    return {"name": kind, "ph": "M", "pid": _PID, "tid": tid, "args": {key: value}}


def _slice(
    name: str, category: str, tid: int, cycle: int, cycles: int, us: float, args: dict
) -> dict[str, Any]:
    return {
        "name": name,
        "cat": category,
        "ph": "X",
        "ts": cycle * us,
        "dur": cycles * us,
        "pid": _PID,
        "tid": tid,
        "args": args,
    }
