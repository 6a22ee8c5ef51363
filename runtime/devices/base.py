"""What every device is: ``run(program, dram)`` leaves the program's results in ``dram`` and
returns :class:`RunStats`; ``run_many`` runs several programs, each on its own DRAM.

A device runs an :class:`isa.Program` the way the functional simulator defines it
(``isa/SEMANTICS.md``): the program's micro-op table and data segments are written into
``dram`` (a 1-D ``numpy.uint8`` array indexed by byte address), the program runs to FINISH, and
``dram`` then holds what it stored. Levels differ in what they measure, not in the bytes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isa import AccelConfig, FinishInsn, Program, VtaforgeError, check_config
from isa.compat import StrEnum
from simulator import Counters
from simulator.arguments import config_problem, dram_problem, program_problem

__all__ = [
    "Device",
    "DeviceError",
    "DeviceKind",
    "Job",
    "RunStats",
    "check_jobs",
    "check_run",
    "prepare_launch",
    "refuse",
]


class DeviceKind(StrEnum):
    """The levels a program runs on (``runtime.open_device`` takes one, or its value)."""

    FSIM = "fsim"  # the functional simulator: bit-exact, no time
    SIM = "sim"  # the cycle-level simulator: the functional simulator's bytes, the RTL's cycles
    RTL = "rtl"  # the Verilated RTL behind AXI, driven by cocotb
    PYNQ = "pynq"  # the bitstream on a PYNQ board (runtime.devices.pynq)


class DeviceError(VtaforgeError):
    """A device cannot be opened or cannot run a program."""


@dataclass(frozen=True)
class RunStats:
    """What one run measured; a field is None where the level does not model it.

    ``cycles``: accelerator clock cycles from the launch to FINISH; ``counters``: VTA's profiler
    counters; ``read_beats``/``write_beats``: data beats on the memory bus; ``wall_seconds``:
    host time of the run itself (a simulator process's start-up excluded).
    """

    kind: DeviceKind
    wall_seconds: float
    cycles: int | None = None
    counters: Counters | None = None
    read_beats: int | None = None
    write_beats: int | None = None

    @property
    def cycles_per_second(self) -> float | None:
        """Simulated cycles per host second, where the level has cycles."""
        if self.cycles is None or not self.wall_seconds:
            return None
        return self.cycles / self.wall_seconds


#: One program and the DRAM it runs against (changed in place).
Job = tuple[Program, np.ndarray]


class Device(ABC):
    """A level that runs programs for one configuration, ``cfg``."""

    kind: DeviceKind

    def __init__(self, cfg: AccelConfig) -> None:
        refuse(config_problem(cfg))
        self.cfg = cfg

    @abstractmethod
    def run(self, program: Program, dram: np.ndarray) -> RunStats:
        """Run ``program`` against ``dram`` (changed in place); see the module docstring."""

    def run_many(self, jobs: Sequence[Job]) -> list[RunStats]:
        """Run each program against its own DRAM, in order; one stats record per job. Every job
        is checked (:func:`check_jobs`) before the first runs."""
        check_jobs(jobs)
        return [self.run(program, dram) for program, dram in jobs]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind.value} {self.cfg.fingerprint}>"


def check_run(program: object, dram: object) -> None:
    """Raise DeviceError unless ``program`` is an :class:`isa.Program` and ``dram`` a plain,
    writeable, contiguous 1-D numpy array of uint8 (:func:`simulator.arguments.dram_problem`:
    one rule for both layers, each raising its own error)."""
    refuse(program_problem(program, records=False) or dram_problem(dram))


def check_jobs(jobs: object) -> None:
    """Raise DeviceError unless ``jobs`` is a list or tuple of ``(program, dram)`` pairs that
    :func:`check_run` accepts; the message names the first bad job's index."""
    if not isinstance(jobs, list | tuple):
        raise DeviceError(f"jobs must be a list of (program, dram) pairs, not {_name(jobs)}")
    for index, job in enumerate(jobs):
        if not isinstance(job, tuple | list) or len(job) != 2:
            raise DeviceError(f"job {index} must be a (program, dram) pair, not {_name(job)}")
        try:
            check_run(*job)
        except DeviceError as err:
            raise DeviceError(f"job {index}: {err}") from None


def prepare_launch(program: Program, cfg: AccelConfig, dram: np.ndarray) -> None:
    """What a driver does before launching ``program`` on hardware configured as ``cfg``: check
    that the program's configuration is compatible and that it ends with FINISH (without one the
    accelerator never raises done), then write its micro-op table and segments into ``dram``.
    Raises DeviceError."""
    try:
        check_config(program.config, cfg)
        if not program.instructions or not isinstance(program.instructions[-1], FinishInsn):
            raise DeviceError("the program must end with FINISH, or it never raises done")
        program.write_to(dram)
    except DeviceError:
        raise
    except VtaforgeError as err:
        raise DeviceError(str(err)) from err


def refuse(problem: str | None) -> None:
    """Raise DeviceError with ``problem``, a ``simulator.arguments`` check's answer, if any."""
    if problem:
        raise DeviceError(problem)


def _name(value: object) -> str:
    return type(value).__name__
