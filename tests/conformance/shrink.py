"""Shrinking a failing program to a small reproducer by dropping instructions.

:func:`shrink` removes chunks of instructions (halves, then quarters, ..., then single ones;
FINISH stays last) while the program remains valid, meaning the functional simulator still
accepts it, and keeps failing. Each round tests every candidate of one chunk size in a single
call of ``still_fails``, so a level with a start-up cost (a Verilator process) pays it once per
round, and the number of rounds is bounded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from isa import Program
from simulator import FunctionalSimulator, SimulationError

__all__ = ["shrink"]


def shrink(
    program: Program,
    still_fails: Callable[[Sequence[Program]], Sequence[bool]],
    *,
    rounds: int = 12,
) -> Program:
    """The smallest failing variant of ``program`` found within ``rounds`` calls of
    ``still_fails`` (which says, for each valid candidate, whether it still fails)."""
    body, finish = list(program.instructions[:-1]), program.instructions[-1]
    chunk = max(1, len(body) // 2)
    for _ in range(rounds):
        candidates = [
            dataclasses.replace(program, instructions=(*body[:i], *body[i + chunk :], finish))
            for i in range(0, len(body), chunk)
        ]
        valid = [candidate for candidate in candidates if _valid(candidate)]
        failing = [c for c, fails in zip(valid, still_fails(valid), strict=True) if fails]
        if failing:
            body = list(failing[0].instructions[:-1])
            chunk = min(chunk, max(1, len(body) // 2))
        elif chunk == 1:
            break
        else:
            chunk //= 2
    return dataclasses.replace(program, instructions=(*body, finish))


def _valid(program: Program) -> bool:
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    try:
        FunctionalSimulator(program.config).run(program, dram)
    except SimulationError:
        return False
    return True
