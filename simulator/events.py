"""What a run reports: one event per executed instruction, and VTA's profiler counters.

The cycle-level simulator consumes the events and never recomputes values, so each event
carries every size a timing model needs (rows, bytes, DRAM addresses and strides, steps, token
pops and pushes). :class:`Counters` are VTA's ``profiler_status`` (vta-facts 4.1), derived from
the events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from isa import AluOp, MemId, Stage, Token

if TYPE_CHECKING:
    from typing import Self  # Python 3.11; the board runs 3.10 (isa.compat)

__all__ = [
    "AluEvent",
    "Counters",
    "Event",
    "FinishEvent",
    "GemmEvent",
    "LoadEvent",
    "RunResult",
    "StoreEvent",
]


@dataclass(frozen=True, kw_only=True)
class Event:
    """Instruction ``index`` (program order) ran on ``module``, after popping ``pops`` and
    before pushing ``pushes``."""

    index: int
    module: Stage
    pops: tuple[Token, ...]
    pushes: tuple[Token, ...]

    @classmethod
    def of(cls, fields: dict[str, Any]) -> Self:
        """The event of class ``cls`` with ``fields`` (exactly its fields; the dict becomes the
        event's own), made without the generated ``__init__``: the functional simulator makes
        one per instruction, and a frozen dataclass's ``__init__``, which sets field by field,
        took about a tenth of a short run."""
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", fields)
        return event


@dataclass(frozen=True, kw_only=True)
class _Transfer(Event):
    """A 2-D DRAM transfer: ``y_size`` rows of ``x_size`` elements of ``elem_bytes`` bytes,
    starting at byte ``dram_address``, rows ``x_stride`` elements apart."""

    memory_type: MemId
    sram_base: int
    dram_address: int
    y_size: int
    x_size: int
    x_stride: int
    elem_bytes: int

    @property
    def nbytes(self) -> int:
        """DRAM bytes transferred (padding excluded)."""
        return self.y_size * self.x_size * self.elem_bytes


@dataclass(frozen=True, kw_only=True)
class LoadEvent(_Transfer):
    """A LOAD; ``sram_rows`` rows were written (padding included). ``x_size == 0``: a no-op."""

    y_pad_0: int
    y_pad_1: int
    x_pad_0: int
    x_pad_1: int

    @property
    def sram_rows(self) -> int:
        if self.x_size == 0:
            return 0
        width = self.x_pad_0 + self.x_size + self.x_pad_1
        return (self.y_pad_0 + self.y_size + self.y_pad_1) * width


@dataclass(frozen=True, kw_only=True)
class StoreEvent(_Transfer):
    """A STORE of ``y_size * x_size`` OUT rows. ``x_size == 0``: a no-op."""


@dataclass(frozen=True, kw_only=True)
class _Loop(Event):
    """A GEMM or ALU: ``uops`` micro-ops inside ``iter_out x iter_in`` iterations."""

    reset: bool
    uops: int
    iter_out: int
    iter_in: int

    @property
    def steps(self) -> int:
        return self.uops * self.iter_out * self.iter_in


@dataclass(frozen=True, kw_only=True)
class GemmEvent(_Loop):
    """A GEMM (each step one BATCH x BLOCK_IN x BLOCK_OUT matrix product unless ``reset``)."""


@dataclass(frozen=True, kw_only=True)
class AluEvent(_Loop):
    """An ALU instruction; ``use_imm`` steps read one accumulator row, others two."""

    op: AluOp
    use_imm: bool


@dataclass(frozen=True, kw_only=True)
class FinishEvent(Event):
    """FINISH: the program is done."""


@dataclass(frozen=True)
class Counters:
    """VTA's profiler counters (vta-facts 4.1): bytes moved per buffer (padding excluded) and
    micro-op steps (GEMM steps that multiply, every ALU step)."""

    inp_load_nbytes: int = 0
    wgt_load_nbytes: int = 0
    acc_load_nbytes: int = 0
    uop_load_nbytes: int = 0
    out_store_nbytes: int = 0
    gemm_counter: int = 0
    alu_counter: int = 0

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> Counters:
        totals = {f.name: 0 for f in dataclasses.fields(cls)}
        for event in events:
            if isinstance(event, LoadEvent) and event.nbytes:
                totals[_LOAD_COUNTER[event.memory_type]] += event.nbytes
            elif isinstance(event, StoreEvent):
                totals["out_store_nbytes"] += event.nbytes
            elif isinstance(event, GemmEvent) and not event.reset:
                totals["gemm_counter"] += event.steps
            elif isinstance(event, AluEvent):
                totals["alu_counter"] += event.steps
        return cls(**totals)


# A LOAD OUT moves nothing (with x_size > 0 it is an error), so it needs no counter.
_LOAD_COUNTER = {
    MemId.INP: "inp_load_nbytes",
    MemId.WGT: "wgt_load_nbytes",
    MemId.ACC: "acc_load_nbytes",
    MemId.ACC_8BIT: "acc_load_nbytes",
    MemId.UOP: "uop_load_nbytes",
}


@dataclass(frozen=True)
class RunResult:
    """The outcome of a run: every event in the order the simulator executed them (each
    module's events are in program order) and the counters."""

    events: tuple[Event, ...]
    counters: Counters

    def module_events(self, module: Stage) -> tuple[Event, ...]:
        """The events of one module, in program order."""
        return tuple(e for e in self.events if e.module == module)
