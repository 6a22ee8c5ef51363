"""Knobs: the choices a schedule template exposes, as a space a tuner can search.

A template declares, for given input shapes, a :class:`KnobSpace` of named :class:`Knob`\\ s;
a configuration is a mapping from knob name to one of its choices. The first choice of every knob
is the template's default (good without tuning). Inside :func:`choosing` (tuning records'
``apply_history_best``), a template called without a configuration takes the chooser's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from compiler.errors import CompileError
from compiler.schedule import Schedule
from compiler.te import Tensor

__all__ = ["Chooser", "Config", "Knob", "KnobSpace", "Template", "choosing"]

Config = Mapping[str, Any]
#: ``chooser(template, inputs, params)``: the knobs to use for this instance, or None.
Chooser = Callable[["Template", tuple[Tensor, ...], dict[str, Any]], "Config | None"]
_CHOOSER: ContextVar[Chooser | None] = ContextVar("knob_chooser", default=None)


@contextmanager
def choosing(chooser: Chooser) -> Iterator[None]:
    """Within the block, templates called without a configuration ask ``chooser`` first."""
    token = _CHOOSER.set(chooser)
    try:
        yield
    finally:
        _CHOOSER.reset(token)


@dataclass(frozen=True)
class Knob:
    """One choice: ``name`` takes one of ``choices`` (the first is the default)."""

    name: str
    choices: tuple[Any, ...]


@dataclass(frozen=True)
class KnobSpace:
    """The knobs of one template instance; iterating yields every configuration."""

    knobs: tuple[Knob, ...]

    def default(self) -> dict[str, Any]:
        return {knob.name: knob.choices[0] for knob in self.knobs}

    def __len__(self) -> int:
        size = 1
        for knob in self.knobs:
            size *= len(knob.choices)
        return size

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = [knob.name for knob in self.knobs]
        for values in itertools.product(*(knob.choices for knob in self.knobs)):
            yield dict(zip(names, values, strict=True))

    def resolve(self, config: Config | None, op: str) -> dict[str, Any]:
        """``config`` completed with defaults; unknown knobs or values raise."""
        chosen = self.default()
        for name, value in (config or {}).items():
            knob = next((k for k in self.knobs if k.name == name), None)
            if knob is None:
                known = ", ".join(k.name for k in self.knobs)
                raise CompileError(f"unknown knob {name!r} (knobs: {known})", op=op)
            if value not in knob.choices:
                raise CompileError(f"knob {name!r} = {value!r} is not one of {knob.choices}", op=op)
            chosen[name] = value
        return chosen


@dataclass(frozen=True)
class Template:
    """An operator: ``space(*inputs)`` gives its knobs for these inputs; ``template(*inputs,
    config=...)`` declares the computation and schedules it, returning ``(schedule, output)``."""

    name: str
    space: Callable[..., KnobSpace]
    declare: Callable[..., tuple[Schedule, Tensor]]

    def __call__(
        self, *inputs: Tensor, config: Config | None = None, **params: Any
    ) -> tuple[Schedule, Tensor]:
        return self.declare(*inputs, cfg=self.chosen(*inputs, config=config, **params), **params)

    def chosen(self, *inputs: Tensor, config: Config | None = None, **params: Any) -> dict:
        """The complete knobs for these inputs: ``config``, else the chooser's (inside
        :func:`choosing`), else the defaults."""
        chooser = _CHOOSER.get()
        if config is None and chooser is not None:
            config = chooser(self, inputs, params)
        return self.space(*inputs, **params).resolve(config, self.name)
