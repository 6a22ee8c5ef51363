"""The race detector's quick check against its element-wise comparison.

:meth:`simulator.races._Shadow.ordered` decides from each module's latest access anywhere in
the table, or else at the new access's positions (one maximum per table row), whether the
access is ordered after every earlier access it conflicts with;
:meth:`~simulator.races._Shadow.conflict` compares the table with the clock position by
position (it describes a race). They must agree on every table, clock and kind of positions (a
slice, a strided grid, an index array with repeats), and recording an access must leave
exactly the entries the module docstring describes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.races import _MODULES, _bound, _Grid, _Shadow

_SIZE = 48


@st.composite
def _positions(draw: st.DrawFn) -> slice | _Grid | np.ndarray:
    kind = draw(st.sampled_from(["slice", "grid", "array"]))
    if kind == "slice":
        start = draw(st.integers(0, _SIZE))
        return slice(start, draw(st.integers(start, _SIZE)))
    if kind == "grid":
        rows = draw(st.integers(1, 4))
        length = draw(st.integers(1, 5))
        stride = draw(st.integers(length, 10))
        start = draw(st.integers(0, _SIZE - (rows - 1) * stride - length))
        return _Grid(start, rows, length, stride)
    rows = draw(st.lists(st.integers(0, _SIZE - 1), max_size=12))
    return np.array(rows, dtype=np.int64)


def _shadow(seqs: list[int], extra: list[int]) -> _Shadow:
    """A table holding ``seqs``; each row's greatest number ever recorded is its greatest
    entry plus ``extra`` (entries recorded earlier may have been overwritten since)."""
    shadow = _Shadow(_SIZE)
    shadow.seqs[...] = np.array(seqs, dtype=np.int32).reshape(2 * _MODULES, _SIZE)
    shadow.top = [int(top) + more for top, more in zip(shadow.seqs.max(axis=1), extra, strict=True)]
    return shadow


_TABLES = st.lists(st.integers(0, 6), min_size=2 * _MODULES * _SIZE, max_size=2 * _MODULES * _SIZE)
_CLOCKS = st.lists(st.integers(0, 6), min_size=_MODULES, max_size=_MODULES)
_EXTRA = st.lists(st.integers(0, 3), min_size=2 * _MODULES, max_size=2 * _MODULES)


@settings(max_examples=200, deadline=None)
@given(table=_TABLES, extra=_EXTRA, clock=_CLOCKS, positions=_positions(), write=st.booleans())
def test_the_quick_check_agrees_with_the_element_wise_comparison(
    table, extra, clock, positions, write
):
    shadow = _shadow(table, extra)
    found = shadow.conflict(_bound(np.array(clock, dtype=np.int64)), positions, write)
    assert shadow.ordered(clock, positions, write) == (found is None)


@settings(max_examples=200, deadline=None)
@given(
    table=_TABLES,
    extra=_EXTRA,
    positions=_positions(),
    write=st.booleans(),
    module=st.integers(0, _MODULES - 1),
    seq=st.integers(1, 9),
)
def test_recording_an_access_sets_exactly_its_entries(table, extra, positions, write, module, seq):
    shadow = _shadow(table, extra)
    top = list(shadow.top)
    expected = shadow.seqs.copy()
    if isinstance(positions, slice):
        columns = np.arange(_SIZE)[positions]
    elif isinstance(positions, _Grid):
        firsts = positions.start + positions.stride * np.arange(positions.rows)
        columns = (firsts[:, None] + np.arange(positions.length)).reshape(-1)
    else:
        columns = positions
    if write:  # the only last writer
        expected[:_MODULES, columns] = 0
        expected[module, columns] = seq
    else:  # the module's latest read
        expected[_MODULES + module, columns] = seq
    row = module if write else _MODULES + module
    top[row] = max(top[row], seq)
    shadow.record(module, seq, positions, write)
    np.testing.assert_array_equal(shadow.seqs, expected)
    assert shadow.top == top
