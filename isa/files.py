"""Reading the files a user names, within a limit per format.

Every command reads a user's file through :func:`open_file` (or :func:`read_file`, its bytes)
with the :class:`FileFormat` it expects, whose ``limit`` is the most bytes such a file may
hold. A path that is not a regular file (a character device such as ``/dev/zero``, a FIFO, a
socket, a folder: such files may never end) is refused before a byte is read, and so is a
file larger than its format's limit; at most ``limit + 1`` bytes are ever read, so a file that
grows while it is read is caught too. Each refusal is a :class:`UserFileError` naming the path.

Arrays (``.npy``, and ``.npz`` archives of them) are read by :func:`read_npy` and
:func:`read_npz`: each array's header (dtype, shape, order) is read first, and its size
(elements times item size) is checked against the limit and against the bytes the file (or the
archive member) holds before numpy allocates anything. Object (pickled) arrays are refused.

The formats this package reads are named here (:data:`ASSEMBLY`, :data:`PROGRAM`,
:data:`CONFIGURATION`, :data:`ARRAYS`); the packages above add theirs (an ONNX model, a
compiled model) beside the code that reads them.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import tokenize
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from isa.errors import VtaforgeError

__all__ = [
    "ARRAYS",
    "ASSEMBLY",
    "CONFIGURATION",
    "PROGRAM",
    "FileFormat",
    "UserFileError",
    "check_file",
    "open_file",
    "read_file",
    "read_npy",
    "read_npz",
]


class UserFileError(VtaforgeError, ValueError):
    """A file a user named cannot be read as its format: missing or unreadable, not a regular
    file, larger than the format's limit, or an array whose header claims more than the file
    holds or than the limit allows."""


@dataclass(frozen=True)
class FileFormat:
    """What a file holds (``name``, for messages) and the most bytes it may hold."""

    name: str
    limit: int


#: An assembly source (``vtaforge asm``): 64 MiB of text.
ASSEMBLY = FileFormat("assembly source", 64 << 20)
#: A binary program (``disasm``, ``sim``): 1 GiB, the DRAM image a compiled model may ask for.
PROGRAM = FileFormat("binary program", 1 << 30)
#: A JSON configuration (``--config``, ``--timing``, ``config show``): 1 MiB.
CONFIGURATION = FileFormat("configuration file", 1 << 20)
#: Input arrays and calibration data (``.npy``, ``.npz``): 4 GiB, the arrays together.
ARRAYS = FileFormat("numpy array file", 4 << 30)

#: What reading a damaged file or archive member raises, from the operating system to zlib.
_READ_ERRORS = (
    OSError,
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    RuntimeError,
    NotImplementedError,
)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


@contextlib.contextmanager
def open_file(path: str | Path, fmt: FileFormat) -> Iterator[tuple[BinaryIO, int]]:
    """The open file at ``path`` and its size in bytes, once it is known to be a regular file
    of at most ``fmt.limit`` bytes; raise :class:`UserFileError` otherwise. Opening never
    blocks (a FIFO without a writer is refused, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise UserFileError(f"{path}: cannot be read ({err.strerror or err})") from None
    info = os.fstat(fd)
    problem = _problem(info, fmt)
    if problem:
        os.close(fd)
        raise UserFileError(f"{path}: {problem}")
    with os.fdopen(fd, "rb") as handle:
        yield handle, info.st_size


def check_file(path: str | Path, fmt: FileFormat) -> int:
    """The size of ``path`` once it is known to be a regular file of at most ``fmt.limit``
    bytes (for a reader that takes the path itself); raise :class:`UserFileError` otherwise."""
    with open_file(path, fmt) as (_, size):
        return size


def _problem(info: os.stat_result, fmt: FileFormat) -> str:
    """Why a file of status ``info`` is not read as ``fmt`` (``""`` when it is)."""
    if not stat.S_ISREG(info.st_mode):
        return f"is {_kind(info.st_mode)}: {fmt.name}s are read from regular files only"
    if info.st_size > fmt.limit:
        return _too_large(fmt, info.st_size)
    return ""


def read_file(path: str | Path, fmt: FileFormat) -> bytes:
    """The bytes of the regular file ``path``, at most ``fmt.limit`` of them (see
    :func:`open_file`); raise :class:`UserFileError` otherwise."""
    with open_file(path, fmt) as (handle, _):
        try:
            data = handle.read(fmt.limit + 1)
        except OSError as err:
            raise UserFileError(f"{path}: cannot be read ({err.strerror or err})") from None
    if len(data) > fmt.limit:
        raise UserFileError(f"{path}: {_too_large(fmt, len(data))}")
    return data


def _too_large(fmt: FileFormat, size: int) -> str:
    return f"{size:,} bytes or more, over the limit for {fmt.name}s ({fmt.limit:,} bytes)"


def read_npy(path: str | Path, fmt: FileFormat = ARRAYS) -> np.ndarray:
    """The array of the ``.npy`` file ``path``, its header checked before its data is read
    (module docstring); raise :class:`UserFileError` for anything else."""
    with open_file(path, fmt) as (handle, size):
        return _read_array(handle, size, fmt.limit, str(path))


def read_npz(path: str | Path, fmt: FileFormat = ARRAYS) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``path`` by name, together at most ``fmt.limit``
    bytes, each header checked before its data is read (module docstring); raise
    :class:`UserFileError` for anything else."""
    with open_file(path, fmt) as (handle, _):
        try:
            archive = zipfile.ZipFile(handle)
        except (*_READ_ERRORS, ValueError) as err:
            raise UserFileError(f"{path}: not a .npz archive of arrays ({err})") from None
        with archive:
            return _archive_arrays(archive, fmt.limit, str(path))


def _archive_arrays(archive: zipfile.ZipFile, limit: int, where: str) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for info in archive.infolist():
        label = f"{where}: member {info.filename!r}"
        if not info.filename.endswith(".npy") or info.is_dir():
            raise UserFileError(f"{label} is not a .npy array")
        if info.file_size > limit:
            raise UserFileError(f"{label}: {info.file_size:,} bytes, more than the {limit:,} left")
        try:
            member = archive.open(info)
        except _READ_ERRORS as err:
            raise UserFileError(f"{label} cannot be read ({err})") from None
        with member:
            arrays[info.filename[:-4]] = _read_array(member, info.file_size, limit, label)
        limit -= info.file_size
    return arrays


def _read_array(stream: BinaryIO, size: int, limit: int, where: str) -> np.ndarray:
    """The array of the ``.npy`` bytes ``stream`` holds (``size`` of them in all, at most
    ``limit`` of data)."""
    dtype, shape, fortran, start = _header(stream, where)
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    declared = f"{dtype}{list(shape)} ({nbytes:,} bytes)"
    if max(count, nbytes) > limit:
        raise UserFileError(
            f"{where}: the header declares {declared}, more than the {limit:,} allowed"
        )
    if start + nbytes > size:
        raise UserFileError(
            f"{where}: the header declares {declared}, the file holds {size - start:,} after it"
        )
    data = _read_exactly(stream, nbytes, where)
    try:
        flat = data.view(dtype) if dtype.itemsize else np.empty(count, dtype)
        return flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    except ValueError as err:  # a dtype numpy cannot lay over bytes (a subarray)
        raise UserFileError(f"{where}: the data cannot be read as {dtype} ({err})") from None


def _read_exactly(stream: BinaryIO, nbytes: int, where: str) -> np.ndarray:
    """The next ``nbytes`` bytes of ``stream`` as a new uint8 array."""
    data = np.empty(nbytes, np.uint8)
    view, got = memoryview(data), 0
    try:
        while got < nbytes and (step := stream.readinto(view[got:])):
            got += step
    except _READ_ERRORS as err:
        raise UserFileError(f"{where}: the data cannot be read ({err})") from None
    if got != nbytes:
        raise UserFileError(f"{where}: the data ends after {got:,} of {nbytes:,} bytes")
    return data


def _header(stream: BinaryIO, where: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """The dtype, shape and order of a ``.npy`` header and the offset its data starts at."""
    try:
        version = npy_format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"format version {version[0]}.{version[1]} is not read here")
        start = stream.tell()
    except (*_READ_ERRORS, ValueError, TypeError, SyntaxError, tokenize.TokenError) as err:
        raise UserFileError(f"{where}: not a .npy array ({err})") from None
    if dtype.hasobject:
        raise UserFileError(f"{where}: holds Python objects ({dtype}), which are not read")
    if any(d < 0 for d in shape):
        raise UserFileError(f"{where}: the header's shape {list(shape)} has a negative dimension")
    return dtype, tuple(shape), fortran, start
