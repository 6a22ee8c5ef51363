"""Output buffers with guard regions: a write past either end of an output, or an element the
code under test never writes, is caught after each run.

``GuardedArray(shape, dtype)`` allocates the array inside a larger one; the elements before and
after it (the guards) and the array itself are filled with a poison byte (:func:`poison_byte`:
NaN for floats, so an accumulation into an uninitialised output stays NaN). Pass
``.array`` to the code under test as its output, then call :meth:`GuardedArray.checked`: it
fails if a guard changed and returns the array (whose unwritten elements still hold the poison,
which a comparison with a reference then reports).
"""

from __future__ import annotations

import numpy as np

__all__ = ["GuardedArray", "guarded_like", "poison_byte"]


def poison_byte(dtype: np.dtype | str) -> int:
    """The byte every guard and not-yet-written element holds: 0xFF for floats (all-ones is a
    NaN), 0xA5 for integers (no small value: int8 -91, int32 -1515870811)."""
    return 0xFF if np.dtype(dtype).kind in "fc" else 0xA5


class GuardedArray:
    """A C-contiguous array of ``shape`` and ``dtype`` with ``guard`` poisoned elements on
    each side (see the module docstring)."""

    def __init__(self, shape: tuple[int, ...] | int, dtype: np.dtype | str, guard: int = 64):
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.guard = guard
        size = int(np.prod(self.shape, dtype=np.int64))
        self._storage = np.empty(size + 2 * guard, dtype)
        self.poison = poison_byte(dtype)
        self._storage.view(np.uint8)[:] = self.poison
        self.array = self._storage[guard : guard + size].reshape(self.shape)

    def checked(self) -> np.ndarray:
        """The array, after asserting that neither guard region changed."""
        raw = self._storage.view(np.uint8)
        edge = self.guard * self._storage.itemsize
        for name, region in (("before", raw[:edge]), ("after", raw[len(raw) - edge :])):
            changed = np.flatnonzero(region != self.poison)
            assert not changed.size, (
                f"the guard region {name} the output was written (bytes {changed[:8].tolist()}"
                f" of {edge}): a write past the end of the array"
            )
        return self.array


def guarded_like(array: np.ndarray, guard: int = 64) -> GuardedArray:
    """A guarded, poisoned output of ``array``'s shape and dtype."""
    return GuardedArray(array.shape, array.dtype, guard)
