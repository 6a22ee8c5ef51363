"""The levels that run the conformance suite: add a runner here and every case runs on it.

A runner executes a program against a DRAM array in place. The RTL takes only ``Size.SMALL``
cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hw.sim import MemoryTiming, simulate
from isa import Program
from simulator import CycleSimulator, FunctionalSimulator
from tests.conformance.common import Size

__all__ = ["RUNNERS", "Runner"]


@dataclass(frozen=True)
class Runner:
    """``presets``: the presets the runner takes (None: every preset a case supports)."""

    name: str
    run: Callable[[Program, np.ndarray], None]
    sizes: tuple[Size, ...] = (Size.SMALL, Size.LARGE)
    presets: tuple[str, ...] | None = None


def _functional(program: Program, dram: np.ndarray) -> None:
    FunctionalSimulator(program.config).run(program, dram)


def _rtl(program: Program, dram: np.ndarray) -> None:
    """The Amaranth RTL under a memory with random latency and back-pressure; its whole DRAM
    must also equal the functional simulator's, byte for byte."""
    expected = dram.copy()
    _functional(program, expected)
    simulate(program.config, program, dram, timing=MemoryTiming((0, 8), 0.7, seed=0))
    np.testing.assert_array_equal(dram, expected, err_msg="RTL and functional DRAM differ")


def _cycle(program: Program, dram: np.ndarray) -> None:
    """The cycle-level simulator; its whole DRAM must equal the functional simulator's."""
    expected = dram.copy()
    _functional(program, expected)
    CycleSimulator(program.config).run(program, dram)
    np.testing.assert_array_equal(dram, expected, err_msg="cycle-level and functional DRAM differ")


RUNNERS: tuple[Runner, ...] = (
    Runner("functional", _functional),
    Runner("cycle", _cycle),
    Runner("rtl", _rtl, sizes=(Size.SMALL,), presets=("tiny",)),
)
