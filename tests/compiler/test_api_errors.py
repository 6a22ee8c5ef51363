"""Misuses of the ``te`` and schedule APIs raise CompileError / ScheduleError naming the culprit.

Each case used to end in a raw TypeError, ValueError or AttributeError (or was accepted
silently); the error must now come from the call that made the mistake and say what was wrong
and where.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from compiler import te
from compiler.errors import CompileError, ScheduleError
from compiler.loop_ir import Scope
from compiler.schedule import Schedule, create_schedule


def _a() -> te.Tensor:
    return te.placeholder((4, 8), name="A")


# ------------------------------------------------------------------------------------- te
@pytest.mark.parametrize(
    ("call", "culprits"),
    [
        (lambda: te.placeholder(None, name="P"), ["'P'", "None", "shape"]),
        (lambda: te.placeholder((4, "a"), name="P"), ["'P'", "axis '1'", "'a'"]),
        (lambda: te.placeholder((4, 2.5), name="P"), ["'P'", "axis '1'", "2.5"]),
        (lambda: te.placeholder((True,), name="P"), ["'P'", "axis '0'", "True"]),
        (lambda: te.placeholder("ab", name="P"), ["'P'", "'ab'", "shape"]),
        (lambda: te.placeholder((4,), dtype="float16", name="P"), ["float16"]),
        (lambda: te.reduce_axis("a", name="r"), ["axis 'r'", "reduce_axis", "'a'"]),
        (lambda: te.reduce_axis((0, "a"), name="r"), ["axis 'r'", "reduce_axis", "'a'"]),
        (lambda: te.reduce_axis(2.5, name="r"), ["axis 'r'", "reduce_axis", "2.5"]),
        (lambda: te.reduce_axis((1, 2, 3), name="r"), ["axis 'r'", "reduce_axis", "(1, 2, 3)"]),
        (lambda: te.reduce_axis(None, name="r"), ["axis 'r'", "reduce_axis", "None"]),
        (
            lambda: te.compute((4,), lambda i, j: _a()[i, 0], name="C"),
            ["'C'", "compute", "takes 2", "has 1 dimension"],
        ),
        (
            lambda: te.compute((4, 8), lambda i: _a()[i, 0], name="C"),
            ["'C'", "compute", "takes 1", "has 2 dimensions"],
        ),
        (
            lambda: te.compute((4,), lambda i, j, *rest: _a()[i, j], name="C"),
            ["'C'", "at least 2", "has 1 dimension"],
        ),
        (lambda: te.compute((4,), 3, name="C"), ["'C'", "compute", "int 3"]),
        (lambda: te.compute(None, lambda i: i, name="C"), ["'C'", "None", "shape"]),
    ],
    ids=[
        "placeholder-none",
        "placeholder-str-extent",
        "placeholder-float-extent",
        "placeholder-bool-extent",
        "placeholder-str-shape",
        "placeholder-float16",
        "reduce-axis-str",
        "reduce-axis-str-end",
        "reduce-axis-float",
        "reduce-axis-triple",
        "reduce-axis-none",
        "compute-too-many-args",
        "compute-too-few-args",
        "compute-too-many-before-star",
        "compute-not-callable",
        "compute-none-shape",
    ],
)
def test_te_misuse_is_a_compile_error(call: Callable[[], Any], culprits: list[str]) -> None:
    with pytest.raises(CompileError) as info:
        call()
    for culprit in culprits:
        assert culprit in str(info.value)


@pytest.mark.parametrize(
    "fcompute",
    [
        lambda i, j: 1.0,
        lambda *i: 1.0,
        lambda i, *rest: 1.0,
        lambda i, j, k=0: 1.0,
    ],
    ids=["exact", "star", "one-and-star", "default"],
)
def test_compute_accepts_matching_arities(fcompute: Callable[..., Any]) -> None:
    assert te.compute((4, 8), fcompute, name="C").shape == (4, 8)


def test_valid_shapes_and_domains_still_work() -> None:
    assert te.placeholder(4).shape == (4,)
    assert te.placeholder([2, 3]).shape == (2, 3)
    axis = te.reduce_axis((2, 5), name="k")
    assert (axis.begin, axis.extent) == (2, 3)
    assert te.reduce_axis(7).extent == 7


# ------------------------------------------------------------------------------- schedule
def _schedule() -> tuple[te.Tensor, te.Tensor, Schedule, Any]:
    A = _a()
    C = te.compute((4, 8), lambda i, j: A[i, j] + 1.0, name="C")
    s = create_schedule(C)
    return A, C, s, s[C].op.axis[0]


_SCOPES = "'global', 'shared', 'local', 'local.inp_buffer'"

SCHEDULE_MISUSES: list[tuple[str, Callable[..., Any], list[str]]] = [
    ("split-int-axis", lambda A, C, s, ax: s[C].split(3, 2), ["'C'", "split", "int 3", "axis"]),
    (
        "split-str-factor",
        lambda A, C, s, ax: s[C].split(ax, "2"),
        ["'C'", "axis 'i'", "factor", "'2'"],
    ),
    (
        "split-bool-nparts",
        lambda A, C, s, ax: s[C].split(ax, nparts=True),
        ["'C'", "axis 'i'", "nparts", "True"],
    ),
    (
        "bind-unknown-tag",
        lambda A, C, s, ax: s[C].bind(ax, "blockIdx.w"),
        ["'C'", "axis 'i'", "'blockIdx.w'", "blockIdx.x"],
    ),
    ("bind-int-axis", lambda A, C, s, ax: s[C].bind(3, "blockIdx.x"), ["'C'", "bind", "3"]),
    (
        "set-scope",
        lambda A, C, s, ax: s[C].set_scope("bogus"),
        ["'C'", "set_scope", "'bogus'", _SCOPES],
    ),
    (
        "cache-read-scope",
        lambda A, C, s, ax: s.cache_read(A, "bogus", [C]),
        ["'A'", "cache_read", "'bogus'", _SCOPES],
    ),
    (
        "cache-read-readers",
        lambda A, C, s, ax: s.cache_read(A, "local", C),
        ["'A'", "cache_read", "readers"],
    ),
    (
        "cache-read-reader",
        lambda A, C, s, ax: s.cache_read(A, "local", ["C"]),
        ["'C'", "cache_read", "reader", "str"],
    ),
    (
        "cache-read-tensor",
        lambda A, C, s, ax: s.cache_read("A", "local", [C]),
        ["'A'", "cache_read", "str"],
    ),
    (
        "cache-write-scope",
        lambda A, C, s, ax: s.cache_write(C, "bogus"),
        ["'C'", "cache_write", "'bogus'", _SCOPES],
    ),
    (
        "cache-write-tensor",
        lambda A, C, s, ax: s.cache_write(3, "local"),
        ["'3'", "cache_write", "int 3"],
    ),
    (
        "tensorize-not-intrin",
        lambda A, C, s, ax: s[C].tensorize(ax, "x"),
        ["'C'", "axis 'i'", "TensorIntrin", "str 'x'"],
    ),
    ("create-schedule-int", lambda A, C, s, ax: create_schedule(3), ["'3'", "int 3"]),
    ("create-schedule-list", lambda A, C, s, ax: create_schedule([C, 3]), ["'3'", "int 3"]),
    ("getitem-str", lambda A, C, s, ax: s["C"], ["'C'", "str 'C'", "tensor"]),
    (
        "compute-at-int-parent",
        lambda A, C, s, ax: s[C].compute_at(3, ax),
        ["'C'", "compute_at", "parent", "int 3"],
    ),
    (
        "compute-at-int-axis",
        lambda A, C, s, ax: s[C].compute_at(s[C], 3),
        ["'C'", "compute_at", "int 3", "not an axis"],
    ),
    ("reorder-int", lambda A, C, s, ax: s[C].reorder(3), ["'C'", "reorder", "3", "not an axis"]),
    ("fuse-ints", lambda A, C, s, ax: s[C].fuse(3, 4), ["'C'", "fuse", "int 3", "not an axis"]),
    ("fuse-one-int", lambda A, C, s, ax: s[C].fuse(3), ["'C'", "fuse", "int 3", "not an axis"]),
    ("fuse-none", lambda A, C, s, ax: s[C].fuse(), ["'C'", "fuse", "at least one axis"]),
    (
        "pragma-int-name",
        lambda A, C, s, ax: s[C].pragma(ax, 3),
        ["'C'", "axis 'i'", "pragma", "int 3"],
    ),
    (
        "pragma-empty-name",
        lambda A, C, s, ax: s[C].pragma(ax, ""),
        ["'C'", "axis 'i'", "pragma", "non-empty str"],
    ),
    ("pragma-int-axis", lambda A, C, s, ax: s[C].pragma(3, "alu"), ["'C'", "pragma", "3"]),
    (
        "vectorize-int",
        lambda A, C, s, ax: s[C].vectorize(3),
        ["'C'", "vectorized", "3", "not an axis"],
    ),
]


@pytest.mark.parametrize(
    ("call", "culprits"),
    [(call, culprits) for _, call, culprits in SCHEDULE_MISUSES],
    ids=[name for name, _, _ in SCHEDULE_MISUSES],
)
def test_schedule_misuse_is_a_schedule_error(call: Callable[..., Any], culprits: list[str]) -> None:
    A, C, s, ax = _schedule()
    steps = s.steps
    with pytest.raises(ScheduleError) as info:
        call(A, C, s, ax)
    for culprit in culprits:
        assert culprit in str(info.value)
    assert s.steps == steps  # the failed call appended nothing


@pytest.mark.parametrize("name", ["dma_copy", "alu", "unroll_explicit", "anything.custom"])
def test_pragma_names_stay_free_form(name: str) -> None:
    _, C, s, ax = _schedule()
    s[C].pragma(ax, name)
    assert s.state.stage(C.op).pragmas[-1].name == name


def test_valid_schedule_calls_still_work() -> None:
    A, C, s, ax = _schedule()
    AL = s.cache_read(A, "local", [C])
    s[AL].set_scope("local")
    outer, inner = s[C].split(ax, 2)
    assert s[C].fuse(inner) is inner
    s[AL].compute_at(s[C], outer)
    s[C].set_scope(Scope.GLOBAL)  # a Scope itself is taken too
    s[C].bind(outer, te.thread_axis("cthread"))
    assert [type(step).__name__ for step in s.steps] == [
        "CacheRead",
        "SetScope",
        "Split",
        "ComputeAt",
        "SetScope",
        "Annotate",
    ]


def test_compute_at_takes_a_tensor_as_parent() -> None:
    A, C, s, ax = _schedule()
    AL = s.cache_read(A, "local", [C])
    s[AL].compute_at(C, ax)
    assert s.state.stage(AL.op).attach.parent is C.op
