"""Schedule pieces shared by the GPU templates: binding a stage's elements one per thread, and
filling a shared-memory tile with every thread of the block."""

from __future__ import annotations

from compiler.errors import CompileError
from compiler.expr import IterVar
from compiler.schedule import Schedule
from compiler.te import Tensor

__all__ = ["bind_threads", "cooperative_fetch", "thread_choices"]


def thread_choices(elements: int, widths: tuple[int, ...] = (256, 128, 512, 64)) -> tuple[int, ...]:
    """Threads per block worth trying for ``elements`` independent outputs (default first)."""
    return tuple(w for w in widths if w <= elements) or (max(elements, 1),)


def bind_threads(s: Schedule, out: Tensor, threads: int, axes: tuple[IterVar, ...] = ()) -> IterVar:
    """Fuse ``axes`` (default: every axis of ``out``) and split them into blocks of ``threads``
    threads (blockIdx.x, threadIdx.x); returns the thread loop."""
    fused = s[out].fuse(*(axes or out.op.axis))
    block, thread = s[out].split(fused, threads)
    s[out].bind(block, "blockIdx.x")
    s[out].bind(thread, "threadIdx.x")
    return thread


def cooperative_fetch(s: Schedule, cache: Tensor, threads: tuple[int, int], elements: int) -> None:
    """Fill the shared ``cache`` (a tile of ``elements`` elements, as bound inference sizes it)
    with all ``ny x nx`` threads of the block: its axes fused and dealt out to the threads."""
    ny, nx = threads
    if elements < ny * nx:
        raise CompileError(
            f"a shared tile of {elements} elements cannot be filled by {ny * nx} threads "
            "(choose a larger reduction tile or fewer threads)",
            tensor=cache.name,
        )
    fused = s[cache].fuse(*cache.op.axis)
    _, flat = s[cache].split(fused, ny * nx)
    if ny == 1:
        s[cache].bind(flat, "threadIdx.x")
        return
    y, x = s[cache].split(flat, nx)
    s[cache].bind(y, "threadIdx.y")
    s[cache].bind(x, "threadIdx.x")
