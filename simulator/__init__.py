"""Simulators of the accelerator: the bit-exact functional simulator (the executable
definition of the ISA) and the cycle-level timing model that consumes its events."""

from simulator.errors import Blocked, DeadlockError, RaceError, SimulationError
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

__all__ = [
    "AluEvent",
    "Blocked",
    "Counters",
    "DeadlockError",
    "Event",
    "FinishEvent",
    "FunctionalSimulator",
    "GemmEvent",
    "LoadEvent",
    "RaceError",
    "RunResult",
    "SimulationError",
    "StoreEvent",
]
