"""Measurement in a separate process: a candidate that crashes or hangs costs only its worker.

A :class:`Worker` keeps one Python process (``python -m compiler.tune.worker``) and sends it
``measure_candidate(task, config, options)`` calls as length-prefixed pickles over its stdin,
reading the :class:`~compiler.tune.measure.Result` back from its stdout. A worker that dies
before answering (a segfault, ``os._exit``) gives a ``crash`` result naming its exit status; one
that has not answered after ``options.timeout`` seconds is killed and gives a ``timeout``. Either
way the next call starts a fresh process, and a candidate's timeout starts once that process has
imported the compiler. The worker process exits when its parent goes away.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from compiler.tune.errors import TuneError
from compiler.tune.measure import MeasureOptions, Result, measure_candidate
from compiler.tune.task import Task

__all__ = ["STARTUP", "Worker", "thread_worker"]

_HEADER = struct.Struct("<Q")
_READY = b"ready"
#: Seconds a new worker process may take to import the compiler.
STARTUP = 120.0


class Worker:
    """One measurement process, started on first use and after each crash or timeout."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None

    def measure(self, task: Task, config: Mapping[str, Any], options: MeasureOptions) -> Result:
        process = self._start()
        started = time.perf_counter()
        payload = pickle.dumps((task, dict(config), options))
        try:
            process.stdin.write(_HEADER.pack(len(payload)) + payload)
            process.stdin.flush()
            reply = _read_message(process.stdout, started + options.timeout)
        except (BrokenPipeError, EOFError):
            return self._crashed(started)
        if reply is None:
            self.close()
            return Result(
                error="timeout",
                message=f"no answer within {options.timeout:g} s (worker killed)",
                seconds=time.perf_counter() - started,
            )
        return pickle.loads(reply)

    def close(self) -> None:
        """Stop the process (if any)."""
        if self._process is not None:
            self._process.kill()
            self._reap()

    def _reap(self) -> int:
        """Wait for the process to end and close its pipes; its exit status."""
        process, self._process = self._process, None
        status = process.wait()
        process.stdin.close()
        process.stdout.close()
        return status

    def _start(self) -> subprocess.Popen:
        """The running process; a new one has imported the compiler (its ready message came)
        before a candidate's timeout starts."""
        if self._process is None or self._process.poll() is not None:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            self._process = subprocess.Popen(
                [sys.executable, "-m", "compiler.tune.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                bufsize=0,
            )
            try:
                ready = _read_message(self._process.stdout, time.perf_counter() + STARTUP)
            except EOFError:
                ready = None
            if ready != _READY:
                self.close()
                raise TuneError(f"the measurement worker did not start within {STARTUP:g} s")
        return self._process

    def _crashed(self, started: float) -> Result:
        status = self._reap() if self._process is not None else 0
        how = f"signal {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"
        return Result(
            error="crash",
            message=f"the worker died ({how})",
            seconds=time.perf_counter() - started,
        )

    def __del__(self) -> None:
        self.close()


def _read_message(stream: Any, deadline: float) -> bytes | None:
    """One length-prefixed message from ``stream``; None at the deadline, EOFError at EOF."""
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    buffer = b""
    want = _HEADER.size
    header_read = False
    try:
        while True:
            while len(buffer) < want:
                left = deadline - time.perf_counter()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(stream.fileno(), max(want - len(buffer), 1 << 16))
                if not chunk:
                    raise EOFError
                buffer += chunk
            if header_read:
                return buffer[_HEADER.size :]
            want += _HEADER.unpack(buffer[: _HEADER.size])[0]
            header_read = True
    finally:
        selector.close()


_LOCAL = threading.local()


def thread_worker() -> Worker:
    """This thread's worker (a dask worker thread keeps one across its tasks)."""
    if getattr(_LOCAL, "worker", None) is None:
        _LOCAL.worker = Worker()
    return _LOCAL.worker


def _orphan_watch(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def _serve() -> None:
    """The worker process: answer calls until stdin closes."""
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # a candidate's prints must not corrupt the channel
    threading.Thread(target=_orphan_watch, args=(os.getppid(),), daemon=True).start()
    requests = sys.stdin.buffer
    channel.write(_HEADER.pack(len(_READY)) + _READY)
    while True:
        header = requests.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        task, config, options = pickle.loads(requests.read(_HEADER.unpack(header)[0]))
        reply = pickle.dumps(measure_candidate(task, config, options))
        channel.write(_HEADER.pack(len(reply)) + reply)


if __name__ == "__main__":
    _serve()
