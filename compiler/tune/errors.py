"""The auto-tuner's exception and warning types."""

from __future__ import annotations

from compiler.errors import CompileError

__all__ = ["RecordWarning", "TuneError"]


class TuneError(CompileError):
    """A tuning request, task or records file is invalid: ``task`` names the task (its key)
    and ``where`` the file and line or the argument concerned (``""`` where they do not
    apply)."""

    def __init__(self, message: str, *, task: str = "", where: str = "") -> None:
        self.task = task
        self.where = where
        located = ", ".join(p for p in (f"task {task}" if task else "", where) if p)
        super().__init__(f"{located}: {message}" if located else message)


class RecordWarning(UserWarning):
    """A line of a records file that is not a usable record, skipped: the message names the
    file and line (as ``FILE:LINE: ``) and says why."""
