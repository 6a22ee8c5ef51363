"""The record of one ``vtaforge`` subcommand (re-exported as ``runtime.cli.Command``): each
command module of :mod:`runtime.cli`, and each package registered under
``runtime.cli.PLUGIN_GROUP``, exports one."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Command"]


@dataclass(frozen=True)
class Command:
    """One subcommand: ``configure`` adds its arguments, ``run`` executes it and returns the
    exit status."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
