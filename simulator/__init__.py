"""Simulators of the accelerator: the bit-exact functional simulator (the executable
definition of the ISA) and the cycle-level simulator, a model of the RTL's microarchitecture
that times the functional simulator's events, with its stats, Chrome-trace timelines and plots
(:mod:`simulator.plots`, which needs matplotlib, is imported on its own). The timing model
runs compiled where ``setup.py`` built it (:func:`compiled_modules` says which modules do).
What both work out from single instructions is shared by every run in the process
(:mod:`simulator.memo`; :func:`clear_memos` forgets it).
"""

# first: importing it sees to it that a stale build of a module is not used (simulator._native)
from simulator._native import compiled_modules
from simulator.errors import Blocked, DeadlockError, RaceError, ReportError, SimulationError
from simulator.events import (
    AluEvent,
    Counters,
    Event,
    FinishEvent,
    GemmEvent,
    LoadEvent,
    RunResult,
    StoreEvent,
)
from simulator.functional import FunctionalSimulator
from simulator.memo import clear_memos
from simulator.stats import BurstTiming, CycleStats, InstructionTiming, UnitActivity
from simulator.timing import CycleSimulator, time_run
from simulator.trace import chrome_trace, write_chrome_trace

__all__ = [
    "AluEvent",
    "Blocked",
    "BurstTiming",
    "Counters",
    "CycleSimulator",
    "CycleStats",
    "DeadlockError",
    "Event",
    "FinishEvent",
    "FunctionalSimulator",
    "GemmEvent",
    "InstructionTiming",
    "LoadEvent",
    "RaceError",
    "ReportError",
    "RunResult",
    "SimulationError",
    "StoreEvent",
    "UnitActivity",
    "chrome_trace",
    "clear_memos",
    "compiled_modules",
    "time_run",
    "write_chrome_trace",
]
