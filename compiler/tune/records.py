"""Tuning records: one JSON line per trial, and the best knobs they hold.

A line holds the task (its ``key`` and a description to rebuild it, :meth:`Task.to_dict`), the
target (the CPU, or the accelerator configuration's fingerprint), the trial's knobs, its result
(costs or an error and its message), the seconds it took and when it finished. A
:class:`RecordWriter` appends and flushes (and syncs) each line as its trial finishes, so a run
killed at any moment loses at most the trials in flight; a line cut short by the kill is removed
when the file is next opened for writing. :func:`apply_history_best` makes templates called
without explicit knobs (``compile_model``'s accelerator operators included) use the best knobs
the records hold for their task.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.ops.knobs import Template, choosing
from compiler.te import Tensor
from compiler.tune.errors import TuneError
from compiler.tune.measure import Result
from compiler.tune.task import Task

__all__ = ["Record", "RecordWriter", "apply_history_best", "best_records", "load_records"]


@dataclass(frozen=True)
class Record:
    """One trial: ``task`` (key), ``spec`` (to rebuild the task), ``target``, ``knobs``,
    ``result`` and the UNIX ``time`` it finished."""

    task: str
    spec: dict[str, Any]
    target: str
    knobs: dict[str, Any]
    result: Result
    time: float

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
        try:
            line = json.loads(text)
            knobs = {k: tuple(v) if isinstance(v, list) else v for k, v in line["knobs"].items()}
            result = Result(tuple(line["costs"]), line["error"], line["message"], line["seconds"])
            return cls(line["task"], line["spec"], line["target"], knobs, result, line["time"])
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise TuneError(f"not a tuning record ({err})", where=where) from None


def load_records(path: str | Path) -> list[Record]:
    """The records in ``path`` (none if it does not exist), in order; a last line cut short by
    a kill is ignored, any other bad line raises TuneError naming it."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    complete = lines[:-1]  # the part after the last newline is unfinished (or empty)
    return [
        Record.from_json(line, f"{path}:{number}")
        for number, line in enumerate(complete, start=1)
        if line.strip()
    ]


class RecordWriter:
    """Appends records to ``path``, each line flushed and synced as it is written."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a+b")  # noqa: SIM115  (closed by close())
        self._drop_partial_line()

    def write(self, record: Record) -> None:
        self._file.write((record.to_json() + "\n").encode())
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drop_partial_line(self) -> None:
        self._file.seek(0)
        data = self._file.read()
        end = data.rfind(b"\n") + 1
        if end != len(data):
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
    """Within the block, a template called without knobs whose task has a successful record
    takes that task's best knobs (the others keep their defaults); yields the best records."""
    if isinstance(records, str | Path):
        records = load_records(records)
    best = best_records(records)

    def chooser(template: Template, inputs: tuple[Tensor, ...], params: dict) -> dict | None:
        if not best:
            return None
        record = best.get(Task.of(template, *inputs, **params).key)
        return None if record is None else record.knobs

    with choosing(chooser):
        yield best
