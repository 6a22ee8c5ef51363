"""Tuning records: one JSON line per trial, and the best knobs they hold.

A line holds the task (its ``key`` and a description to rebuild it, :meth:`Task.to_dict`), the
target (the CPU, or the accelerator configuration's fingerprint), the trial's knobs, its result
(costs or an error and its message), the seconds it took and when it finished. A
:class:`RecordWriter` appends and flushes (and syncs) each line as its trial finishes, so a run
killed at any moment loses at most the trials in flight; a line cut short by the kill is removed
when the file is next opened for writing. :func:`apply_history_best` makes templates called
without explicit knobs (``compile_model``'s accelerator operators included) use the best knobs
the records hold for their task.

Reading trusts nothing: :func:`load_records` reads regular files only, in lines of bounded
length, and checks each line (:meth:`Record.from_line`); :func:`in_space` checks knobs against
a task's space. A line that fails either is reported as a
:class:`~compiler.tune.errors.RecordWarning` naming its file and line, and skipped, so it is
never resumed from nor taken as a best.
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from compiler.te import Tensor
from compiler.templates.knobs import Template, choosing
from compiler.tune.errors import RecordWarning, TuneError
from compiler.tune.measure import ERRORS, Result
from compiler.tune.space import Space
from compiler.tune.task import Task

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE",
    "Record",
    "RecordWriter",
    "apply_history_best",
    "best_records",
    "in_space",
    "load_records",
]


#: A line longer than this many bytes (its newline included) is not a record.
MAX_LINE = 1 << 20
#: JSON nested deeper than this is not a record (a record's own nests five levels).
MAX_DEPTH = 16
#: The record fields of each JSON type (numbers are checked by :func:`_finite`).
_TEXT_FIELDS = ("task", "target", "error", "message")
_NUMBER_FIELDS = ("seconds", "time")


@dataclass(frozen=True)
class Record:
    """One trial: ``task`` (key), ``spec`` (to rebuild the task), ``target``, ``knobs``,
    ``result`` and the UNIX ``time`` it finished; ``where`` names the file and line it was
    read from (``""`` for a record made here)."""

    task: str
    spec: dict[str, Any]
    target: str
    knobs: dict[str, Any]
    result: Result
    time: float
    where: str = field(default="", compare=False)

    @classmethod
    def of(cls, task: Task, knobs: Mapping[str, Any], result: Result) -> Record:
        return cls(task.key, task.to_dict(), task.target, dict(knobs), result, time.time())

    def to_json(self) -> str:
        r = self.result
        line = {
            "task": self.task,
            "target": self.target,
            "knobs": self.knobs,
            "costs": list(r.costs),
            "error": r.error,
            "message": r.message,
            "seconds": round(r.seconds, 4),
            "time": round(self.time, 3),
            "spec": self.spec,
        }
        return json.dumps(line, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str = "") -> Record:
        """The record of one line, checked: a JSON object nested at most :data:`MAX_DEPTH`
        levels with every field of its type, knobs naming scalars or lists of them, and a
        result that is either costs (a non-empty list of finite non-negative numbers) and no
        error, or an error of :data:`~compiler.tune.measure.ERRORS` and no costs; seconds
        finite and non-negative. TuneError (naming ``where``) for anything else."""
        try:
            line = json.loads(text)
        except RecursionError:
            raise TuneError(
                f"not a tuning record (nested over {MAX_DEPTH} levels)", where=where
            ) from None
        except ValueError as err:
            raise TuneError(f"not a tuning record (not JSON: {err})", where=where) from None
        problem = _problem(line)
        if problem:
            raise TuneError(f"not a tuning record ({problem})", where=where)
        knobs = {name: _tuples(value) for name, value in line["knobs"].items()}
        costs = tuple(float(c) for c in line["costs"])
        result = Result(costs, line["error"], line["message"], float(line["seconds"]))
        return cls(
            line["task"], line["spec"], line["target"], knobs, result, float(line["time"]), where
        )

    @classmethod
    def from_line(cls, raw: bytes, where: str = "") -> Record:
        """The record of one line of a records file (:meth:`from_json`), which must also be
        at most :data:`MAX_LINE` bytes of UTF-8."""
        if len(raw) > MAX_LINE:
            raise TuneError(f"not a tuning record (longer than {MAX_LINE} bytes)", where=where)
        try:
            text = raw.decode()
        except UnicodeDecodeError as err:
            raise TuneError(f"not a tuning record (not UTF-8: {err.reason})", where=where) from None
        return cls.from_json(text, where)


def _finite(value: Any) -> bool:
    """Whether ``value`` is a JSON number (not a boolean) that is finite as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is not None:
            deepest = max(deepest, level + 1)
            if deepest > MAX_DEPTH:
                break
            stack.extend((child, level + 1) for child in children)
    return deepest


def _problem(line: Any) -> str:
    """What keeps the parsed ``line`` from being a record (``""``: nothing)."""
    if not isinstance(line, dict):
        return f"a JSON {type(line).__name__}, not an object"
    if _depth(line) > MAX_DEPTH:
        return f"nested over {MAX_DEPTH} levels"
    fields = [*_TEXT_FIELDS, *_NUMBER_FIELDS, "knobs", "costs", "spec"]
    missing = [name for name in fields if name not in line]
    if missing:
        return f"no {', '.join(missing)}"
    wrong = [name for name in _TEXT_FIELDS if not isinstance(line[name], str)]
    wrong += [name for name in _NUMBER_FIELDS if not _finite(line[name])]
    wrong += [name for name in ("knobs", "spec") if not isinstance(line[name], dict)]
    if wrong:
        return f"{', '.join(wrong)} of the wrong type"
    return _knobs_problem(line["knobs"]) or _result_problem(line)


def _knobs_problem(knobs: dict[str, Any]) -> str:
    scalar = bool | int | float | str | None
    for value in knobs.values():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(item, scalar) for item in items):
            return f"knob value {value!r} is not a scalar or a list of scalars"
    return ""


def _result_problem(line: dict[str, Any]) -> str:
    costs, error = line["costs"], line["error"]
    if line["seconds"] < 0:
        return f"seconds {line['seconds']!r} is negative"
    if not isinstance(costs, list):
        return f"costs {costs!r} is not a list"
    if error:
        if error not in ERRORS:
            return f"error {error!r} is not one of {', '.join(ERRORS)}"
        return f"costs {costs!r} of a failed trial" if costs else ""
    if not costs or not all(_finite(c) and c >= 0 for c in costs):
        return f"costs {costs!r} are not a non-empty list of finite non-negative numbers"
    return ""


def _tuples(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def load_records(path: str | Path) -> list[Record]:
    """The records in ``path`` (none if it does not exist), in order. A line that is not a
    record (:meth:`Record.from_line`; a last line without its newline: cut short by a kill)
    is reported as a :class:`RecordWarning` naming its file and line, and skipped. TuneError
    naming ``path`` when it is not a regular file (a FIFO or a device is never read)."""
    path = Path(path)
    try:
        file = _open_regular(path, os.O_RDONLY, "rb")
    except FileNotFoundError:
        return []
    records = []
    with file:
        for number, raw in enumerate(_lines(file), start=1):
            if not raw.strip():
                continue
            try:
                records.append(Record.from_line(raw, f"{path}:{number}"))
            except TuneError as err:
                cut = len(raw) <= MAX_LINE and not raw.endswith(b"\n")  # the last line
                _report(
                    f"{err} (the last line, without its newline: cut short)" if cut else str(err)
                )
    return records


def in_space(records: Iterable[Record], space: Space) -> list[Record]:
    """The ``records`` whose knobs are a point of ``space`` (:meth:`Space.contains`); the
    others are reported as a :class:`RecordWarning` naming their line, and left out."""
    kept = []
    for record in records:
        if space.contains(record.knobs):
            kept.append(record)
        else:
            where = f"{record.where}: " if record.where else ""
            _report(f"{where}knobs {record.knobs} are not a point of {space.task.name}'s space")
    return kept


def _report(message: str) -> None:
    warnings.warn(f"{message}; skipped", RecordWarning, stacklevel=3)


def _lines(file: BinaryIO) -> Iterator[bytes]:
    """The lines of ``file`` with their newlines, each read in pieces of at most
    :data:`MAX_LINE` + 1 bytes: a longer line is given as its first piece (which
    :meth:`Record.from_line` refuses) and the rest of it is read past."""
    while line := file.readline(MAX_LINE + 1):
        yield line
        while len(line) > MAX_LINE and not line.endswith(b"\n"):
            line = file.readline(MAX_LINE + 1)


def _open_regular(path: Path, flags: int, mode: str) -> BinaryIO:
    """``path`` opened with ``os.open`` ``flags`` as a file of ``mode``, if it is a regular
    file: TuneError naming it otherwise (opened without blocking, so a FIFO never hangs)."""
    fd = os.open(path, flags | os.O_NONBLOCK, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TuneError("not a regular file (records are kept in one)", where=str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, mode)


class RecordWriter:
    """Appends records to ``path`` (a regular file; TuneError naming it otherwise), each line
    flushed and synced as it is written; a write that fails (a full disk) is a TuneError."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = _open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, "a+b")
        try:
            self._end_last_line()
        except BaseException:
            self._file.close()
            raise

    def write(self, record: Record) -> None:
        self._append((record.to_json() + "\n").encode())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _append(self, data: bytes) -> None:
        try:
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as err:
            raise TuneError(
                f"cannot write a record: {err.strerror or err}", where=str(self.path)
            ) from None

    def _end_last_line(self) -> None:
        """A last line without its newline gets one if it is a record, else is removed (a
        kill cut it short; :func:`load_records` reported it)."""
        self._file.seek(0)
        data = self._file.read()
        end = data.rfind(b"\n") + 1
        if end == len(data):
            return
        try:
            Record.from_line(data[end:])
            self._append(b"\n")
        except TuneError:
            self._file.truncate(end)
        self._file.seek(0, os.SEEK_END)


def best_records(records: Iterable[Record]) -> dict[str, Record]:
    """Per task key, the successful record of least cost (the earliest among equals)."""
    best: dict[str, Record] = {}
    for record in records:
        if record.result.ok and (
            record.task not in best or record.result.cost < best[record.task].result.cost
        ):
            best[record.task] = record
    return best


@contextmanager
def apply_history_best(records: str | Path | Iterable[Record]) -> Iterator[dict[str, Record]]:
    """Within the block, a template called without knobs takes the knobs of its task's best
    successful record among those that are a point of its space (the others are reported,
    :func:`in_space`; a task without one keeps its defaults). Yields :func:`best_records`."""
    if isinstance(records, str | Path):
        records = load_records(records)
    by_task: dict[str, list[Record]] = {}
    for record in records:
        by_task.setdefault(record.task, []).append(record)

    def chooser(template: Template, inputs: tuple[Tensor, ...], params: dict) -> dict | None:
        if not by_task:
            return None
        task = Task.of(template, *inputs, **params)
        own = by_task.get(task.key)
        record = best_records(in_space(own, Space(task))).get(task.key) if own else None
        return None if record is None else record.knobs

    with choosing(chooser):
        yield best_records(record for own in by_task.values() for record in own)
