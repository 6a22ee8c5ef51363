"""One pass runner for every level of the compiler, with instruments that observe it.

A pipeline is a sequence of named :class:`Pass` es over one kind of IR: the loop IR's
lowering passes (:data:`compiler.lower.PIPELINE`, the accelerator's
:func:`compiler.accel.lower.accel_pipeline`) and the model compiler's stages
(:data:`compiler.model.STAGES`, over a compile context). :func:`run_pipeline` runs one; every
:class:`Instrument` made active with :func:`instrumented` sees each pass start
(``before(path, ir)``) and end (``after(path, ir, seconds)``), where ``path`` names the pass
within the passes that are running it (``("codegen", "inject_dma")``: a lowering pass run by
the model's ``codegen`` stage). As TVM's ``PassContext(instruments=...)``:

- :class:`PassTiming` records every pass's seconds and prints them as a tree;
- :class:`DumpIR` writes the IR after each pass into a folder, one numbered file per pass;
- :class:`PrintAfter` prints the IR after the passes it names;
- :class:`Verify` runs a checker on the IR after each pass (the loop IR's:
  :func:`compiler.verify.verify_lowered`) and names the pass that broke it.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TextIO, TypeVar

from compiler.errors import CompileError

__all__ = [
    "DumpIR",
    "Instrument",
    "Pass",
    "PassTiming",
    "PrintAfter",
    "Verify",
    "instrumented",
    "run_pipeline",
    "running_passes",
]

IR = TypeVar("IR")

#: A pass's place: the names of the passes running it, outermost first, then its own.
PassPath = tuple[str, ...]


@dataclass(frozen=True)
class Pass(Generic[IR]):
    """A named, pure function from an IR to an IR of the same kind."""

    name: str
    run: Callable[[IR], IR]


class Instrument:
    """Observes pipelines: :meth:`before` as each pass starts, :meth:`after` as it ends (a
    subclass overrides either; both do nothing here)."""

    def before(self, path: PassPath, ir: object) -> None:
        """Pass ``path`` is about to run on ``ir``."""

    def after(self, path: PassPath, ir: object, seconds: float) -> None:
        """Pass ``path`` made ``ir`` in ``seconds``."""


_ACTIVE: ContextVar[tuple[Instrument, ...]] = ContextVar("instruments", default=())
_RUNNING: ContextVar[PassPath] = ContextVar("running_passes", default=())


@contextmanager
def instrumented(*instruments: Instrument) -> Iterator[None]:
    """Run the block with ``instruments`` observing every pipeline that runs in it (added to
    those already active)."""
    token = _ACTIVE.set((*_ACTIVE.get(), *instruments))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def running_passes() -> PassPath:
    """The path of the pass running now (empty outside every pipeline)."""
    return _RUNNING.get()


def run_pipeline(ir: IR, passes: Sequence[Pass[IR]]) -> IR:
    """``ir`` after each pass of ``passes`` in order, each observed by the active
    instruments."""
    for step in passes:
        path = (*_RUNNING.get(), step.name)
        active = _ACTIVE.get()
        for instrument in active:
            instrument.before(path, ir)
        token = _RUNNING.set(path)
        started = time.perf_counter()
        try:
            ir = step.run(ir)
        finally:
            _RUNNING.reset(token)
        seconds = time.perf_counter() - started
        for instrument in active:
            instrument.after(path, ir, seconds)
    return ir


class PassTiming(Instrument):
    """Every pass's time: ``records`` holds ``(path, seconds)`` in the order passes ended."""

    def __init__(self) -> None:
        self.records: list[tuple[PassPath, float]] = []

    def after(self, path: PassPath, ir: object, seconds: float) -> None:
        self.records.append((path, seconds))

    def totals(self) -> dict[PassPath, tuple[int, float]]:
        """Calls and seconds of each path, in the order each path first ended."""
        totals: dict[PassPath, tuple[int, float]] = {}
        for path, seconds in self.records:
            calls, total = totals.get(path, (0, 0.0))
            totals[path] = (calls + 1, total + seconds)
        return totals

    def report(self) -> str:
        """The passes as a tree (each under the pass that ran it), with calls and seconds."""
        totals = self.totals()
        order = sorted(totals, key=lambda path: _first_end(path, list(totals)))
        width = max((2 * (len(p) - 1) + len(p[-1]) for p in order), default=4)
        lines = [f"{'pass':<{width}}  {'calls':>5}  {'seconds':>8}"]
        for path in order:
            calls, seconds = totals[path]
            label = "  " * (len(path) - 1) + path[-1]
            lines.append(f"{label:<{width}}  {calls:>5}  {seconds:>8.3f}")
        return "\n".join(lines)


def _first_end(path: PassPath, ended: list[PassPath]) -> tuple[int, ...]:
    """A sort key putting each pass after the one running it, and passes in the order they
    first ended among their siblings."""
    return tuple(ended.index(path[: k + 1]) for k in range(len(path)))


class DumpIR(Instrument):
    """Writes the IR after each pass to ``folder`` (created): one file per pass, numbered in
    the order passes end, named by the pass's path and, where the IR has one, its name."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.count = 0

    def after(self, path: PassPath, ir: object, seconds: float) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count += 1
        stem = ".".join(path)
        name = getattr(ir, "name", "")
        if isinstance(name, str) and name:
            stem += f".{name}"
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)
        (self.folder / f"{self.count:04d}_{safe}.txt").write_text(f"{ir}\n")


class PrintAfter(Instrument):
    """Prints the IR after each pass whose name is in ``names`` (to ``stream``)."""

    def __init__(self, names: Sequence[str], stream: TextIO | None = None) -> None:
        self.names = frozenset(names)
        self.stream = stream

    def after(self, path: PassPath, ir: object, seconds: float) -> None:
        if path[-1] in self.names:
            print(f"# after {' > '.join(path)}\n{ir}", file=self.stream or sys.stdout)


class Verify(Instrument):
    """Runs ``check(ir)`` after each pass on the IRs it ``applies`` to; a CompileError it
    raises is raised again naming the pass that made the IR."""

    def __init__(self, check: Callable[[object], None], applies: Callable[[object], bool]):
        self.check = check
        self.applies = applies

    def after(self, path: PassPath, ir: object, seconds: float) -> None:
        if not self.applies(ir):
            return
        try:
            self.check(ir)
        except CompileError as err:
            raise CompileError(f"after pass {' > '.join(path)}: {err.detail}") from None
