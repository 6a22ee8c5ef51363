"""The levels that run the conformance suite: add a runner here and every case runs on it.

A runner executes a program against a DRAM array in place. The cycle-level simulator and the
RTL join as further entries; the RTL takes only ``Size.SMALL`` cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from isa import Program
from simulator import FunctionalSimulator
from tests.conformance.common import Size

__all__ = ["RUNNERS", "Runner"]


@dataclass(frozen=True)
class Runner:
    name: str
    run: Callable[[Program, np.ndarray], None]
    sizes: tuple[Size, ...] = (Size.SMALL, Size.LARGE)


def _functional(program: Program, dram: np.ndarray) -> None:
    FunctionalSimulator(program.config).run(program, dram)


RUNNERS: tuple[Runner, ...] = (Runner("functional", _functional),)
