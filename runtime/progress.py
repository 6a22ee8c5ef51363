"""Progress reports for operations that take more than a few seconds, on standard error.

:func:`progress_bar` counts steps of known number (a model's steps, the compiler's stages);
:func:`elapsed_progress` covers one long wait of unknown length (a synthesis, a Verilator build).
On a terminal both draw a bar (tqdm, where installed); elsewhere (a log, CI) a counted bar is
silent, while :func:`elapsed_progress` writes a start line, a line with the elapsed time every
``interval`` seconds and a closing line, so a long silent wait never looks like a hang. Standard
output stays free for results.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["Stage", "elapsed_progress", "format_elapsed", "progress_bar"]

#: What reports a long step while it runs, given what the step is (:func:`elapsed_progress`).
Stage = Callable[[str], contextlib.AbstractContextManager[object]]

#: Seconds between two progress lines when standard error is not a terminal.
LINE_INTERVAL = 30.0


@contextlib.contextmanager
def progress_bar(total: int, unit: str) -> Iterator[Callable[[Any], None]]:
    """A progress bar on stderr when it is a terminal (tqdm, where installed) and the function
    that advances it, naming what runs now."""
    try:
        from tqdm import tqdm
    except ImportError:  # a board's minimal installation: no bar
        yield lambda _: None
        return
    bar = tqdm(total=total, unit=unit, file=sys.stderr, leave=False, disable=None)  # TTYs only

    def advance(item: Any) -> None:
        bar.set_description(str(getattr(item, "node", item)))
        bar.update(1)

    try:
        yield advance
    finally:
        bar.close()


def format_elapsed(seconds: float) -> str:
    """``42 s``, ``8 min 31 s``: a duration as a person reads it."""
    if seconds < 59.95:  # what rounds to 60.0 is a minute
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


@contextlib.contextmanager
def elapsed_progress(
    what: str,
    *,
    stream: TextIO | None = None,
    interval: float = LINE_INTERVAL,
    terminal: bool | None = None,
) -> Iterator[None]:
    """Report ``what`` (``"synthesizing 1x16_... with yosys"``) while the body runs: a bar with
    the elapsed time on a terminal, else a line now, one every ``interval`` seconds and one at the
    end with the elapsed time ("finished after", or "failed after" when the body raised).
    ``terminal`` overrides the check of ``stream`` (stderr)."""
    out = sys.stderr if stream is None else stream
    tty = out.isatty() if terminal is None else terminal
    bar = _elapsed_bar(what, out) if tty else None
    if bar is None:
        print(f"vtaforge: {what} ...", file=out, flush=True)
    started = time.perf_counter()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(1.0 if bar is not None else interval):
            if bar is not None:
                bar.refresh()
            else:
                elapsed = format_elapsed(time.perf_counter() - started)
                print(f"vtaforge: {what}: {elapsed} so far", file=out, flush=True)

    ticker = threading.Thread(target=tick, name="vtaforge-progress", daemon=True)
    ticker.start()
    outcome = "failed"
    try:
        yield
        outcome = "finished"
    finally:
        done.set()
        ticker.join()
        if bar is not None:
            bar.close()
        else:
            elapsed = format_elapsed(time.perf_counter() - started)
            print(f"vtaforge: {what}: {outcome} after {elapsed}", file=out, flush=True)


def _elapsed_bar(what: str, out: TextIO) -> Any:
    """A tqdm bar that shows only ``what`` and the elapsed time, or None without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(desc=what, file=out, leave=False, bar_format="{desc}: {elapsed}")
