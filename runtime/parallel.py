"""The parallel launcher that native kernels call for each parallel loop.

A kernel compiled by the LLVM backend takes, after its arguments, a pointer to a launcher:
null runs every parallel loop on the calling thread; otherwise, for each parallel loop, native
code calls ``launcher(body, closure, extent)``, and the launcher runs ``body(begin, end,
closure)`` over chunks of ``[0, extent)`` on a thread pool, the calling thread taking the
first. :func:`make_launcher` gives the launcher that the compiler's callable kernels
(:mod:`compiler.codegen.runtime`) and a compiled model's CPU steps (:mod:`runtime.model`) use:
the native one (:mod:`runtime.parallel_native`, a pool of POSIX threads: a launch costs a
wake-up) where the host can compile it, else :class:`ParallelLauncher`, in Python (native code
calls into ctypes, which releases the GIL, so the chunks truly run at once, but each launch
costs a Python callback and a pool submission, tens of microseconds).
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from runtime.parallel_native import NativeLauncher, native_launcher

__all__ = ["Launcher", "NativeLauncher", "ParallelLauncher", "chunks", "make_launcher"]

#: ``launcher(body, closure, extent)``, as native code calls it.
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
#: ``body(begin, end, closure)``: one chunk of a parallel loop.
_BODY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)


def chunks(extent: int, parts: int) -> list[tuple[int, int]]:
    """``[0, extent)`` split into at most ``parts`` contiguous ranges whose sizes differ by at
    most one (the larger first)."""
    parts = max(1, min(parts, extent))
    step, extra = divmod(extent, parts)
    bounds, begin = [], 0
    for part in range(parts):
        end = begin + step + (1 if part < extra else 0)
        bounds.append((begin, end))
        begin = end
    return bounds


class ParallelLauncher:
    """A launcher whose thread pool (``name`` its threads' prefix; every CPU but the caller's)
    starts on first use. Each calling thread says how many threads share its loops with
    :meth:`pointer`, and collects what a chunk raised with :meth:`raise_error` after the call:
    an exception never unwinds through native frames."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._local = threading.local()
        self._callback = _LAUNCH(self._launch)

    def pointer(self, threads: int) -> ctypes.c_void_p | None:
        """The launcher argument of a native call on this thread: None (run on this thread)
        for one thread, else this launcher, sharing each loop among ``threads``."""
        self._local.threads = threads
        self._local.error = None
        return ctypes.cast(self._callback, ctypes.c_void_p) if threads > 1 else None

    def raise_error(self) -> None:
        """Raise what a chunk of this thread's last native call raised, if anything."""
        error = getattr(self._local, "error", None)
        if error is not None:
            self._local.error = None
            raise error

    def _launch(self, body: int, closure: int, extent: int) -> None:
        try:
            run = _BODY(body)
            ranges = chunks(extent, self._local.threads)
            pool = self._thread_pool()
            futures = [pool.submit(run, b, e, closure) for b, e in ranges[1:]]
            run(ranges[0][0], ranges[0][1], closure)
            for future in futures:
                future.result()
        except BaseException as error:  # never unwind through native frames
            self._local.error = error

    def _thread_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=max(1, (os.cpu_count() or 1) - 1),
                    thread_name_prefix=f"vtaforge-{self.name}",
                )
            return self._pool


#: What :func:`make_launcher` gives: a native or a Python launcher.
Launcher = ParallelLauncher | NativeLauncher


def make_launcher(name: str) -> Launcher:
    """The launcher for kernels named ``name``: native where this host compiled it (unless
    the ``VTAFORGE_PYTHON_LAUNCHER`` variable is set), else :class:`ParallelLauncher`."""
    library = None if os.environ.get("VTAFORGE_PYTHON_LAUNCHER") else native_launcher()
    return NativeLauncher(library) if library is not None else ParallelLauncher(name)
