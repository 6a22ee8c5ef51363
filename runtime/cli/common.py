"""What every ``vtaforge`` subcommand shares: its error type, the ``--config`` option, the
check of an output path made before any work starts, the writing of an output (a ``--report``
table included), and the reading of what a user names (an assembly source, a binary program, a
configuration, within its format's limit, :mod:`isa.files`; a ``NAME=VALUE`` pair).

Each check raises a :class:`CliError` (a :class:`~isa.VtaforgeError`) naming the option and
the path, or an :class:`isa.files.UserFileError` naming the path, so the top level
(:func:`runtime.cli.main`) reports it on one line. Every output is written through
:func:`write_output` or inside :func:`writing`, so a write or flush that fails (a full disk,
``/dev/full``) is an :class:`OutputPathError` naming the option, never a lost output.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from isa import (
    AccelConfig,
    VtaforgeError,
)
from isa.files import ASSEMBLY, read_file, read_npy, read_npz
from isa.program import MAGIC

__all__ = [
    "CliError",
    "OutputPathError",
    "add_config_option",
    "add_model_inputs",
    "check_output_dir",
    "check_output_file",
    "check_report_path",
    "demo_arguments",
    "parse_assignment",
    "read_model_inputs",
    "read_source",
    "write_arrays",
    "write_output",
    "write_report",
    "writing",
]


class CliError(VtaforgeError):
    """A command-line problem outside the library (an unreadable file, a bad option value)."""


class OutputPathError(CliError):
    """An output path cannot be written: its folder is missing, it is a folder, or writing
    there is not permitted."""


def add_config_option(parser: argparse.ArgumentParser, default: str | None = "default") -> None:
    """``--config PRESET|FILE``, as :meth:`AccelConfig.resolve` reads it (``default`` None: the
    command takes the configuration from its input unless one is named)."""
    parser.add_argument(
        "--config",
        default=default,
        metavar="PRESET|FILE",
        help=f"a preset ({', '.join(AccelConfig.preset_names())}) or a JSON file (ours or "
        f"VTA's vta_config.json)",
    )


def add_model_inputs(parser: argparse.ArgumentParser) -> None:
    """``--input X.npy`` (repeated, one per model input in order, or one ``.npz`` by name),
    required; :func:`read_model_inputs` reads them."""
    parser.add_argument(
        "--input",
        type=Path,
        action="append",
        required=True,
        metavar="X.npy",
        help="an input array (.npy), once per model input in order, or one .npz by name",
    )


def read_model_inputs(paths: list[Path]) -> dict[str, np.ndarray] | list[np.ndarray]:
    """``--input``'s arrays: one ``.npz`` of arrays by name, or one ``.npy`` per model input
    (each read within its format's limits)."""
    if len(paths) == 1 and paths[0].suffix == ".npz":
        return read_npz(paths[0])
    return [read_npy(path) for path in paths]


def parse_assignment(text: str, option: str) -> tuple[str, str]:
    """``NAME=VALUE`` (given as ``option``) as its two parts; a CliError if either is empty."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise CliError(f"{option} {text!r}: expected NAME=VALUE")
    return name, value


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


def check_report_path(path: Path) -> None:
    """``--report``'s file: writable, named ``.json`` or ``.csv``."""
    check_output_file(path, "--report")
    if path.suffix.lower() not in (".json", ".csv"):
        raise CliError(f"--report {path}: the name must end in .json or .csv")


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


@contextlib.contextmanager
def writing(path: Path, option: str) -> Iterator[None]:
    """Run the block that writes the output ``path`` (given as ``option``): an operating-system
    error in it (a full disk, ``/dev/full``) is an OutputPathError naming both."""
    try:
        yield
    except OSError as err:
        raise OutputPathError(
            f"{option} {path}: cannot be written ({err.strerror or err})"
        ) from None


def write_output(path: Path, option: str, data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` (given as ``option``), flushed and closed
    before this returns; a failed write is an OutputPathError (:func:`writing`)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with writing(path, option), path.open("wb") as handle:
        handle.write(payload)


def write_arrays(path: Path, option: str, arrays: np.ndarray | Mapping[str, np.ndarray]) -> None:
    """Save one array as ``.npy``, or arrays by name as ``.npz``, at ``path`` through
    :func:`write_output` (numpy's own writers let a failed write pass unnoticed)."""
    buffer = io.BytesIO()
    if isinstance(arrays, np.ndarray):
        np.save(buffer, arrays, allow_pickle=False)
    else:
        np.savez(buffer, **arrays)
    write_output(path, option, buffer.getvalue())


def write_report(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` (dicts of one set of keys) as a JSON list or a CSV table, by ``path``'s
    suffix: ``--report``'s file, written through :func:`write_output`."""
    if path.suffix.lower() == ".json":
        write_output(path, "--report", json.dumps(rows if len(rows) != 1 else rows[0], indent=2))
        return
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    write_output(path, "--report", text.getvalue())


def read_source(path: Path) -> str:
    """The text of an assembly source, read within :data:`isa.files.ASSEMBLY`'s limit; a
    binary program or non-UTF-8 bytes are named as such."""
    data = read_file(path, ASSEMBLY)
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
