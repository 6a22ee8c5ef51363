"""Queues and counters of the cycle-level model: buffered FIFOs (the command queues and fetch's
beat buffer) and the dependency-token counters.

:class:`BufferedFifo` mirrors Amaranth's ``SyncFIFOBuffered`` as the RTL instantiates it: an
inner memory of ``depth - 1`` entries behind an output register, so an entry written into an
empty queue is readable two cycles later, and the writer sees the queue full while the inner
memory is (a one-deep queue is a single register: readable the next cycle, writable again the
cycle after it is read). Writes and reads are recorded during a cycle and applied by
:meth:`BufferedFifo.end_cycle`, so every unit sees the state at the start of the cycle.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar, cast

from isa import Token
from simulator.ports import NEVER

__all__ = ["BufferedFifo", "TokenCounters"]

Item = TypeVar("Item")
_POSITION = {token: position for position, token in enumerate(Token)}


class BufferedFifo(Generic[Item]):
    """A ``SyncFIFOBuffered`` of ``depth`` entries (module docstring)."""

    __slots__ = ("_read", "_write", "depth", "inner", "out")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.inner: deque[Item] = deque()
        self.out: Item | None = None
        self._write: Item | None = None
        self._read = False

    def w_rdy(self) -> bool:
        """The writer may write this cycle."""
        if self.depth == 1:
            return self.out is None
        return len(self.inner) != self.depth - 1

    def room(self) -> int:
        """Writes it takes on consecutive cycles from now while nothing is read."""
        if self.depth == 1:
            return int(self.out is None)
        return self.depth - 1 - len(self.inner)

    def write_many(self, item: Item, count: int) -> None:
        """``count`` writes of ``item`` on consecutive cycles while the output register is
        full and nothing is read (at most :meth:`room`), applied at once."""
        assert self.out is not None and count <= self.room()
        self.inner.extend([item] * count)

    def r_rdy(self) -> bool:
        """An entry is readable this cycle (``out``)."""
        return self.out is not None

    def write(self, item: Item) -> None:
        """Write ``item`` this cycle (the caller checked :meth:`w_rdy`)."""
        self._write = item

    def read(self) -> Item:
        """Take the readable entry this cycle."""
        self._read = True
        return cast(Item, self.out)

    def quiet(self, t: int) -> int:
        """0 if an entry moves to the output register this cycle, else NEVER (waiting)."""
        return 0 if self.inner and self.out is None else NEVER

    def end_cycle(self) -> None:
        if self._write is None and not self._read and (self.out is not None or not self.inner):
            return  # nothing written, read or moving
        if self.depth == 1:
            if self._read:
                self.out = None
            if self._write is not None:
                self.out = self._write
        else:
            moved = (
                self.inner.popleft() if self.inner and (self.out is None or self._read) else None
            )
            if self._read:
                self.out = None
            if moved is not None:
                self.out = moved
            if self._write is not None:
                self.inner.append(self._write)
        self._write = None
        self._read = False


class TokenCounters:
    """The four dependency-token counters, by position in :class:`isa.Token`; pops and pushes
    of a cycle apply at its end."""

    __slots__ = ("_delta", "count")

    def __init__(self) -> None:
        self.count = [0] * len(Token)
        self._delta: list[tuple[int, int]] = []

    @staticmethod
    def indices(tokens: Iterable[Token]) -> tuple[int, ...]:
        """The positions of ``tokens`` (what the other methods take)."""
        return tuple(_POSITION[t] for t in tokens)

    def available(self, tokens: tuple[int, ...]) -> bool:
        """Every counter in ``tokens`` is non-zero this cycle."""
        count = self.count
        return all(count[token] for token in tokens)

    def pop(self, tokens: tuple[int, ...]) -> None:
        for token in tokens:
            self._delta.append((token, -1))

    def push(self, tokens: tuple[int, ...]) -> None:
        for token in tokens:
            self._delta.append((token, 1))

    def end_cycle(self) -> None:
        if self._delta:
            for token, step in self._delta:
                self.count[token] += step
            self._delta.clear()
