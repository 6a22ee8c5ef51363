"""The ``sim`` device: the cycle-level simulator (``simulator.CycleSimulator``), which leaves the
functional simulator's bytes in DRAM and adds the cycle count of the RTL's microarchitecture under
a memory described by an ``isa.TimingConfig``."""

from __future__ import annotations

import time

import numpy as np

from isa import AccelConfig, Program, TimingConfig
from runtime.devices.base import Device, DeviceKind, RunStats, check_run, refuse
from simulator import CycleSimulator, CycleStats
from simulator.arguments import flag_problem, timing_problem

__all__ = ["CycleDevice"]


class CycleDevice(Device):
    """Runs programs on the cycle-level simulator for ``cfg`` under ``timing`` (default: the
    RTL with an ideal memory). ``RtlDevice.memory_timing`` is the timing that reproduces the
    ``rtl`` device's cycle counts. ``last_stats`` keeps the full statistics of the latest run
    (per-unit activity, per-instruction cycles, bursts) for traces and plots."""

    kind = DeviceKind.SIM

    def __init__(
        self, cfg: AccelConfig, *, timing: TimingConfig | None = None, detect_races: bool = True
    ) -> None:
        super().__init__(cfg)
        refuse(timing_problem(timing) or flag_problem("detect_races", detect_races))
        self.timing = timing if timing is not None else TimingConfig()
        self._simulator = CycleSimulator(cfg, self.timing, detect_races=detect_races)
        self.last_stats: CycleStats | None = None

    def run(self, program: Program, dram: np.ndarray) -> RunStats:
        """Run ``program`` (raises the simulators' SimulationError for a program they refuse)."""
        check_run(program, dram)
        started = time.perf_counter()
        stats = self._simulator.run(program, dram)
        self.last_stats = stats
        return RunStats(
            self.kind,
            time.perf_counter() - started,
            cycles=stats.cycles,
            counters=stats.counters,
            read_beats=stats.read_beats,
            write_beats=stats.write_beats,
        )
