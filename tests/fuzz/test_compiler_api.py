"""Misuses of the compiler API: random schedules of a matrix product, each primitive's
arguments drawn from good values (the stage's current axes, valid factors, scopes and tags) and
hostile ones (wrong types, out-of-range numbers, another stage's axes, strings), then lowered
and sometimes built and run. Every call either works or raises a CompileError/ScheduleError; a
schedule that builds must compute what numpy computes."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from compiler import build, create_schedule, lower, te

HOSTILE = (None, -1, 0, 2.5, "x", "", True, (), [], {}, object(), 10**30, np.int64(3), "i")
SCOPES = ("global", "shared", "local", "local.inp_buffer", "bogus")
TAGS = ("blockIdx.x", "threadIdx.y", "vthread", "cthread", "blockIdx.w", "gpu")
PRAGMAS = ("unroll", "alu", "bogus", "")
#: One in this many schedules that lower is built with LLVM and run against numpy.
_BUILD_EVERY = 8


def _declare(rng: random.Random) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    n, m, k = rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 9)
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis(k, name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def _value(rng: random.Random, good: list[Any]) -> Any:
    return rng.choice(good) if good and rng.random() < 0.75 else rng.choice(HOSTILE)


def _primitive(rng: random.Random, s: Any, C: te.Tensor, A: te.Tensor) -> Callable[[], Any]:
    """One schedule primitive with random arguments, as a call to make."""
    stage = s[C]
    axes = list(stage.leaf_iter_vars)
    pick = lambda: _value(rng, axes)  # noqa: E731
    number = lambda: _value(rng, [1, 2, 3, 4, 7])  # noqa: E731
    calls = [
        lambda: stage.split(pick(), number()),
        lambda: stage.split(pick(), nparts=number()),
        lambda: stage.fuse(*[pick() for _ in range(rng.randint(0, 3))]),
        lambda: stage.reorder(*rng.sample(axes, len(axes)) if rng.random() < 0.7 else [pick()]),
        lambda: stage.vectorize(pick()),
        lambda: stage.unroll(pick()),
        lambda: stage.parallel(pick()),
        lambda: stage.vthread(pick()),
        lambda: stage.bind(pick(), _value(rng, list(TAGS))),
        lambda: stage.pragma(pick(), _value(rng, list(PRAGMAS))),
        lambda: stage.tensorize(pick(), _value(rng, [])),
        lambda: stage.set_scope(_value(rng, list(SCOPES))),
        lambda: stage.compute_at(_value(rng, [s[C]]), pick()),
        lambda: s.cache_read(_value(rng, [A]), _value(rng, list(SCOPES)), _value(rng, [[C]])),
        lambda: s.cache_write(_value(rng, [C]), _value(rng, list(SCOPES))),
        lambda: s[_value(rng, [C, A])],
        lambda: create_schedule(_value(rng, [C])),
        lambda: te.reduce_axis(_value(rng, [3, (0, 4)])),
        lambda: te.placeholder(_value(rng, [(2, 3), 4]), dtype=_value(rng, ["float32", "int8"])),
        lambda: te.compute(_value(rng, [(2, 2)]), _value(rng, [lambda i, j: i + j])),
        lambda: te.thread_axis(_value(rng, list(TAGS))),
    ]
    return rng.choice(calls)


def test_random_schedules_with_hostile_arguments(budget, tally):
    calls = tally("compiler API: primitives")
    lowered = tally("compiler API: lower / build")
    rng = random.Random(5)
    for number in range(budget.count(80, 1_500)):
        A, B, C = _declare(rng)
        s = create_schedule(C)
        for step in range(rng.randint(1, 5)):
            calls.attempt(f"schedule {number} step {step}", _primitive(rng, s, C, A))
        ok, _ = lowered.attempt(f"schedule {number} lower", lower, s, [A, B, C])
        if not ok or number % _BUILD_EVERY:
            continue
        built, function = lowered.attempt(f"schedule {number} build", build, s, [A, B, C])
        if not built:
            continue
        a = np.random.default_rng(number).random(A.shape, dtype=np.float32)
        b = np.random.default_rng(number + 1).random(B.shape, dtype=np.float32)
        c = np.full(C.shape, np.nan, np.float32)
        ran, _ = lowered.attempt(f"schedule {number} run", function, a, b, c)
        if ran and not np.allclose(c, a @ b, rtol=1e-5, atol=1e-5):
            lowered.disagree(f"schedule {number}", "the built function differs from numpy")
    calls.assert_clean()
    lowered.assert_clean()
    assert calls.typed and calls.accepted, "the primitives were all refused or all accepted"
