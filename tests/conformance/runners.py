"""The levels that run the conformance suite: add a runner here and every case runs on it.

A runner executes a batch of programs, each against its own DRAM, in place. The RTL levels take
only ``Size.SMALL`` cases and their whole DRAM must equal the functional simulator's, byte for
byte: ``amaranth`` is the accelerator in Amaranth's own simulator (tiny and tiny without the ALU
multiplier only, under a memory with random latency and back-pressure); ``verilator`` is the
Verilated AXI top level driven by cocotb (``runtime``'s ``rtl`` device), on the tiny, tiny
without multiplier and default configurations. A ``batched`` runner gets all of a
configuration's cases in one call (the Verilator runner: one simulator process). The
cycle-level simulator takes every case, and its whole DRAM must equal the functional
simulator's too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hw.sim import MemoryTiming, simulate
from isa import AccelConfig
from runtime.devices import Device, Job, open_device
from simulator import CycleSimulator, FunctionalSimulator
from tests.conformance.common import Size

__all__ = ["RTL_CACHE", "RUNNERS", "Runner", "rtl_device"]

#: Where the tests build the Verilated models (an ignored folder of the checkout).
RTL_CACHE = Path(__file__).resolve().parents[2] / "build" / "rtl"


@dataclass(frozen=True)
class Runner:
    """``configs``: the suite configurations (``common.CONFIGS`` names) the runner takes (None:
    every one a case runs on); ``whole_dram``: the test compares all of DRAM with the functional
    simulator's."""

    name: str
    run: Callable[[Sequence[Job]], None]
    sizes: tuple[Size, ...] = (Size.SMALL, Size.LARGE)
    configs: tuple[str, ...] | None = None
    batched: bool = False
    whole_dram: bool = False


def rtl_device(cfg: AccelConfig, **options) -> Device:
    """The ``rtl`` device of ``cfg``, built once under :data:`RTL_CACHE`."""
    return open_device("rtl", cfg, cache_dir=RTL_CACHE, **options)


def _functional(jobs: Sequence[Job]) -> None:
    for program, dram in jobs:
        FunctionalSimulator(program.config).run(program, dram)


def _cycle(jobs: Sequence[Job]) -> None:
    for program, dram in jobs:
        CycleSimulator(program.config).run(program, dram)


def _amaranth(jobs: Sequence[Job]) -> None:
    """Amaranth's simulator under a memory with random latency and back-pressure."""
    for program, dram in jobs:
        simulate(program.config, program, dram, timing=MemoryTiming((0, 8), 0.7, seed=0))


def _verilator(jobs: Sequence[Job]) -> None:
    """One Verilator process for the batch (raises RtlRunError naming the failed jobs)."""
    rtl_device(jobs[0][0].config).run_many(jobs)


RUNNERS: tuple[Runner, ...] = (
    Runner("functional", _functional),
    Runner("cycle", _cycle, whole_dram=True),
    Runner(
        "amaranth",
        _amaranth,
        sizes=(Size.SMALL,),
        configs=("tiny", "tiny_nomul"),
        whole_dram=True,
    ),
    Runner(
        "verilator",
        _verilator,
        sizes=(Size.SMALL,),
        configs=("tiny", "tiny_nomul", "default"),
        batched=True,
        whole_dram=True,
    ),
)
