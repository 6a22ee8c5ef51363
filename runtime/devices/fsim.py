"""The ``fsim`` device: the functional simulator (``simulator.FunctionalSimulator``), bit-exact and
without time; its stats carry VTA's profiler counters."""

from __future__ import annotations

import time

import numpy as np

from isa import AccelConfig, Program
from runtime.devices.base import Device, DeviceKind, RunStats, check_run, refuse
from simulator import FunctionalSimulator
from simulator.arguments import flag_problem

__all__ = ["FunctionalDevice"]


class FunctionalDevice(Device):
    """Runs programs on the functional simulator for ``cfg``; ``detect_races=False`` skips race
    detection (faster; the same bytes for a race-free program)."""

    kind = DeviceKind.FSIM

    def __init__(self, cfg: AccelConfig, *, detect_races: bool = True) -> None:
        super().__init__(cfg)
        refuse(flag_problem("detect_races", detect_races))
        self._simulator = FunctionalSimulator(cfg, detect_races=detect_races)

    def run(self, program: Program, dram: np.ndarray) -> RunStats:
        """Run ``program`` (raises the simulator's SimulationError for a program it refuses)."""
        check_run(program, dram)
        started = time.perf_counter()
        result = self._simulator.run(program, dram)
        return RunStats(self.kind, time.perf_counter() - started, counters=result.counters)
