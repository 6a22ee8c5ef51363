"""Hand-written TVM-style GPU schedules the tests share (templates: compiler.templates.gpu)."""

from __future__ import annotations

from compiler import create_schedule, te
from compiler.schedule import Schedule
from compiler.te import Tensor


def tiled_matmul(
    m: int, n: int, k: int, tile: int = 8, tile_k: int = 8, registers: bool = False
) -> tuple[Schedule, list[Tensor]]:
    """``C = A @ B``: ``tile x tile`` threads per block, each one element of ``C`` in a local
    accumulator; both operands staged through shared memory ``tile_k`` columns at a time (and,
    with ``registers``, ``A``'s slice copied on to a local cache per thread)."""
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((k, n), name="B")
    r = te.reduce_axis(k, "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    s = create_schedule(c)
    a_shared = s.cache_read(a, "shared", [c])
    b_shared = s.cache_read(b, "shared", [c])
    acc = s.cache_write(c, "local")
    i, j = c.op.axis
    bi, ti = s[c].split(i, tile)
    bj, tj = s[c].split(j, tile)
    s[c].reorder(bi, bj, ti, tj)
    for axis, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y")):
        s[c].bind(axis, tag)
    s[c].bind(tj, "threadIdx.x")
    s[acc].compute_at(s[c], tj)
    a_local = s.cache_read(a_shared, "local", [acc]) if registers else None
    ko, _ = s[acc].split(acc.op.reduce_axis[0], tile_k)
    if a_local is not None:
        s[a_local].compute_at(s[acc], ko)
    for cache in (a_shared, b_shared):
        s[cache].compute_at(s[acc], ko)
        _, flat = s[cache].split(s[cache].fuse(*cache.op.axis), tile * tile)
        y, x = s[cache].split(flat, tile)
        s[cache].bind(y, "threadIdx.y")
        s[cache].bind(x, "threadIdx.x")
    return s, [a, b, c]


def reversed_blocks(n: int, block: int) -> tuple[Schedule, list[Tensor]]:
    """``C[i] = A[i]`` reversed within each block of ``block`` elements, through shared memory:
    each thread reads the element another thread copied in (so it needs the barrier)."""
    a = te.placeholder((n,), name="A")
    c = te.compute((n,), lambda i: a[i // block * block + (block - 1 - i % block)], name="C")
    s = create_schedule(c)
    shared = s.cache_read(a, "shared", [c])
    bo, bi = s[c].split(c.op.axis[0], block)
    s[c].bind(bo, "blockIdx.x")
    s[c].bind(bi, "threadIdx.x")
    s[shared].compute_at(s[c], bo)
    _, thread = s[shared].split(shared.op.axis[0], block)
    s[shared].bind(thread, "threadIdx.x")
    return s, [a, c]
