"""Exact race detection with vector clocks (SEMANTICS section 7).

Happens-before is program order within a module plus, for every token, push -> matching pop.
Each module keeps a vector clock of three counters (load, compute, store); its own counter is the
sequence number of the instruction it runs, and the k-th pop of a token counter joins the clock
its k-th push carried. An access ``a`` by module ``m`` happens before an access ``b`` exactly when
``a``'s sequence number is at most ``b``'s clock entry for ``m``.

For every position (an SRAM row of INP, WGT or OUT, or a piece of DRAM) the detector keeps the
last writer and each module's latest reader, as (module, sequence number) in numpy arrays; a new
access that conflicts with one of them (at least one side writing, different modules) and is not
ordered after it is a race. Keeping only the last writer is exact: an earlier write is ordered
before it, or the two already raced. The verdict does not depend on the order the scheduler runs
the modules in, because the clocks only record token edges, which every schedule shares.

DRAM is tracked in *granules* of the greatest common divisor of the element sizes: every
transfer starts at a multiple of its element size and moves whole elements, so it covers whole
granules and a granule is touched by an access exactly when one of its bytes is. Shadow memory
is allocated page by page, on first touch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from isa import AccelConfig, Instruction, MemId, Stage, stage_of
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
    """An instruction reads or writes ``positions`` (rows, or every byte address) of ``space``."""

    space: Space
    write: bool
    positions: np.ndarray


@dataclass(frozen=True)
class _Conflict:
    """Positions (a mask) where an earlier access of ``module`` (sequence numbers ``seqs``)
    that ``did`` (``reads`` or ``writes``) is not ordered before the new one."""

    mask: np.ndarray
    module: np.ndarray
    seqs: np.ndarray
    did: str


class _Shadow:
    """Last writer and latest reader per module, for each position of one space. Sequence
    numbers start at 1; 0 means "none"."""

    def __init__(self, size: int) -> None:
        self.writer_module = np.zeros(size, dtype=np.int8)
        self.writer_seq = np.zeros(size, dtype=np.int32)
        self.reader_seq = np.zeros((_MODULES, size), dtype=np.int32)

    def reserve(self, size: int) -> None:
        """Make room for ``size`` positions, at least doubling (amortised O(1) per page)."""
        old = len(self.writer_seq)
        if size <= old:
            return
        fresh = _Shadow(max(size, 2 * old) - old)
        self.writer_module = np.concatenate([self.writer_module, fresh.writer_module])
        self.writer_seq = np.concatenate([self.writer_seq, fresh.writer_seq])
        self.reader_seq = np.concatenate([self.reader_seq, fresh.reader_seq], axis=1)

    def conflict(
        self, module: int, clock: np.ndarray, positions: np.ndarray, write: bool
    ) -> _Conflict | None:
        """The first kind of unordered conflict a new access would have, or None."""
        writer = self.writer_module[positions]
        seqs = self.writer_seq[positions]
        unordered = (seqs > 0) & (writer != module) & (seqs > clock[writer])
        if unordered.any():
            return _Conflict(unordered, writer, seqs, "writes")
        if write:
            for other in range(_MODULES):
                if other != module:
                    seqs = self.reader_seq[other, positions]
                    unordered = seqs > clock[other]
                    if unordered.any():
                        return _Conflict(unordered, np.full_like(writer, other), seqs, "reads")
        return None

    def record(self, module: int, seq: int, positions: np.ndarray, write: bool) -> None:
        if write:
            self.writer_module[positions] = module
            self.writer_seq[positions] = seq
        else:
            self.reader_seq[module, positions] = seq


class RaceDetector:
    """Checks and records every shared access of a run (see the module docstring)."""

    def __init__(self, cfg: AccelConfig, instructions: Sequence[Instruction]) -> None:
        self._instructions = instructions
        self._module = [stage_of(insn) - 1 for insn in instructions]
        self._program_index: list[list[int]] = [[] for _ in range(_MODULES)]
        for index, module in enumerate(self._module):
            self._program_index[module].append(index)
        self._sram = {
            Space.INP: _Shadow(cfg.inp_buff_depth),
            Space.WGT: _Shadow(cfg.wgt_buff_depth),
            Space.OUT: _Shadow(cfg.out_buff_depth),
        }
        self._granule = math.gcd(*(cfg.elem_bytes(mem) for mem in MemId))
        self._dram = _Shadow(0)
        self._page_slot: dict[int, int] = {}

    def access(self, clock: np.ndarray, index: int, accesses: Sequence[Access]) -> None:
        """Instruction ``index``, whose module's vector clock is ``clock``, makes ``accesses``:
        raise RaceError if one is unordered with a conflicting earlier access of another
        module, else remember them. Nothing is recorded when a race is raised."""
        me = self._module[index]
        mapped = [(a, self._table(a.space), self._positions(a)) for a in accesses]
        for access, table, positions in mapped:
            found = table.conflict(me, clock, positions, access.write)
            if found is not None:
                self._raise(access, positions, found, index)
        seq = int(clock[me])
        for access, table, positions in mapped:
            table.record(me, seq, positions, access.write)

    def _table(self, space: Space) -> _Shadow:
        return self._dram if space is Space.DRAM else self._sram[space]

    def _positions(self, access: Access) -> np.ndarray:
        """Table positions: SRAM rows as they are; DRAM bytes as granules, through pages."""
        if access.space is not Space.DRAM:
            return access.positions
        granules = access.positions[:: self._granule] // self._granule
        pages = granules >> _PAGE_BITS
        offsets = granules & (_PAGE - 1)
        page = int(pages[0]) if pages.size else -1
        if page in self._page_slot and (pages == page).all():  # one page, already mapped
            return self._page_slot[page] * _PAGE + offsets
        unique, inverse = np.unique(pages, return_inverse=True)
        new = [int(p) for p in unique if int(p) not in self._page_slot]
        if new:
            first = len(self._page_slot)
            self._page_slot.update({p: first + i for i, p in enumerate(new)})
            self._dram.reserve(len(self._page_slot) * _PAGE)
        slots = np.array([self._page_slot[int(p)] for p in unique], dtype=np.int64)
        return slots[inverse] * _PAGE + offsets

    def _raise(self, access: Access, positions: np.ndarray, found: _Conflict, index: int) -> None:
        first = int(np.argmax(found.mask))
        module, seq = int(found.module[first]), int(found.seqs[first])
        same = found.mask & (found.module == module) & (found.seqs == seq)
        if access.space is Space.DRAM:
            granules = access.positions[:: self._granule][same]
            rows = (granules[:, None] + np.arange(self._granule)).reshape(-1)
        else:
            rows = access.positions[same]
        other = self._program_index[module][seq - 1]
        raise RaceError(
            access.space.value,
            np.unique(rows).tolist(),
            (other, self._instructions[other], found.did),
            (index, self._instructions[index], "writes" if access.write else "reads"),
        )
