"""The simulators' exception types.

Every error names the instruction (its index in program order and its disassembly line), so a
broken program can be found in a listing. :class:`DeadlockError` and :class:`RaceError` are
:class:`SimulationError`\\ s, so one ``except SimulationError`` catches every way a program fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from isa import Instruction, VtaforgeError, format_insn

__all__ = ["Blocked", "DeadlockError", "RaceError", "ReportError", "SimulationError", "describe"]


def describe(index: int, insn: Instruction) -> str:
    """``instruction N (disassembly)``: how every simulator message names an instruction."""
    return f"instruction {index} ({format_insn(insn)})"


class SimulationError(VtaforgeError):
    """A program broke a rule of ``isa/SEMANTICS.md``; ``index`` is the failing instruction
    (None for a rule about the whole program, such as an empty one)."""

    def __init__(self, message: str, *, index: int | None = None, insn: Instruction | None = None):
        self.index = index
        self.detail = message
        if index is None:
            where = ""
        elif insn is None:
            where = f"instruction {index}: "
        else:
            where = f"{describe(index, insn)}: "
        super().__init__(where + message)


@dataclass(frozen=True)
class Blocked:
    """Why one unit cannot proceed: ``unit`` (``load``, ``compute``, ``store`` or ``fetch``) at
    instruction ``index``, waiting for ``waiting_for``."""

    unit: str
    index: int
    insn: Instruction
    waiting_for: str

    def __str__(self) -> str:
        return f"{self.unit} blocked at {describe(self.index, self.insn)}: {self.waiting_for}"


class DeadlockError(SimulationError):
    """No module can make progress: ``blocked`` lists each stuck unit, ``tokens`` the counters."""

    def __init__(self, blocked: Sequence[Blocked], tokens: Mapping[str, int]) -> None:
        self.blocked = tuple(blocked)
        self.tokens = dict(tokens)
        counters = " ".join(f"{name}={count}" for name, count in self.tokens.items())
        lines = ["deadlock: no module can make progress", *(f"  {b}" for b in self.blocked)]
        lines.append(f"  token counters: {counters}")
        first = self.blocked[0] if self.blocked else None
        super().__init__("\n".join(lines))
        self.index = first.index if first else None


class RaceError(SimulationError):
    """Two modules touch the same ``buffer`` ``rows`` (bytes for DRAM), at least one writing,
    and no chain of tokens orders ``earlier`` before ``later`` (both ``(index, insn)``)."""

    def __init__(
        self,
        buffer: str,
        rows: Sequence[int],
        earlier: tuple[int, Instruction, str],
        later: tuple[int, Instruction, str],
    ) -> None:
        self.buffer = buffer
        self.rows = tuple(rows)
        self.earlier = earlier[:2]
        self.later = later[:2]
        unit = "bytes" if buffer == "DRAM" else "rows"
        shown = _span(self.rows)
        super().__init__(
            f"race on {buffer} {unit} {shown}: {describe(*earlier[:2])} {earlier[2]} them and "
            f"{describe(*later[:2])} {later[2]} them, and no dependency token orders the two",
            index=None,
        )
        self.index = later[0]


def _span(values: Sequence[int]) -> str:
    """A short description of a set of row numbers: ``3``, ``0..15 (16)`` or a sample."""
    values = sorted(values)
    if len(values) == 1:
        return str(values[0])
    if values[-1] - values[0] + 1 == len(values):
        return f"{values[0]}..{values[-1]} ({len(values)})"
    sample = ", ".join(map(str, values[:6]))
    return f"{sample}{', ...' if len(values) > 6 else ''} ({len(values)})"


class ReportError(VtaforgeError):
    """A report of timed runs (a trace, a plot) was asked for something it cannot show."""
