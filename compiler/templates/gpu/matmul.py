"""Matrix multiplication ``C = A @ B`` for CUDA GPUs: shared-memory tiling, register blocking.

Each block computes a ``tile_m x tile_n`` tile of ``C``; each of its
``(tile_m / reg_m) x (tile_n / reg_n)`` threads a ``reg_m x reg_n`` sub-tile held in registers
(a local accumulator, unrolled) over the whole ``k`` loop. ``k`` advances ``tile_k`` at a time:
all threads of the block first copy the ``tile_m x tile_k`` slice of ``A`` and the
``tile_k x tile_n`` slice of ``B`` into shared memory, wait at a barrier, and then accumulate
from there. ``tile_k`` grows where needed so that every thread has at least one element to copy
(an operand with too few, as when ``k`` is tiny, is read from global memory instead).
"""

from __future__ import annotations

from compiler import te
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.gpu._schedule import cooperative_fetch
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["GPU_MATMUL"]


def _dims(a: Tensor, b: Tensor) -> tuple[int, int, int]:
    if a.ndim != 2 or b.ndim != 2:
        raise CompileError("matmul needs two matrices", tensor=a.name if a.ndim != 2 else b.name)
    (m, k), (kb, n) = a.shape, b.shape
    if k != kb:
        raise CompileError(f"inner extents differ: {k} and {kb}", tensor=b.name, op="matmul")
    return m, n, k


def _space(a: Tensor, b: Tensor) -> KnobSpace:
    _dims(a, b)
    return KnobSpace(
        (
            Knob("tile_m", (64, 32, 128)),
            Knob("tile_n", (64, 32, 128)),
            Knob("reg_m", (4, 8)),
            Knob("reg_n", (4, 8)),
            Knob("tile_k", (8, 16, 4)),
            Knob("unroll", (True, False)),
        )
    )


def _declare(a: Tensor, b: Tensor, cfg: Config) -> tuple[Schedule, Tensor]:
    m, n, k_extent = _dims(a, b)
    bm, bn = min(cfg["tile_m"], m), min(cfg["tile_n"], n)
    rm, rn = min(cfg["reg_m"], bm), min(cfg["reg_n"], bn)
    ty, tx = -(-bm // rm), -(-bn // rn)
    bk = min(k_extent, max(cfg["tile_k"], -(-ty * tx // min(bm, bn))))
    k = te.reduce_axis(k_extent, "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = create_schedule(c)
    tiles = ((a, ty * rm * bk), (b, bk * tx * rn))  # each operand's tile, in elements
    # an operand too thin to give every thread an element to copy is read from global memory
    shared = [(s.cache_read(t, "shared", [c]), n) for t, n in tiles if n >= ty * tx]
    acc = s.cache_write(c, "local")
    i, j = c.op.axis
    block_i, inner_i = s[c].split(i, bm)
    block_j, inner_j = s[c].split(j, bn)
    thread_i, reg_i = s[c].split(inner_i, rm)
    thread_j, reg_j = s[c].split(inner_j, rn)
    s[c].reorder(block_i, block_j, thread_i, thread_j, reg_i, reg_j)
    s[c].bind(block_i, "blockIdx.y")
    s[c].bind(block_j, "blockIdx.x")
    s[c].bind(thread_i, "threadIdx.y")
    s[c].bind(thread_j, "threadIdx.x")
    s[acc].compute_at(s[c], thread_j)
    x, y = acc.op.axis
    (reduce,) = acc.op.reduce_axis
    k_outer, k_inner = s[acc].split(reduce, bk)
    s[acc].reorder(k_outer, k_inner, x, y)
    if cfg["unroll"]:
        s[acc].unroll(x)
        s[acc].unroll(y)
    for cache, elements in shared:
        s[cache].compute_at(s[acc], k_outer)
        cooperative_fetch(s, cache, (ty, tx), elements)
    return s, c


GPU_MATMUL = Template("gpu_matmul", _space, _declare)
