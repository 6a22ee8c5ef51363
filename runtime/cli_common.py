"""What every ``vtaforge`` subcommand shares: its error type, the check of an output path made
before any work starts, and the reading of a text source.

Each check raises a :class:`CliError` (a :class:`~isa.VtaforgeError`) naming the option and
the path, so the top level (:func:`runtime.cli.main`) reports it on one line.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from isa import AccelConfig, VtaforgeError
from isa.program import MAGIC

__all__ = [
    "CliError",
    "OutputPathError",
    "check_output_dir",
    "check_output_file",
    "demo_arguments",
    "read_source",
]


class CliError(VtaforgeError):
    """A command-line problem outside the library (an unreadable file, a bad option value)."""


class OutputPathError(CliError):
    """An output path cannot be written: its folder is missing, it is a folder, or writing
    there is not permitted."""


def check_output_file(path: Path, option: str) -> None:
    """Raise OutputPathError unless a file can be written at ``path`` (given as ``option``).

    A path that does not exist yet is probed by creating it and removing it again.
    """
    if path.is_dir():
        raise OutputPathError(f"{option} {path}: is a folder, not a file")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise OutputPathError(f"{option} {path}: cannot be written (permission denied)")
        return
    if not path.parent.is_dir():
        raise OutputPathError(f"{option} {path}: folder {path.parent} does not exist")
    try:
        path.open("xb").close()
        path.unlink()
    except OSError as err:
        raise OutputPathError(f"{option} {path}: cannot be written ({err.strerror})") from None


def check_output_dir(path: Path, option: str) -> None:
    """Create the folder ``path`` (given as ``option``) and its parents, and check that files
    can be written in it; raise OutputPathError otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except FileExistsError:
        raise OutputPathError(f"{option} {path}: is a file, not a folder") from None
    except OSError as err:
        raise OutputPathError(f"{option} {path}: cannot be written ({err.strerror})") from None


def demo_arguments(parser: argparse.ArgumentParser, config: str, out: Path) -> AccelConfig:
    """For a demo script (``python -m ...``): the configuration ``--config`` names, after
    checking that the ``--out`` folder can be written, before any work; a problem with either is
    a usage error (exit status 2) naming it."""
    try:
        cfg = AccelConfig.resolve(config)
        check_output_dir(out, "--out")
    except VtaforgeError as err:
        parser.error(str(err))
    return cfg


def read_source(path: Path) -> str:
    """The text of an assembly source; a binary program or non-UTF-8 bytes are named as such."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CliError(f"{path}: cannot be read ({err.strerror})") from None
    if data.startswith(MAGIC):
        raise CliError(
            f"{path} is a binary vtaforge program, not assembly text: "
            f"`vtaforge disasm {path}` prints its assembly"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CliError(
            f"{path}: not assembly text (byte {err.start} is not UTF-8: {err.reason})"
        ) from None
