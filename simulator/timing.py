"""The cycle-level simulator: when each instruction runs, on a model of the RTL's
microarchitecture (:mod:`simulator.machine`), for a program the functional simulator has
executed. Two schedulers run the model, with the same results: the event-driven one (by
default) and the stepped one, cycle by cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from isa import AccelConfig, Instruction, Program, TimingConfig
from simulator.arguments import config_problem, flag_problem, timing_problem
from simulator.errors import SimulationError
from simulator.events import RunResult
from simulator.functional import FunctionalSimulator
from simulator.machine import Machine
from simulator.stats import CycleStats

__all__ = ["CycleSimulator", "time_run"]


class CycleSimulator:
    """Runs programs for ``cfg`` with the functional simulator and times them.

    ``run(program, dram)`` has :class:`~simulator.FunctionalSimulator`'s call shape: it leaves
    the same bytes in ``dram`` and returns the :class:`~simulator.stats.CycleStats`.
    ``stepped=True`` uses the slow cycle-by-cycle scheduler (same results).
    """

    def __init__(
        self,
        cfg: AccelConfig,
        timing: TimingConfig | None = None,
        *,
        stepped: bool = False,
        detect_races: bool = True,
    ) -> None:
        problem = config_problem(cfg) or timing_problem(timing) or flag_problem("stepped", stepped)
        if problem:
            raise SimulationError(problem)
        self.cfg = cfg
        self.timing = timing if timing is not None else TimingConfig()
        self.stepped = stepped
        self.functional = FunctionalSimulator(cfg, detect_races=detect_races)

    def run(self, program: Program | Sequence[Instruction | int], dram: np.ndarray) -> CycleStats:
        """Execute ``program`` against ``dram`` (changed in place) and time it."""
        result = self.functional.run(program, dram)
        return time_run(self.cfg, result, self.timing, stepped=self.stepped)


def time_run(
    cfg: AccelConfig, result: RunResult, timing: TimingConfig | None = None, *, stepped=False
) -> CycleStats:
    """Time a functional run's events (the functional simulation itself is not repeated)."""
    timing = timing if timing is not None else TimingConfig()
    events = sorted(result.events, key=lambda e: e.index)
    machine = Machine(cfg, timing, events, stepped)
    cycles = machine.run()
    return CycleStats.collect(
        cfg,
        timing,
        events,
        result.counters,
        cycles,
        machine.timeline,
        machine.bursts(),
        read_beats=sum(port.beats for port in machine.ports),
        write_beats=machine.store_engine.beats,
    )
