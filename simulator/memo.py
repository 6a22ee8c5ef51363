"""Process-wide memos of pure computations' results, bounded in bytes.

The simulators keep in them what they work out from one instruction alone: the functional
simulator a GEMM or ALU instruction's plan (the checks it passed and the rows of every step,
from the instruction and its micro-ops) and a program's validation and routing (once per tuple
of instructions), the timing model a LOAD's or STORE's run on its own (from the transfer's
shape). A later run of the same instruction, in the same program run again
or in another program (a network's layers share kernels and transfer shapes), starts from it.
Values must not change once stored; the least recently used go first when the bytes held pass
the budget. Safe to share between threads. :func:`clear_memos` empties them all (a first run in
a fresh process, for a benchmark).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Memo", "clear_memos"]

V = TypeVar("V")
_MEMOS: weakref.WeakSet[Memo] = weakref.WeakSet()


class Memo(Generic[V]):
    """Values by key, at most ``budget`` bytes of them (as their ``put`` said)."""

    def __init__(self, budget: int) -> None:
        if budget < 0:
            raise ValueError(f"a memo's budget is a number of bytes >= 0, not {budget}")
        self.budget = budget
        self._values: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        _MEMOS.add(self)

    def get(self, key: Hashable) -> V | None:
        """The value stored under ``key`` (now the most recently used), or None."""
        with self._lock:
            entry = self._values.get(key)
            if entry is None:
                return None
            self._values.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, value: V, nbytes: int) -> None:
        """Store ``value`` (``nbytes`` large) under ``key``, dropping the least recently used
        values beyond the budget; a value larger than the whole budget is not stored."""
        if nbytes > self.budget:
            return
        with self._lock:
            previous = self._values.pop(key, None)
            if previous is not None:
                self._held -= previous[1]
            self._values[key] = (value, nbytes)
            self._held += nbytes
            while self._held > self.budget:
                _, (_, dropped) = self._values.popitem(last=False)
                self._held -= dropped

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()
            self._held = 0

    @property
    def held(self) -> int:
        """The bytes of the values stored."""
        return self._held

    def __len__(self) -> int:
        return len(self._values)


def clear_memos() -> None:
    """Empty every memo of the process."""
    for memo in list(_MEMOS):
        memo.clear()
