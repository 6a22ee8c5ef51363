"""The native parallel launcher (:mod:`runtime.parallel_native`): compiled on this host, it
runs a parallel loop's body over exactly the chunks of :func:`runtime.parallel.chunks`, on as
many threads as asked, the caller taking the first; launches from several calling threads,
each with its own thread count, take turns and each gets its own chunks."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from runtime.parallel import NativeLauncher, ParallelLauncher, chunks, make_launcher
from runtime.parallel_native import native_launcher

_BODY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _launch(launcher: NativeLauncher, threads: int, extent: int) -> list[tuple[int, int, int]]:
    """``(begin, end, thread)`` of each chunk that one launch of ``extent`` ran."""
    ran: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def body(begin: int, end: int, closure: int | None) -> None:
        with lock:
            ran.append((begin, end, threading.get_ident()))

    callback = _BODY(body)
    pointer = launcher.pointer(threads)
    if pointer is None:
        callback(0, extent, None)
    else:
        _LAUNCH(pointer.value)(ctypes.cast(callback, ctypes.c_void_p), None, extent)
    return sorted(ran)


@pytest.fixture(scope="module")
def native() -> NativeLauncher:
    library = native_launcher()
    assert library is not None, "cc could not build the launcher (the kernels need cc too)"
    return NativeLauncher(library)


@pytest.mark.parametrize(("threads", "extent"), [(2, 10), (2, 3), (3, 7), (4, 2), (2, 1), (2, 0)])
def test_a_launch_runs_each_chunk_once_on_its_own_thread(native, threads, extent):
    ran = _launch(native, threads, extent)
    assert [(b, e) for b, e, _ in ran] == [c for c in chunks(extent, threads) if c[0] < c[1]]
    caller = threading.get_ident()
    first = [t for b, _, t in ran if b == 0]
    assert first == ([caller] if extent else [])
    assert len({t for *_, t in ran}) == len(ran)  # a thread per chunk


def test_launches_from_several_threads_take_turns(native):
    def one(k: int) -> bool:
        threads, extent = 2 + k % 3, 5 + k
        ran = _launch(native, threads, extent)
        return [(b, e) for b, e, _ in ran] == chunks(extent, threads)

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, range(24)))


def test_the_python_launcher_is_the_fallback(monkeypatch):
    assert isinstance(make_launcher("x"), NativeLauncher)
    monkeypatch.setenv("VTAFORGE_PYTHON_LAUNCHER", "1")
    assert isinstance(make_launcher("x"), ParallelLauncher)


def test_without_a_c_compiler_the_python_launcher_runs(tmp_path, monkeypatch):
    """No ``cc`` on the PATH and nothing cached: no native launcher, the Python one instead."""
    monkeypatch.setenv("VTAFORGE_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    native_launcher.cache_clear()
    try:
        assert native_launcher() is None
        assert isinstance(make_launcher("x"), ParallelLauncher)
    finally:
        native_launcher.cache_clear()


def test_a_forked_child_launches_on_a_pool_of_its_own(native):
    """The parent's pool threads do not exist in a forked child (the tuner measures in forked
    processes): the child's launches start their own and finish."""
    assert _launch(native, 2, 8)  # the parent's pool exists now
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's exit status is the assertion)
        ok = [(b, e) for b, e, _ in _launch(native, 2, 8)] == chunks(8, 2)
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(child, 9)
    os.waitpid(child, 0)
    pytest.fail("the forked child's launch hung")
