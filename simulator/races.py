"""Exact race detection with vector clocks (SEMANTICS section 7).

Happens-before is program order within a module plus, for every token, push -> matching pop.
Each module keeps a vector clock of three counters (load, compute, store); its own counter is the
sequence number of the instruction it runs, and the k-th pop of a token counter joins the clock
its k-th push carried. An access ``a`` by module ``m`` happens before an access ``b`` exactly when
``a``'s sequence number is at most ``b``'s clock entry for ``m``.

For every position (an SRAM row of INP, WGT or OUT, or a DRAM byte) the detector keeps the last
writer and each module's latest reader, in numpy arrays; a new access that conflicts with one of
them (at least one side writing, different modules) and is not ordered after it is a race. The
verdict does not depend on the order the scheduler runs the modules in: the clocks only record
token edges, which every schedule shares. DRAM shadow memory is allocated page by page, on
first touch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from isa import AccelConfig, Instruction, Stage
from simulator.errors import RaceError

__all__ = ["Access", "RaceDetector", "Space"]

_MODULES = len(Stage)
_PAGE_BITS = 12
_PAGE = 1 << _PAGE_BITS


class Space(Enum):
    """Where an access lands: a shared SRAM (rows) or DRAM (bytes)."""

    INP = "INP"
    WGT = "WGT"
    OUT = "OUT"
    DRAM = "DRAM"


@dataclass(frozen=True)
class Access:
    """An instruction reads or writes ``positions`` (rows or byte addresses) of ``space``."""

    space: Space
    write: bool
    positions: np.ndarray


class _Shadow:
    """Last writer and latest reader per module, for each position of one space."""

    def __init__(self, size: int) -> None:
        self.writer_module = np.full(size, -1, dtype=np.int8)
        self.writer_seq = np.zeros(size, dtype=np.int64)
        self.writer_insn = np.full(size, -1, dtype=np.int64)
        self.reader_seq = np.zeros((_MODULES, size), dtype=np.int64)
        self.reader_insn = np.full((_MODULES, size), -1, dtype=np.int64)

    def reserve(self, size: int) -> None:
        """Make room for ``size`` positions, at least doubling (amortised O(1) per page)."""
        old = len(self.writer_seq)
        if size <= old:
            return
        fresh = _Shadow(max(size, 2 * old) - old)
        self.writer_module = np.concatenate([self.writer_module, fresh.writer_module])
        self.writer_seq = np.concatenate([self.writer_seq, fresh.writer_seq])
        self.writer_insn = np.concatenate([self.writer_insn, fresh.writer_insn])
        self.reader_seq = np.concatenate([self.reader_seq, fresh.reader_seq], axis=1)
        self.reader_insn = np.concatenate([self.reader_insn, fresh.reader_insn], axis=1)

    def conflict(
        self, module: int, clock: np.ndarray, positions: np.ndarray, write: bool
    ) -> tuple[np.ndarray, np.ndarray, str] | None:
        """(mask over ``positions``, conflicting instruction per position, what it did) for the
        first kind of unordered conflict found, or None."""
        writer = self.writer_module[positions]
        known = np.maximum(writer, 0)
        unordered = (writer >= 0) & (writer != module) & (self.writer_seq[positions] > clock[known])
        if unordered.any():
            return unordered, self.writer_insn[positions], "writes"
        if write:
            for other in range(_MODULES):
                if other != module:
                    unordered = self.reader_seq[other, positions] > clock[other]
                    if unordered.any():
                        return unordered, self.reader_insn[other, positions], "reads"
        return None

    def record(self, module: int, seq: int, index: int, positions: np.ndarray, write: bool) -> None:
        if write:
            self.writer_module[positions] = module
            self.writer_seq[positions] = seq
            self.writer_insn[positions] = index
        else:
            self.reader_seq[module, positions] = seq
            self.reader_insn[module, positions] = index


class RaceDetector:
    """Checks and records every shared access of a run (see the module docstring)."""

    def __init__(self, cfg: AccelConfig, instructions: Sequence[Instruction]) -> None:
        self._instructions = instructions
        self._sram = {
            Space.INP: _Shadow(cfg.inp_buff_depth),
            Space.WGT: _Shadow(cfg.wgt_buff_depth),
            Space.OUT: _Shadow(cfg.out_buff_depth),
        }
        self._dram = _Shadow(0)
        self._page_slot: dict[int, int] = {}

    def access(
        self, module: Stage, clock: np.ndarray, index: int, accesses: Sequence[Access]
    ) -> None:
        """Instruction ``index`` of ``module``, whose vector clock is ``clock``, makes
        ``accesses``: raise RaceError if one is unordered with a conflicting earlier access of
        another module, else remember them. Nothing is recorded when a race is raised."""
        me = int(module) - 1
        mapped = [(a, self._table(a.space), self._positions(a)) for a in accesses]
        for access, table, positions in mapped:
            found = table.conflict(me, clock, positions, access.write)
            if found is not None:
                self._raise(access, positions, found, index)
        seq = int(clock[me])
        for access, table, positions in mapped:
            table.record(me, seq, index, positions, access.write)

    def _table(self, space: Space) -> _Shadow:
        return self._dram if space is Space.DRAM else self._sram[space]

    def _positions(self, access: Access) -> np.ndarray:
        """Table positions of an access: SRAM rows as they are, DRAM bytes through pages."""
        if access.space is not Space.DRAM:
            return access.positions
        pages = access.positions >> _PAGE_BITS
        new = [int(p) for p in np.unique(pages) if int(p) not in self._page_slot]
        if new:
            first = len(self._page_slot)
            self._page_slot.update({p: first + i for i, p in enumerate(new)})
            self._dram.reserve(len(self._page_slot) * _PAGE)
        unique, inverse = np.unique(pages, return_inverse=True)
        slots = np.array([self._page_slot[int(p)] for p in unique], dtype=np.int64)
        return slots[inverse] * _PAGE + (access.positions & (_PAGE - 1))

    def _raise(
        self,
        access: Access,
        positions: np.ndarray,
        found: tuple[np.ndarray, np.ndarray, str],
        index: int,
    ) -> None:
        mask, other_insn, did = found
        other = int(other_insn[np.argmax(mask)])
        rows = np.unique(access.positions[mask & (other_insn == other)])
        verb = "writes" if access.write else "reads"
        raise RaceError(
            access.space.value,
            rows.tolist(),
            (other, self._instructions[other], did),
            (index, self._instructions[index], verb),
        )
