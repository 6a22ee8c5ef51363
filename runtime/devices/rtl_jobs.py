"""What the RTL device's host process and its simulator process (:mod:`runtime.devices.rtl_bench`)
exchange: a :class:`Batch` of :class:`RtlJob` going in, one :class:`RtlOutcome` per job coming
back, each pickled to a file (both sides are this package, in the same environment).

The memory image of a job is DRAM followed, from the first 4 KiB page above it, by the
instruction stream (as ``hw.simulate`` lays it out), so DRAM changes only where the program
stores. The program may read the whole image and write only DRAM.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path

from isa import AXI_PAGE_BYTES

__all__ = ["Batch", "RtlJob", "RtlOutcome", "load", "save"]


@dataclass(frozen=True)
class RtlJob:
    """One program: its memory ``image``, the first ``dram_bytes`` of which are DRAM."""

    image: bytes
    dram_bytes: int
    insn_addr: int
    insn_count: int

    @classmethod
    def layout(cls, dram: bytes, instructions: bytes, insn_count: int) -> RtlJob:
        """The job for DRAM contents ``dram`` and the encoded instruction stream."""
        insn_addr = -(-len(dram) // AXI_PAGE_BYTES) * AXI_PAGE_BYTES
        end = -(-(insn_addr + len(instructions)) // AXI_PAGE_BYTES) * AXI_PAGE_BYTES
        image = bytearray(end)
        image[: len(dram)] = dram
        image[insn_addr : insn_addr + len(instructions)] = instructions
        return cls(bytes(image), len(dram), insn_addr, insn_count)


@dataclass(frozen=True)
class Batch:
    """Jobs for one simulator process, and how to run them: the ``config_id`` the hardware must
    report, a cycle limit per job, and the memory's readiness (``ready_probability`` per cycle
    per AXI channel, from a ``seed``ed generator)."""

    jobs: tuple[RtlJob, ...]
    config_id: int
    max_cycles: int
    ready_probability: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class RtlOutcome:
    """The result of one job: DRAM afterwards and the hardware's counters, or ``error`` (with
    the control registers read at that point in ``registers``)."""

    dram: bytes = b""
    cycles: int = 0
    read_beats: int = 0
    write_beats: int = 0
    wall_seconds: float = 0.0
    error: str | None = None
    registers: dict[str, int] = field(default_factory=dict)


def save(obj: Batch | list[RtlOutcome], path: Path) -> None:
    path.write_bytes(pickle.dumps(obj))


def load(path: Path) -> Batch | list[RtlOutcome]:
    return pickle.loads(path.read_bytes())
