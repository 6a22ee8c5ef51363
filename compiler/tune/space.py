"""A task's search space: its knob configurations numbered, checked and described.

:class:`Space` numbers every configuration of the task's
:class:`~compiler.templates.knobs.KnobSpace` (mixed radix, the first knob most significant) and,
on demand, declares one: a candidate that the template refuses (:class:`CompileError`: a tile
that does not fit a buffer, a thread count that does not divide) is invalid and never measured;
a valid one has a feature vector of its loop IR (:mod:`compiler.tune.features`). Both answers
are cached. ``restrict`` narrows some knobs to a subset of their choices (a smaller search).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from compiler.errors import CompileError
from compiler.lower import schedule_to_ir
from compiler.passes.simplify import simplify
from compiler.templates.knobs import Knob
from compiler.tune.errors import TuneError
from compiler.tune.features import features
from compiler.tune.task import Task

__all__ = ["Space"]


class Space:
    """The configurations of ``task`` by index (see the module docstring)."""

    def __init__(self, task: Task, restrict: Mapping[str, Sequence[Any]] | None = None) -> None:
        self.task = task
        self.knobs = _restricted(task.space().knobs, restrict or {}, task.name)
        self._radix = [len(k.choices) for k in self.knobs]
        self._valid: dict[int, bool] = {}
        self._features: dict[int, np.ndarray | None] = {}

    def __len__(self) -> int:
        return math.prod(self._radix)

    def config(self, index: int) -> dict[str, Any]:
        """The configuration numbered ``index``."""
        if not 0 <= index < len(self):
            raise TuneError(f"index {index} is outside 0..{len(self) - 1}", task=self.task.name)
        digits = self._digits(index)
        return {k.name: k.choices[d] for k, d in zip(self.knobs, digits, strict=True)}

    def index(self, config: Mapping[str, Any]) -> int:
        """The number of ``config`` (every knob given, each to one of its choices)."""
        index = 0
        for knob, radix in zip(self.knobs, self._radix, strict=True):
            if knob.name not in config or config[knob.name] not in knob.choices:
                raise TuneError(
                    f"knob {knob.name!r} = {config.get(knob.name)!r} is not one of {knob.choices}",
                    task=self.task.name,
                )
            index = index * radix + knob.choices.index(config[knob.name])
        return index

    def contains(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` sets exactly this space's knobs, each to one of its choices (of
        the same type: ``True`` is not the choice ``1``, nor ``1.0``)."""
        return set(config) == {k.name for k in self.knobs} and all(
            any(_same(config[k.name], choice) for choice in k.choices) for k in self.knobs
        )

    def valid(self, index: int) -> bool:
        """Whether the template accepts candidate ``index`` (it declares without error)."""
        if index not in self._valid:
            try:
                self.task.declare(self.config(index))
                self._valid[index] = True
            except CompileError:
                self._valid[index] = False
        return self._valid[index]

    def features(self, index: int) -> np.ndarray | None:
        """The feature vector of candidate ``index``, None when the template refuses it."""
        if index not in self._features:
            self._features[index] = None
            if self.valid(index):
                schedule, args = self.task.declare(self.config(index))
                self._features[index] = features(simplify(schedule_to_ir(schedule, args)))
        return self._features[index]

    def neighbour(self, index: int, rng: random.Random) -> int:
        """``index`` with one knob (of more than one choice) changed at random."""
        movable = [i for i, radix in enumerate(self._radix) if radix > 1]
        if not movable:
            return index
        digits = self._digits(index)
        knob = rng.choice(movable)
        digits[knob] = (digits[knob] + rng.randrange(1, self._radix[knob])) % self._radix[knob]
        return self._number(digits)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self)))

    def _digits(self, index: int) -> list[int]:
        digits = []
        for radix in reversed(self._radix):
            index, digit = divmod(index, radix)
            digits.append(digit)
        return digits[::-1]

    def _number(self, digits: list[int]) -> int:
        index = 0
        for digit, radix in zip(digits, self._radix, strict=True):
            index = index * radix + digit
        return index


def _same(value: Any, choice: Any) -> bool:
    """Whether ``value`` equals ``choice`` and has its type (tuples: item by item)."""
    if isinstance(value, tuple) and isinstance(choice, tuple):
        return len(value) == len(choice) and all(map(_same, value, choice))
    return type(value) is type(choice) and value == choice


def _restricted(
    knobs: tuple[Knob, ...], restrict: Mapping[str, Sequence[Any]], task: str
) -> tuple[Knob, ...]:
    names = {k.name for k in knobs}
    for name, values in restrict.items():
        if name not in names:
            raise TuneError(f"restricts the unknown knob {name!r}", task=task)
        knob = next(k for k in knobs if k.name == name)
        if not values or any(v not in knob.choices for v in values):
            raise TuneError(f"knob {name!r}: {list(values)} not among {knob.choices}", task=task)
    return tuple(
        Knob(k.name, tuple(c for c in k.choices if c in restrict[k.name]))
        if k.name in restrict
        else k
        for k in knobs
    )
