"""Measuring one candidate: build it, run it on seeded inputs, check it, time it.

:func:`measure_candidate` is what a measurement worker runs (:mod:`compiler.tune.worker` runs it
in a separate process, so a candidate that crashes or hangs takes only that process down). A CPU
candidate is timed as AutoTVM's ``LocalRunner`` does: ``repeat`` measurements, each the mean
over ``number`` calls, ``number`` raised until one measurement lasts ``min_repeat_ms``; its cost
is the fastest measurement, in seconds. An accelerator candidate runs once on the cycle-level
simulator (``device``: its cycles are deterministic); its cost is the cycle count. Either way
the output is compared with the task's numpy reference first (on one BLAS thread, so that no
BLAS thread is left spinning beside the timed calls): a wrong answer is an error.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from compiler.accel.env import Env
from compiler.build import build
from compiler.errors import CompileError
from compiler.expr import DType
from compiler.tune.errors import TuneError
from compiler.tune.task import Task

__all__ = ["ERRORS", "MeasureOptions", "Result", "measure_candidate"]

#: The kinds of failure a trial records.
ERRORS = ("compile", "runtime", "wrong_answer", "crash", "timeout")


@dataclass(frozen=True)
class MeasureOptions:
    """How candidates are measured (see the module docstring): ``timeout`` seconds per
    candidate (build included), ``threads`` for CPU code, ``device`` (a ``runtime.open_device``
    kind) for accelerator code, ``check`` against the reference; ``prepare(config)`` runs in the
    worker before the candidate is built (set-up or, in tests, a deliberate fault)."""

    number: int = 1
    repeat: int = 3
    min_repeat_ms: float = 20.0
    timeout: float = 20.0
    threads: int = 1
    device: str = "sim"
    check: bool = True
    seed: int = 0
    prepare: Callable[[Mapping[str, Any]], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """TuneError unless ``timeout`` is a finite positive number of seconds, ``number``,
        ``repeat`` and ``threads`` are positive integers and ``min_repeat_ms`` is finite and
        non-negative."""
        timeout, repeat_ms, count = self.timeout, self.min_repeat_ms, "a positive integer"
        checks = (
            ("timeout", timeout, _finite(timeout) and timeout > 0, "a finite positive number"),
            ("number", self.number, _count(self.number), count),
            ("repeat", self.repeat, _count(self.repeat), count),
            ("threads", self.threads, _count(self.threads), count),
            (
                "min_repeat_ms",
                repeat_ms,
                _finite(repeat_ms) and repeat_ms >= 0,
                "a finite number >= 0",
            ),
        )
        for name, value, good, wanted in checks:
            if not good:
                raise TuneError(f"{name} {value!r} is not {wanted}", where="measurement options")


def _finite(value: Any) -> bool:
    """Whether ``value`` is a finite int or float (not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: Any) -> bool:
    """Whether ``value`` is a positive int (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class Result:
    """One trial's outcome: ``costs`` (seconds per call, or cycles) or an ``error`` (one of
    :data:`ERRORS`) with its ``message``; ``seconds`` of wall time the trial took."""

    costs: tuple[float, ...] = ()
    error: str = ""
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def cost(self) -> float:
        """The fastest measurement (``inf`` for an error)."""
        return min(self.costs) if self.ok and self.costs else float("inf")


def random_inputs(task: Task, seed: int) -> list[np.ndarray]:
    """Seeded inputs of ``task``: float normal, int8 over its range, wider ints small."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in task.inputs:
        dtype = DType.of(spec.dtype)
        if dtype.is_float:
            arrays.append(rng.standard_normal(spec.shape).astype(dtype.numpy))
        else:
            bound = 127 if dtype.bits == 8 else 1023
            arrays.append(rng.integers(-bound, bound, spec.shape, endpoint=True, dtype=dtype.numpy))
    return arrays


def _time(call: Callable[[], Any], options: MeasureOptions) -> tuple[float, ...]:
    number = options.number
    costs = []
    while len(costs) < options.repeat:
        start = time.perf_counter()
        for _ in range(number):
            call()
        elapsed = time.perf_counter() - start
        if elapsed * 1e3 < options.min_repeat_ms and not costs:
            number = max(number * 2, int(number * options.min_repeat_ms / max(elapsed * 1e3, 1e-3)))
            continue
        costs.append(elapsed / number)
    return tuple(costs)


def _matches(got: np.ndarray, expected: np.ndarray) -> bool:
    if np.issubdtype(got.dtype, np.floating):
        scale = float(np.max(np.abs(expected), initial=1.0))
        return bool(np.allclose(got, expected, rtol=1e-3, atol=1e-4 * scale))
    return bool(np.array_equal(got, expected))


def measure_candidate(task: Task, config: Mapping[str, Any], options: MeasureOptions) -> Result:
    """Build, check and time ``config`` of ``task`` in this process (errors become results)."""
    started = time.perf_counter()

    def failed(kind: str, message: str) -> Result:
        return Result(error=kind, message=message, seconds=time.perf_counter() - started)

    try:
        if options.prepare is not None:
            options.prepare(config)
        schedule, args = task.declare(config)
        target = "llvm" if task.cfg is None else Env(task.cfg).target
        function = build(schedule, args, target, name=task.template.name)
    except CompileError as err:
        return failed("compile", str(err))
    except Exception:
        return failed("compile", traceback.format_exc(limit=3))
    inputs = random_inputs(task, options.seed)
    out = args[-1]
    output = np.zeros(tuple(out.shape), DType.of(out.dtype).numpy)
    try:
        if task.cfg is None:
            function(*inputs, output, num_threads=options.threads)
        else:
            cycles = function(*inputs, output, device=options.device).cycles
    except Exception:
        return failed("runtime", traceback.format_exc(limit=3))
    if options.check and task.reference is not None:
        # On one BLAS thread: a multi-threaded BLAS leaves its threads spinning for a while
        # after a call, and a candidate timed on several threads right after it would share
        # the cores with them (a 2-thread conv measured no faster than on one thread).
        with threadpool_limits(limits=1):
            expected = task.reference(*inputs, **dict(task.params))
        if not _matches(output, np.asarray(expected)):
            wrong = int(np.sum(output != expected))
            return failed("wrong_answer", f"{wrong} of {output.size} output elements differ")
    if task.cfg is not None:
        costs: tuple[float, ...] = (float(cycles),)
    else:
        costs = _time(lambda: function(*inputs, output, num_threads=options.threads), options)
    return Result(costs=costs, seconds=time.perf_counter() - started)
