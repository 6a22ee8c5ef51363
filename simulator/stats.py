"""Placeholder (being written)."""
from __future__ import annotations
from dataclasses import dataclass

__all__ = ["CycleStats"]


@dataclass(frozen=True)
class CycleStats:
    cycles: int
    timeline: object

    @classmethod
    def collect(cls, cfg, timing, events, counters, cycles, machine):
        return cls(cycles, machine.timeline)
