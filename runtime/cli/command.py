"""The record of one ``vtaforge`` subcommand (re-exported as ``runtime.cli.Command``): each
command module of :mod:`runtime.cli`, and each package registered under
``runtime.cli.PLUGIN_GROUP``, exports one."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = ["Command", "LazyChoices"]


@dataclass(frozen=True)
class Command:
    """One subcommand: ``configure`` adds its arguments, ``run`` executes it and returns the
    exit status."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


@dataclass
class LazyChoices:
    """An option's ``choices`` read from ``names`` (a function) when first needed: when a value
    is checked or the command's help is shown, not when the parser is built, so that listing
    the commands does not import what computes a command's choices. Give the option a
    ``metavar`` (argparse lists the choices in the usage line otherwise)."""

    names: Callable[[], list[str]]
    _known: list[str] | None = field(default=None, init=False, repr=False)

    def _choices(self) -> list[str]:
        if self._known is None:
            self._known = self.names()
        return self._known

    def __contains__(self, value: object) -> bool:
        return value in self._choices()

    def __iter__(self) -> Iterator[str]:
        return iter(self._choices())
