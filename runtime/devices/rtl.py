"""The ``rtl`` device: programs run on the Verilated RTL of ``AxiAccelerator(cfg)``.

Opening the device builds (or finds in its cache, :mod:`runtime.devices.rtl_build`) the
Verilator model. :meth:`RtlDevice.run_many` starts one simulator process for a whole batch of
programs (cocotb's start-up costs about a second, the programs themselves far less), where the
testbench :mod:`runtime.devices.rtl_bench` drives each through the AXI4-Lite registers and
serves its memory from a cocotbext-axi ``AxiRam``. Cycles come from the hardware's ``CYCLES``
register, bus traffic from its beat counters.

Amaranth, Verilator and cocotb are imported only when a device is opened or run, so ``runtime``
imports on a machine without them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isa import (
    AccelConfig,
    Program,
    TimingConfig,
    config_id,
)
from runtime.devices import rtl_jobs
from runtime.devices.base import (
    Device,
    DeviceError,
    DeviceKind,
    Job,
    RunStats,
    check_jobs,
    prepare_launch,
)
from runtime.devices.rtl_build import build_model, default_cache_dir, log_tail, run_testbench

__all__ = ["AXI_RAM_TIMING", "RtlDevice", "RtlRunError"]

_BENCH = "runtime.devices.rtl_bench"

#: The memory of the testbench, cocotbext-axi's ``AxiRam`` always ready, in the cycle-level
#: model's terms: a read burst's first beat comes 2 cycles after its address is accepted, a
#: write response 2 cycles after the last data beat. Measured by sweeping the model's memory
#: parameters against the RTL's cycle counter; with it the model gives the RTL's cycle counts
#: exactly (held by tests/runtime/test_calibration.py).
AXI_RAM_TIMING = TimingConfig(read_latency=2, write_response_latency=2)


class RtlRunError(DeviceError):
    """Programs of a batch failed on the RTL: ``failures`` maps each job's index to what went
    wrong (with the control registers read then); ``stats`` has the other jobs' stats (their
    DRAM holds their results) and None for the failed ones."""

    def __init__(self, failures: dict[int, str], stats: list[RunStats | None]) -> None:
        self.failures = failures
        self.stats = stats
        first, reason = next(iter(failures.items()))
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"program {first} of the batch failed on the RTL{more}: {reason}")


class RtlDevice(Device):
    """The Verilated RTL of ``cfg``; its memory answers every AXI channel with
    ``ready_probability`` per cycle (1.0: an ideal memory) from a ``seed``ed generator, and a
    program that has not finished after ``max_cycles`` fails. ``cache_dir`` holds the builds
    (:func:`~runtime.devices.rtl_build.default_cache_dir` when None)."""

    kind = DeviceKind.RTL

    def __init__(
        self,
        cfg: AccelConfig,
        *,
        cache_dir: Path | None = None,
        ready_probability: float = 1.0,
        seed: int = 0,
        max_cycles: int = 20_000_000,
    ) -> None:
        if not (_is_number(ready_probability, float) and 0.0 < ready_probability <= 1.0):
            raise DeviceError(f"ready_probability {ready_probability!r} must be in (0, 1]")
        if not (_is_number(max_cycles, int) and max_cycles >= 1):
            raise DeviceError(f"max_cycles {max_cycles!r} must be an integer of at least 1")
        if not _is_number(seed, int):
            raise DeviceError(f"seed {seed!r} must be an integer")
        if cache_dir is not None and not isinstance(cache_dir, str | Path):
            raise DeviceError(f"cache_dir must be a path or None, not a {type(cache_dir).__name__}")
        super().__init__(cfg)
        self.ready_probability = ready_probability
        self.seed = seed
        self.max_cycles = max_cycles
        self.build_dir = build_model(cfg, Path(cache_dir) if cache_dir else default_cache_dir())

    @property
    def memory_timing(self) -> TimingConfig | None:
        """The timing under which the ``sim`` device reproduces this device's cycle counts, or
        None when the memory stalls at random (the cycle-level model has no random stalls)."""
        return AXI_RAM_TIMING if self.ready_probability == 1.0 else None

    def run(self, program: Program, dram: np.ndarray) -> RunStats:
        """Run one program (a simulator process of its own: prefer :meth:`run_many`)."""
        return self.run_many([(program, dram)])[0]

    def run_many(self, jobs: Sequence[Job]) -> list[RunStats]:
        """Run every job in one simulator process; raises RtlRunError after the batch if any
        failed (the others' DRAM holds their results)."""
        check_jobs(jobs)
        batch = rtl_jobs.Batch(
            jobs=tuple(self._job(index, *job) for index, job in enumerate(jobs)),
            config_id=config_id(self.cfg),
            max_cycles=self.max_cycles,
            ready_probability=self.ready_probability,
            seed=self.seed,
        )
        if not batch.jobs:
            return []
        stats: list[RunStats | None] = []
        failures: dict[int, str] = {}
        for index, ((_, dram), outcome) in enumerate(zip(jobs, self._simulate(batch), strict=True)):
            if outcome.error is not None:
                registers = ", ".join(f"{k}={v:#x}" for k, v in outcome.registers.items())
                failures[index] = outcome.error + (f" [{registers}]" if registers else "")
                stats.append(None)
                continue
            dram[: len(outcome.dram)] = np.frombuffer(outcome.dram, dtype=np.uint8)
            stats.append(
                RunStats(
                    self.kind,
                    outcome.wall_seconds,
                    cycles=outcome.cycles,
                    read_beats=outcome.read_beats,
                    write_beats=outcome.write_beats,
                )
            )
        if failures:
            raise RtlRunError(failures, stats)
        return [stat for stat in stats if stat is not None]  # all of them, without a failure

    def _job(self, index: int, program: Program, dram: np.ndarray) -> rtl_jobs.RtlJob:
        """The memory image of one job, after the checks a driver makes before launching."""
        try:
            prepare_launch(program, self.cfg, dram)
        except DeviceError as err:
            raise DeviceError(f"job {index}: {err}") from err
        return rtl_jobs.RtlJob.layout(
            dram.tobytes(), program.instruction_bytes(), len(program.instructions)
        )

    def _simulate(self, batch: rtl_jobs.Batch) -> list[rtl_jobs.RtlOutcome]:
        """One simulator process for ``batch``: the outcome of each job."""
        with tempfile.TemporaryDirectory(prefix="vtaforge-rtl-") as folder:
            folder = Path(folder)
            batch_path, outcomes_path = folder / "batch.pickle", folder / "outcomes.pickle"
            rtl_jobs.save(batch, batch_path)
            plusargs = [f"+vtaforge_batch={batch_path}", f"+vtaforge_outcomes={outcomes_path}"]
            run_testbench(self.build_dir, _BENCH, folder, plusargs)
            if not outcomes_path.exists():
                raise DeviceError(f"the simulator left no outcomes:\n{log_tail(folder)}")
            outcomes = rtl_jobs.load(outcomes_path)
        return outcomes


def _is_number(value: object, kind: type) -> bool:
    """``value`` is an int (``kind`` int) or a real number (``kind`` float), never a bool."""
    allowed = (int, np.integer) if kind is int else (int, float, np.integer, np.floating)
    return isinstance(value, allowed) and not isinstance(value, bool | np.bool_)
