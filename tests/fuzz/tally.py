"""Counting what a fuzz test tried and how each input ended.

A :class:`Tally` runs one input at a time (:meth:`Tally.attempt`) under a wall-clock limit and
files the outcome: accepted, a typed error (a ``VtaforgeError``), an untyped exception, or a
hang (over the limit). The test adds disagreements (two levels that answer differently) itself.
``row()`` is the tally's line of the closing table; :meth:`Tally.assert_clean` fails the test,
showing the first examples, when anything but accepted inputs and typed errors turned up.
"""

from __future__ import annotations

import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from isa import VtaforgeError

__all__ = ["HEADER", "Hang", "Tally", "time_limit"]

#: The closing table's heading; each tally's :meth:`Tally.row` lines up under it.
HEADER = (
    f"{'category':<38} {'tried':>8} {'accepted':>8} {'typed':>8} {'untyped':>7} {'hangs':>5} "
    f"{'disagree':>8}"
)
_EXAMPLES = 5


class Hang(Exception):
    """An input ran past its time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the block after ``seconds`` (SIGALRM: the main thread only; in
    another thread the block runs unlimited)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Tally:
    """How the inputs of one fuzz category ended (see the module docstring)."""

    category: str
    limit_s: float = 20.0
    tried: int = 0
    accepted: int = 0
    typed: int = 0
    untyped: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)

    def attempt(
        self, label: str, call: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[bool, Any]:
        """Run ``call(*args, **kwargs)`` as one input: ``(True, its result)`` when it returned,
        ``(False, the typed error)`` when it raised one; an untyped exception or a hang is
        recorded (under ``label``) and given back as ``(False, the exception)``."""
        self.tried += 1
        try:
            with time_limit(self.limit_s):
                result = call(*args, **kwargs)
        except VtaforgeError as err:
            self.typed += 1
            return False, err
        except Hang as err:
            self.hangs.append(f"{label}: {err}")
            return False, err
        except Exception as err:  # the finding itself: anything untyped
            where = traceback.extract_tb(err.__traceback__)[-1]
            self.untyped.append(
                f"{label}: {type(err).__name__}: {err} (at {where.filename}:{where.lineno})"
            )
            return False, err
        self.accepted += 1
        return True, result

    def disagree(self, label: str, what: str) -> None:
        """Record that two levels answered ``label`` differently."""
        self.disagreements.append(f"{label}: {what}")

    def row(self) -> str:
        return (
            f"{self.category:<38} {self.tried:>8} {self.accepted:>8} {self.typed:>8} "
            f"{len(self.untyped):>7} {len(self.hangs):>5} {len(self.disagreements):>8}"
        )

    def assert_clean(self) -> None:
        """Fail unless every input was accepted or refused with a typed error, none hung, and
        no two levels disagreed."""
        problems = [
            f"{kind} ({len(items)}): " + "; ".join(items[:_EXAMPLES])
            for kind, items in (
                ("untyped", self.untyped),
                ("hangs", self.hangs),
                ("disagreements", self.disagreements),
            )
            if items
        ]
        assert not problems, f"{self.category}: " + "\n".join(problems)
