"""What a timed run reports: cycles, where they went, and what they achieved.

:class:`CycleStats` holds the total cycles (launch to FINISH, as the RTL's cycle counter),
each unit's activity breakdown (busy, waiting on memory, on a token, on a full command queue,
idle; one per cycle, so each unit's add up to the total), each instruction's cycles (entered its
queue, taken, started, retired), the bursts on the memory ports, and VTA's counters (bytes per
buffer, GEMM and ALU steps). Utilisation, achieved GOPS, bandwidths and arithmetic intensity are
derived from those; :meth:`CycleStats.table` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from isa import AccelConfig, Stage, TimingConfig, Token
from simulator.events import (
    AluEvent,
    Counters,
    Event,
    FinishEvent,
    GemmEvent,
    LoadEvent,
    StoreEvent,
)

__all__ = ["BurstTiming", "CycleStats", "InstructionTiming", "UnitActivity", "event_label"]

_INSN_BYTES = 16
#: The units whose activity is reported, in pipeline order.
UNITS = ("fetch", "load", "compute", "store")


def event_label(event: Event) -> str:
    """A short name for an executed instruction: ``LOAD INP``, ``GEMM reset``, ``ALU ADD``..."""
    if isinstance(event, LoadEvent):
        return f"LOAD {event.memory_type.name}" if event.x_size else "LOAD no-op"
    if isinstance(event, StoreEvent):
        return "STORE" if event.x_size else "STORE no-op"
    if isinstance(event, GemmEvent):
        return "GEMM reset" if event.reset else "GEMM"
    if isinstance(event, AluEvent):
        return f"ALU {event.op.name}{'' if event.use_imm else ' vector'}"
    assert isinstance(event, FinishEvent)
    return "FINISH"


@dataclass(frozen=True)
class InstructionTiming:
    """When instruction ``index`` entered its command queue, was taken by its module, started
    (its pops succeeded) and retired (it completed; its pushes followed)."""

    index: int
    module: Stage
    label: str
    pops: tuple[Token, ...]
    dispatched: int
    taken: int
    started: int
    retired: int

    @property
    def token_wait(self) -> int:
        """Cycles it waited for its tokens after being taken."""
        return self.started - self.taken - 1

    @property
    def duration(self) -> int:
        """Cycles from its start to its retirement, both included."""
        return self.retired - self.started + 1


@dataclass(frozen=True)
class UnitActivity:
    """Cycles one unit spent in each activity; they add up to the run's cycles."""

    busy: int
    memory: int
    token: int
    queue_full: int
    idle: int

    @property
    def total(self) -> int:
        return self.busy + self.memory + self.token + self.queue_full + self.idle


class BurstTiming(NamedTuple):
    """A memory burst: ``port`` (``read`` or ``write``), the unit it served, its beats, the
    cycle it was accepted and those of its first and last data beats. (A named tuple: a run
    has one per burst, hundreds to thousands, and a tuple is several times cheaper to make
    than a frozen dataclass.)"""

    port: str
    unit: str
    beats: int
    accepted: int
    first: int
    last: int


@dataclass(frozen=True)
class CycleStats:
    """The timing of one run (see the module docstring)."""

    config: AccelConfig
    timing: TimingConfig
    cycles: int
    units: dict[str, UnitActivity]
    instructions: tuple[InstructionTiming, ...]
    bursts: tuple[BurstTiming, ...]
    counters: Counters
    read_beats: int
    write_beats: int

    # ------------------------------------------------------------------ derived figures
    @property
    def seconds(self) -> float:
        """Accelerator time at the configured clock."""
        return self.cycles / (self.config.clock_mhz * 1e6)

    @property
    def gemm_utilisation(self) -> float:
        """Multiplying GEMM steps (micro-ops issued to the core) per cycle."""
        return self.counters.gemm_counter / self.cycles if self.cycles else 0.0

    @property
    def ops(self) -> int:
        """Operations the GEMM core performed (a multiply-accumulate is two)."""
        return 2 * self.config.macs_per_cycle * self.counters.gemm_counter

    @property
    def gops(self) -> float:
        """Achieved giga-operations per second at the configured clock."""
        return self.ops / self.seconds / 1e9 if self.cycles else 0.0

    @property
    def bytes_moved(self) -> dict[str, int]:
        """DRAM bytes each buffer moved (padding excluded; ``insn``: the instruction stream)."""
        c = self.counters
        return {
            "insn": _INSN_BYTES * len(self.instructions),
            "uop": c.uop_load_nbytes,
            "inp": c.inp_load_nbytes,
            "wgt": c.wgt_load_nbytes,
            "acc": c.acc_load_nbytes,
            "out": c.out_store_nbytes,
        }

    @property
    def dram_bytes(self) -> int:
        """Every byte that crossed the memory port (both directions)."""
        return sum(self.bytes_moved.values())

    def bandwidth(self, nbytes: int) -> float:
        """``nbytes`` over the run, in GB/s at the configured clock."""
        return nbytes / self.seconds / 1e9 if self.cycles else 0.0

    @property
    def port_gbps(self) -> float:
        """Peak bandwidth of one memory channel: a bus beat per cycle, in GB/s."""
        return self.config.bus_bytes * self.config.clock_mhz * 1e6 / 1e9

    @property
    def arithmetic_intensity(self) -> float:
        """GEMM operations per DRAM byte."""
        return self.ops / self.dram_bytes if self.dram_bytes else 0.0

    # ------------------------------------------------------------------ the printed table
    def table(self) -> str:
        """The stats as aligned text: totals, per-unit activity, per-buffer traffic."""
        cfg = self.config
        lines = [
            f"cycles            {self.cycles:,} ({self.seconds * 1e3:.4g} ms at "
            f"{cfg.clock_mhz:g} MHz; {len(self.instructions)} instructions)",
            f"GEMM utilisation  {100 * self.gemm_utilisation:.1f} % "
            f"({self.counters.gemm_counter:,} multiplying steps, "
            f"{self.counters.alu_counter:,} ALU steps)",
            f"achieved          {self.gops:.4g} GOPS of {cfg.peak_gops:g} peak; "
            f"{self.arithmetic_intensity:.3g} ops/DRAM byte",
            "",
            f"{'unit':<8}" + "".join(f"{h:>12}" for h in _ACTIVITY_HEADINGS),
        ]
        for name in UNITS:
            unit = self.units[name]
            cells = (unit.busy, unit.memory, unit.token, unit.queue_full, unit.idle)
            lines.append(f"{name:<8}" + "".join(f"{v:>12,}" for v in cells))
        lines += ["", f"{'buffer':<8}{'bytes':>12}{'GB/s':>12}"]
        for name, nbytes in self.bytes_moved.items():
            lines.append(f"{name:<8}{nbytes:>12,}{self.bandwidth(nbytes):>12.3f}")
        lines.append(
            f"{'total':<8}{self.dram_bytes:>12,}{self.bandwidth(self.dram_bytes):>12.3f}"
            f"  (one channel peaks at {self.port_gbps:g} GB/s)"
        )
        busy = 100 / self.cycles if self.cycles else 0.0
        lines.append(
            f"read port {self.read_beats:,} beats ({busy * self.read_beats:.1f} % of cycles), "
            f"write port {self.write_beats:,} beats ({busy * self.write_beats:.1f} %)"
        )
        return "\n".join(lines)

    # ------------------------------------------------------------------ construction
    @classmethod
    def collect(
        cls,
        cfg: AccelConfig,
        timing: TimingConfig,
        events: Sequence[Event],
        counters: Counters,
        cycles: int,
        timeline,
        bursts: Sequence[BurstTiming],
        read_beats: int,
        write_beats: int,
    ) -> CycleStats:
        """Assemble the stats of a finished run (``events`` in program order)."""
        instructions = tuple(
            InstructionTiming(
                index=event.index,
                module=event.module,
                label=event_label(event),
                pops=event.pops,
                dispatched=timeline.dispatched[event.index],
                taken=timeline.taken[event.index],
                started=timeline.started[event.index],
                retired=timeline.retired[event.index],
            )
            for event in events
        )
        units = {name: UnitActivity(*timeline.activity[name]) for name in UNITS}
        return cls(
            cfg,
            timing,
            cycles,
            units,
            instructions,
            tuple(bursts),
            counters,
            read_beats,
            write_beats,
        )


_ACTIVITY_HEADINGS = ("busy", "memory", "token", "queue full", "idle")
