"""The memory timing of the cycle-level simulator on the command line (``vtaforge sim`` and
``vtaforge run --device sim``): :class:`isa.TimingConfig`'s defaults, then ``--timing
FILE.json``, then ``--read-latency``, then each ``--set NAME=VALUE``; an unknown name is a
ConfigError that suggests the closest one."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from isa import ConfigError, TimingConfig, did_you_mean
from isa.files import CONFIGURATION, read_file
from runtime.cli.common import parse_assignment

__all__ = ["add_timing_options", "describe_timing", "timing_from"]

_TIMING_FIELDS = {f.name: f for f in dataclasses.fields(TimingConfig)}


def add_timing_options(parser: argparse.ArgumentParser) -> None:
    """``--timing FILE.json``, ``--set NAME=VALUE`` and ``--read-latency``: the memory timing
    of the cycle-level simulator, as :func:`timing_from` reads them."""
    parser.add_argument(
        "--timing",
        type=Path,
        metavar="FILE.json",
        help="a JSON object of isa.TimingConfig fields (the rest keep their defaults)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"one TimingConfig field ({', '.join(_TIMING_FIELDS)}); repeatable",
    )
    parser.add_argument(
        "--read-latency",
        type=int,
        metavar="CYCLES",
        help="cycles from a read burst's request to its first beat (--set read_latency=N; "
        f"default {TimingConfig().read_latency})",
    )


def describe_timing(timing: TimingConfig) -> str:
    """The memory timing in one line: every field, the defaults marked as the ideal memory."""
    fields = ", ".join(f"{name}={getattr(timing, name)}" for name in _TIMING_FIELDS)
    ideal = " (the defaults: the RTL with an ideal memory)" if timing == TimingConfig() else ""
    return f"memory timing: {fields}{ideal}"


def timing_from(
    file: Path | None, read_latency: int | None, assignments: list[str]
) -> TimingConfig:
    """The TimingConfig of the defaults, ``file`` (a JSON object of fields), ``read_latency``
    and each ``NAME=VALUE`` of ``assignments``, applied in that order."""
    changes: dict[str, Any] = {}
    if file is not None:
        changes |= _timing_file(file)
    if read_latency is not None:
        changes["read_latency"] = read_latency
    for text in assignments:
        name, value = parse_assignment(text, "--set")
        name = _timing_name(name, "--set")
        changes[name] = _timing_value(name, value)
    return TimingConfig(**changes)


def _timing_file(path: Path) -> dict[str, Any]:
    text = read_file(path, CONFIGURATION)
    try:
        data = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ConfigError("--timing", str(path), f"is not a JSON document ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError("--timing", str(path), "must hold a JSON object of timing fields")
    return {_timing_name(str(name), f"--timing {path}"): value for name, value in data.items()}


def _timing_name(name: str, where: str) -> str:
    if name not in _TIMING_FIELDS:
        raise ConfigError(
            where,
            name,
            f"not a timing parameter{did_you_mean(name, _TIMING_FIELDS)}; the parameters are "
            f"{', '.join(_TIMING_FIELDS)}",
        )
    return name


def _timing_value(name: str, text: str) -> int | bool:
    if isinstance(_TIMING_FIELDS[name].default, bool):
        flags = {"true": True, "1": True, "false": False, "0": False}
        if text.lower() not in flags:
            raise ConfigError(name, text, "must be true or false")
        return flags[text.lower()]
    try:
        return int(text, 0)
    except ValueError:
        raise ConfigError(name, text, "must be an integer") from None
