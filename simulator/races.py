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
granules and a granule is touched by an access exactly when one of its bytes is. The DRAM table
covers all of DRAM and starts zeroed (the operating system maps its memory on first touch, so
only the parts of DRAM that transfers reach take room); a transfer's granules are a slice or a
strided grid of it, read and written through views.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, TypeAlias

import numpy as np

from isa import AccelConfig, Instruction, MemId, Stage
from simulator.errors import RaceError, SimulationError

__all__ = ["Access", "DramSpan", "RaceDetector", "Space"]

_MODULES = len(Stage)


class Space(Enum):
    """Where an access lands: a shared SRAM (rows) or DRAM (bytes)."""

    INP = "INP"
    WGT = "WGT"
    OUT = "OUT"
    DRAM = "DRAM"


class DramSpan(NamedTuple):
    """The DRAM granules of a 2-D transfer: ``rows`` runs of ``length`` granules, each
    ``stride`` granules after the one before, from granule ``first``. (Named tuples, this and
    the classes below: a run makes one or more per instruction.)"""

    first: int
    rows: int
    length: int
    stride: int

    @property
    def size(self) -> int:
        return self.rows * self.length

    @property
    def last(self) -> int:
        """The highest granule (rows start in order and are equally long)."""
        return self.first + (self.rows - 1) * self.stride + self.length - 1

    def granules(self) -> np.ndarray:
        """Every granule, row by row."""
        firsts = self.first + np.arange(self.rows, dtype=np.int64) * self.stride
        return (firsts[:, None] + np.arange(self.length, dtype=np.int64)).reshape(-1)


class _Grid(NamedTuple):
    """Table positions of a strided run: ``rows`` runs of ``length``, ``stride`` apart, from
    ``start`` (read and written through a strided view, row by row)."""

    start: int
    rows: int
    length: int
    stride: int


#: Positions of one space: an index array, or a slice for a run of consecutive ones, or a grid
#: of equally spaced runs (the table is then read and written through views, without gathering).
Positions: TypeAlias = np.ndarray | slice | _Grid


class Access(NamedTuple):
    """An instruction reads or writes ``positions`` of ``space``: SRAM rows, or the DRAM
    granules of a :class:`DramSpan` (:meth:`RaceDetector.dram_granules`). ``order``, for SRAM
    rows, lists them (repeats allowed) in the order the instruction reaches them: a race is
    then reported at the first row reached that races (None: the first of ``positions``)."""

    space: Space
    write: bool
    positions: np.ndarray | slice | DramSpan
    order: np.ndarray | None = None


def _at(table: np.ndarray, positions: Positions) -> np.ndarray:
    """``table``'s entries at ``positions`` along its last axis: a view for a slice or a grid
    (with the grid's rows and runs as two axes), a gathered copy for an index array."""
    if isinstance(positions, slice):
        return table[..., positions]
    if isinstance(positions, _Grid):  # ``table`` is contiguous: rows of the shadow table
        *lead, item = table.strides
        shape = (*table.shape[:-1], positions.rows, positions.length)
        strides = (*lead, positions.stride * item, item)
        # the ndarray constructor makes the view several times faster than ``as_strided``
        return np.ndarray(shape, table.dtype, table, positions.start * item, strides)
    return table.take(positions, axis=-1)


def _latest(table: np.ndarray, positions: Positions) -> list[int]:
    """Per row of ``table``, its greatest entry at ``positions`` (0 when there are none)."""
    return _at(table, positions).reshape(len(table), -1).max(axis=1, initial=0).tolist()


@dataclass(frozen=True)
class _Conflict:
    """Positions (a mask) where an earlier access of ``module`` (sequence numbers ``seqs``)
    that ``did`` (``reads`` or ``writes``) is not ordered before the new one."""

    mask: np.ndarray
    module: np.ndarray
    seqs: np.ndarray
    did: str


class _Shadow:
    """The earlier accesses to remember, for each position of one space, as sequence numbers
    (from 1; 0 means "none") in one table: row ``m`` holds the last write if module ``m`` made
    it (so only the last writer's row is non-zero), row ``_MODULES + m`` module ``m``'s latest
    read.

    A module's own earlier accesses are ordered before its new one (its clock entry is the new
    access's sequence number) and every clock entry is at least 0, so an entry is unordered
    with the new access exactly when it exceeds the new access's clock entry for its module.
    Each row's greatest entry at the new access's positions, compared with the clock, thus
    checks every position at once (:meth:`ordered`); only a race compares them one by one
    (:meth:`conflict`, with the clock written twice: :func:`_bound`)."""

    def __init__(self, size: int) -> None:
        self.seqs = np.zeros((2 * _MODULES, size), dtype=np.int32)
        #: per row, the greatest sequence number ever recorded in it (at any position)
        self.top = [0] * (2 * _MODULES)

    def ordered(self, clock: Sequence[int], positions: Positions, write: bool) -> bool:
        """Whether a new access whose module's vector clock is ``clock`` is ordered after
        every earlier access at ``positions`` it conflicts with (writes; for a write, reads
        too): each module's latest such access is at most the clock's entry for it. When
        every module's latest access anywhere is, the table itself is not read."""
        rows = 2 * _MODULES if write else _MODULES
        top = self.top
        if all(top[row] <= clock[row % _MODULES] for row in range(rows)):
            return True
        latest = _latest(self.seqs[:rows], positions)
        return all(seq <= clock[row % _MODULES] for row, seq in enumerate(latest))

    def conflict(self, bound: np.ndarray, positions: Positions, write: bool) -> _Conflict | None:
        """The first kind of unordered conflict a new access (``bound``: its clock, written
        twice, as a column) would have, or None. A read conflicts with writes only."""
        rows = 2 * _MODULES if write else _MODULES
        seqs = _at(self.seqs[:rows], positions)
        unordered = (seqs > bound[:rows].reshape(rows, *([1] * (seqs.ndim - 1)))).reshape(rows, -1)
        if not np.count_nonzero(unordered):
            return None
        seqs = seqs.reshape(rows, -1)
        writes = unordered[:_MODULES]
        if writes.any():
            writers = seqs[:_MODULES]
            mask, module = np.asarray(writes.any(axis=0)), writers.argmax(axis=0)
            return _Conflict(mask, module, writers.max(axis=0), "writes")
        reader = int(unordered[_MODULES:].any(axis=1).argmax())
        reads = unordered[_MODULES + reader]
        return _Conflict(reads, np.full(len(reads), reader), seqs[_MODULES + reader], "reads")

    def record(self, module: int, seq: int, positions: Positions, write: bool) -> None:
        """Remember an access of ``module`` with sequence number ``seq`` at ``positions``: a
        write as the only last writer, a read as the module's latest read."""
        row = module if write else _MODULES + module
        self.top[row] = max(self.top[row], seq)
        if isinstance(positions, np.ndarray):
            if write:  # the new writer's sequence number, and no other writer's
                self.seqs[:_MODULES, positions] = 0
            self.seqs[module if write else _MODULES + module, positions] = seq
            return
        if write:
            _at(self.seqs[:_MODULES], positions)[...] = 0
        _at(self.seqs[module if write else _MODULES + module], positions)[...] = seq


def _bound(clock: Sequence[int]) -> np.ndarray:
    """What :meth:`_Shadow.conflict` compares the table with: ``clock`` for the writes' rows
    and again for the reads' rows, as a column of the table's type."""
    return np.array([*clock, *clock], dtype=np.int32)[:, None]


class RaceDetector:
    """Checks and records every shared access of a run (see the module docstring)."""

    def __init__(
        self,
        cfg: AccelConfig,
        instructions: Sequence[Instruction],
        stages: Sequence[Stage],
        dram_bytes: int,
    ) -> None:
        """Detect races among ``instructions``, which run on ``stages`` (one each), in a run
        on ``dram_bytes`` bytes of DRAM."""
        self._instructions = instructions
        self._module = [stage - 1 for stage in stages]
        self._program_index: list[list[int]] = [[] for _ in range(_MODULES)]
        for index, module in enumerate(self._module):
            self._program_index[module].append(index)
        self._sram = {
            Space.INP: _Shadow(cfg.inp_buff_depth),
            Space.WGT: _Shadow(cfg.wgt_buff_depth),
            Space.OUT: _Shadow(cfg.out_buff_depth),
        }
        self.granule = math.gcd(*(cfg.elem_bytes(mem) for mem in MemId))
        try:
            self._dram = _Shadow(dram_bytes // self.granule)
        except MemoryError:
            table = dram_bytes // self.granule * 2 * _MODULES * 4
            raise SimulationError(
                f"race detection needs {table:,} bytes of address space for {dram_bytes:,} bytes "
                "of DRAM and cannot have them: pass a smaller DRAM array or detect_races=False"
            ) from None

    def dram_granules(self, start: int, rows: int, row_bytes: int, stride: int) -> DramSpan:
        """The DRAM granules a 2-D transfer touches: ``rows`` rows of ``row_bytes`` bytes,
        ``stride`` bytes apart, from byte ``start`` (all multiples of :attr:`granule`)."""
        g = self.granule
        return DramSpan(start // g, rows, row_bytes // g, stride // g)

    def access(self, clock: Sequence[int], index: int, accesses: Sequence[Access]) -> None:
        """Instruction ``index``, whose module's vector clock is ``clock``, makes ``accesses``:
        raise RaceError if one is unordered with a conflicting earlier access of another
        module, else remember them. Nothing is recorded when a race is raised."""
        me = self._module[index]
        entries = list(clock)
        mapped = [(a, self._table(a.space), self._positions(a)) for a in accesses]
        for access, table, positions in mapped:
            if not table.ordered(entries, positions, access.write):
                if access.order is not None:
                    positions = access.order
                found = table.conflict(_bound(clock), positions, access.write)
                assert found is not None
                self._raise(access, positions, found, index)
        seq = entries[me]
        for access, table, positions in mapped:
            table.record(me, seq, positions, access.write)

    def _table(self, space: Space) -> _Shadow:
        return self._dram if space is Space.DRAM else self._sram[space]

    def _positions(self, access: Access) -> Positions:
        """Table positions: SRAM rows as they are; a DRAM span's granules as a slice (one run,
        or runs that follow each other) or a grid."""
        span = access.positions
        if not isinstance(span, DramSpan):
            return span
        if span.size == 0:  # a transfer of no rows touches nothing, wherever it would start
            return slice(0, 0)
        if span.rows == 1 or span.stride == span.length:
            return slice(span.first, span.first + span.size)
        return _Grid(span.first, span.rows, span.length, span.stride)

    def _raise(self, access: Access, positions: Positions, found: _Conflict, index: int) -> None:
        first = int(np.argmax(found.mask))
        module, seq = int(found.module[first]), int(found.seqs[first])
        same = found.mask & (found.module == module) & (found.seqs == seq)
        if isinstance(access.positions, DramSpan):
            granules = access.positions.granules()[same] * self.granule
            rows = (granules[:, None] + np.arange(self.granule)).reshape(-1)
        elif isinstance(positions, slice):
            rows = np.arange(positions.start, positions.stop)[same]
        else:
            assert isinstance(positions, np.ndarray), "SRAM rows are a slice or an array"
            rows = positions[same]
        other = self._program_index[module][seq - 1]
        raise RaceError(
            access.space.value,
            np.unique(rows).tolist(),
            (other, self._instructions[other], found.did),
            (index, self._instructions[index], "writes" if access.write else "reads"),
        )
