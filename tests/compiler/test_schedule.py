"""Schedules are data, and invalid ones raise ScheduleError naming the stage and the axis."""

from __future__ import annotations

import dataclasses

import pytest

from compiler import ScheduleError, create_schedule, lower, te
from compiler.schedule import Reorder, Split, apply_step


def _matmul():
    a = te.placeholder((16, 16), name="A")
    b = te.placeholder((16, 16), name="B")
    k = te.reduce_axis(16, "k")
    c = te.compute((16, 16), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c, k


def test_steps_are_frozen_records_that_replay_to_the_same_state():
    _a, _b, c, k = _matmul()
    s = create_schedule(c)
    i, j = c.op.axis
    io, ii = s[c].split(i, 4)
    s[c].reorder(io, k, ii, j)
    assert [type(step) for step in s.steps] == [Split, Reorder]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.steps[0].factor = 8
    fresh = create_schedule(c)
    state = fresh.state
    for step in s.steps:
        state = apply_step(state, step)
    assert state.stage(c.op).leaves == s[c].leaf_iter_vars == (io, k, ii, j)


def _error(action) -> ScheduleError:
    with pytest.raises(ScheduleError) as info:
        action()
    return info.value


def test_unknown_axis():
    a, _b, c, _k = _matmul()
    other = te.compute((16,), lambda n: a[n, 0], name="D")
    s = create_schedule([c, other])
    error = _error(lambda: s[c].split(other.op.axis[0], 4))
    assert (error.stage, error.axis) == ("C", "n")
    assert "not an axis of this stage" in str(error)


def test_axis_used_twice():
    _a, _b, c, _k = _matmul()
    s = create_schedule(c)
    i, j = c.op.axis
    error = _error(lambda: s[c].reorder(i, j, i))
    assert (error.stage, error.axis) == ("C", "i")
    s[c].split(i, 4)
    error = _error(lambda: s[c].split(i, 2))
    assert (error.stage, error.axis) == ("C", "i")
    assert "already split" in str(error)
    s[c].vectorize(j)
    error = _error(lambda: s[c].parallel(j))
    assert (error.stage, error.axis) == ("C", "j")


def test_compute_at_cycle():
    a = te.placeholder((8,), name="A")
    p = te.compute((8,), lambda x: a[x] + 1.0, name="P")
    q = te.compute((8,), lambda y: p[y] * 2.0, name="Q")
    r = te.compute((8,), lambda z: q[z] - 1.0, name="R")
    s = create_schedule(r)
    s[p].compute_at(s[q], q.op.axis[0])
    error = _error(lambda: s[q].compute_at(s[p], p.op.axis[0]))
    assert (error.stage, error.axis) == ("Q", "x")
    assert "cycle" in str(error)


def test_other_invalid_steps():
    a, _b, c, k = _matmul()
    s = create_schedule(c)
    i, j = c.op.axis
    assert "reduction axis cannot be vectorized" in str(_error(lambda: s[c].vectorize(k)))
    assert _error(lambda: s[c].split(i, 0)).axis == "i"
    assert "adjacent" in str(_error(lambda: s[c].fuse(i, k)))
    assert "cannot be inlined" in str(_error(lambda: s[c].compute_inline()))
    assert "placeholder" in str(_error(lambda: s[a]))
    s[c].split(j, 4)
    assert "before any other step" in str(_error(lambda: s.cache_write(c, "local")))


def test_compute_at_needs_every_reader_inside_the_loop():
    a = te.placeholder((8,), name="A")
    p = te.compute((8,), lambda x: a[x] + 1.0, name="P")
    q = te.compute((8,), lambda y: p[y] * 2.0, name="Q")
    r = te.compute((8,), lambda z: p[z] + q[z], name="R")
    s = create_schedule(r)
    s[p].compute_at(s[q], q.op.axis[0])
    error = _error(lambda: lower(s, [a, r]))
    assert (error.stage, error.axis) == ("P", "y")
    assert "every reader must be" in str(error)


def test_an_argument_stage_stays_at_the_root():
    a = te.placeholder((8,), name="A")
    p = te.compute((8,), lambda x: a[x] + 1.0, name="P")
    q = te.compute((8,), lambda y: p[y] * 2.0, name="Q")
    s = create_schedule(q)
    s[p].compute_at(s[q], q.op.axis[0])
    error = _error(lambda: lower(s, [a, p, q]))
    assert (error.stage, error.axis) == ("P", "y")
    s = create_schedule(q)
    s[p].compute_inline()
    assert "not inline" in str(_error(lambda: lower(s, [a, p, q])))
