"""The native parallel launcher: a persistent pool of POSIX threads in C, so that launching a
native kernel's parallel loop costs a store that spinning workers see (or, after they have
waited a while, a condition variable's wake-up), not a Python callback.

The C source below is compiled by the host's C compiler (``cc``, which linking the LLVM
kernels needs too) into the kernel cache (:func:`runtime.model.kernels.kernel_cache_dir`,
keyed by a digest of the source) the first time a process asks for it, and loaded with
ctypes. It exports ``vtaforge_set_threads(n)``, how many threads share the calling thread's
next parallel loops (thread-local), and ``vtaforge_launch(body, closure, extent)``, the
launcher that kernels call: ``body(begin, end, closure)`` over the chunks of ``[0, extent)``
that :func:`runtime.parallel.chunks` makes (the larger first), the calling thread taking the
first chunk and the pool's threads the others, returning when all are done. A waiting thread
spins a little (4,000 pauses, about 0.1 ms) before it sleeps: a model launches
its kernels' loops back to back, and a sleeping worker's wake-up cost 50-100 us a launch on
this 2-core host (MobileNetV2 ran slower at two threads than at one). Launches from several
calling threads take turns (one pool); a forked child (the tuner's isolated measurements)
starts a pool of its own. Where no C compiler is installed (a board),
:func:`native_launcher` is None and the Python launcher (:class:`runtime.parallel.
ParallelLauncher`) runs the loops.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path

__all__ = ["NativeLauncher", "native_launcher"]

_SOURCE = r"""
#include <pthread.h>
#include <stdint.h>

typedef void (*body_fn)(int64_t begin, int64_t end, void *closure);

/* How long a waiting thread spins (checking, with a pause) before it sleeps: a model's
   kernels launch their loops back to back, tens of microseconds apart. */
#define SPINS 4000

static pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;   /* one launch at a time */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* the job, sleepers, workers */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int workers = 0, sleepers = 0;
static uint64_t generation = 0, created_at = 0;   /* generation: atomic reads outside lock */
static int pending = 0;                            /* atomic */
static body_fn job_body;
static void *job_closure;
static int64_t job_extent;
static int job_parts;
static __thread int wanted = 1;

static inline void pause_once(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void chunk(int part, int parts, int64_t extent, int64_t *begin, int64_t *end) {
    int64_t step = extent / parts, extra = extent % parts;
    *begin = part * step + (part < extra ? part : extra);
    *end = *begin + step + (part < extra ? 1 : 0);
}

static void *work(void *arg) {
    int index = (int)(intptr_t)arg;
    pthread_mutex_lock(&lock);
    uint64_t seen = created_at;
    pthread_mutex_unlock(&lock);
    for (;;) {
        int spins = 0;
        while (__atomic_load_n(&generation, __ATOMIC_ACQUIRE) == seen && ++spins < SPINS)
            pause_once();
        pthread_mutex_lock(&lock);
        while (generation == seen) {
            sleepers++;
            pthread_cond_wait(&wake, &lock);
            sleepers--;
        }
        seen = generation;   /* the job's fields as of this generation, read under the lock */
        int parts = job_parts;
        body_fn body = job_body;
        void *closure = job_closure;
        int64_t extent = job_extent;
        pthread_mutex_unlock(&lock);
        if (index >= parts)
            continue;
        int64_t begin, end;
        chunk(index, parts, extent, &begin, &end);
        body(begin, end, closure);
        if (__atomic_sub_fetch(&pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&lock);
            pthread_cond_signal(&done);
            pthread_mutex_unlock(&lock);
        }
    }
    return 0;
}

/* A forked child has none of the parent's workers (and may have copied a lock that a parent
   thread held): it starts with a fresh pool. */
static void fresh_pool_in_child(void) {
    pthread_mutex_init(&turn, 0);
    pthread_mutex_init(&lock, 0);
    pthread_cond_init(&wake, 0);
    pthread_cond_init(&done, 0);
    workers = sleepers = pending = 0;
}

static void register_fork_handler(void) {
    pthread_atfork(0, 0, fresh_pool_in_child);
}

static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;

int vtaforge_set_threads(int threads) {
    wanted = threads < 1 ? 1 : threads;
    return wanted;
}

void vtaforge_launch(void *body, void *closure, int64_t extent) {
    int parts = wanted < extent ? wanted : (int)extent;
    if (parts <= 1) {
        if (extent > 0)
            ((body_fn)body)(0, extent, closure);
        return;
    }
    pthread_once(&fork_handler_once, register_fork_handler);
    pthread_mutex_lock(&turn);
    pthread_mutex_lock(&lock);
    created_at = generation;
    while (workers < parts - 1) {
        pthread_t thread;
        if (pthread_create(&thread, 0, work, (void *)(intptr_t)(workers + 1)) != 0)
            break;
        pthread_detach(thread);
        workers++;
    }
    if (parts > workers + 1)
        parts = workers + 1;
    job_body = (body_fn)body;
    job_closure = closure;
    job_extent = extent;
    job_parts = parts;
    __atomic_store_n(&pending, parts - 1, __ATOMIC_RELEASE);
    __atomic_store_n(&generation, generation + 1, __ATOMIC_RELEASE);
    if (sleepers > 0)
        pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    int64_t begin, end;
    chunk(0, parts, extent, &begin, &end);
    ((body_fn)body)(begin, end, closure);
    int spins = 0;
    while (__atomic_load_n(&pending, __ATOMIC_ACQUIRE) > 0 && ++spins < SPINS)
        pause_once();
    pthread_mutex_lock(&lock);
    while (__atomic_load_n(&pending, __ATOMIC_ACQUIRE) > 0)
        pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&turn);
}
"""


@cache
def native_launcher() -> ctypes.CDLL | None:
    """The launcher's library, compiled once per host into the kernel cache, or None where it
    cannot be (no C compiler, an unwritable cache: the Python launcher then runs)."""
    from runtime.model.kernels import kernel_cache_dir

    digest = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    path = kernel_cache_dir() / f"launcher-{digest}.so"
    try:
        if not path.is_file():
            _compile(path)
        library = ctypes.CDLL(str(path))
    except (OSError, subprocess.CalledProcessError):
        return None
    library.vtaforge_set_threads.argtypes = [ctypes.c_int]
    library.vtaforge_set_threads.restype = ctypes.c_int
    return library


def _compile(path: Path) -> None:
    """Compile :data:`_SOURCE` into ``path``, whole or not at all (a concurrent run may
    race)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        source, built = Path(scratch) / "launcher.c", Path(scratch) / "launcher.so"
        source.write_text(_SOURCE)
        command = ["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", str(built), str(source)]
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        os.replace(built, path)


class NativeLauncher:
    """:class:`runtime.parallel.ParallelLauncher`'s interface over the native launcher
    (``library``, from :func:`native_launcher`): nothing a native body does can raise."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._library = library
        self._entry = ctypes.cast(library.vtaforge_launch, ctypes.c_void_p)

    def pointer(self, threads: int) -> ctypes.c_void_p | None:
        """The launcher argument of a native call on this thread: None (run on this thread)
        for one thread, else the native launcher, sharing each loop among ``threads``."""
        if threads <= 1:
            return None
        self._library.vtaforge_set_threads(threads)
        return self._entry

    def raise_error(self) -> None:
        """Nothing to raise: the chunks are native code."""
