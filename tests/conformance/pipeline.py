"""The token protocol of a tiled, latency-hiding kernel, shared by the GEMM and conv2d cases.

It is what TVM's ``InjectVirtualThread`` + ``CoProcSync`` produce (vta-facts 3.3): each of
``threads`` virtual threads owns its own SRAM regions (double buffering); the threads' loads,
computes and stores are interleaved into one stream, and tokens order every reuse of a region:

- compute -> load (``g2l``): the compute that read a thread's INP/WGT region lets the next load
  into it proceed; the stream is primed with one such token per thread;
- load -> compute (``l2g``): the data of a reduction step is loaded;
- compute -> store (``g2s``): a thread's output tile is ready;
- store -> compute (``s2g``): its OUT rows are stored and may be overwritten; primed likewise.

Tokens are counters matched first-in first-out, so the i-th pop of a counter meets the i-th push:
with every group of tiles holding exactly ``threads`` tiles, each pop meets the push of the same
thread's previous use of the region.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from isa import ProgramBuilder
from isa import Stage as S

__all__ = ["TileSteps", "emit_pipeline"]

Tile = Any


@dataclass(frozen=True)
class TileSteps:
    """What to emit for tile ``tile`` handled by virtual thread ``thread``.

    ``load(tile, thread, step)`` (load module) and ``gemm(tile, thread, step)`` (compute) run
    for each of the ``steps`` reduction steps; ``reset`` and ``epilogue`` (compute) before and
    after them, ``store`` (store module) last.
    """

    steps: int
    reset: Callable[[Tile, int], None]
    load: Callable[[Tile, int, int], None]
    gemm: Callable[[Tile, int, int], None]
    epilogue: Callable[[Tile, int], None]
    store: Callable[[Tile, int], None]


def emit_pipeline(b: ProgramBuilder, tiles: Sequence[Tile], threads: int, parts: TileSteps) -> None:
    """Emit every tile, ``threads`` at a time, interleaved, with the tokens described above."""
    if len(tiles) % threads:
        raise ValueError(f"{len(tiles)} tiles do not split into groups of {threads} threads")
    for _ in range(threads):
        b.dep_push(S.COMPUTE, S.LOAD)
    for _ in range(threads):
        b.dep_push(S.STORE, S.COMPUTE)
    for first in range(0, len(tiles), threads):
        group = list(enumerate(tiles[first : first + threads]))
        for thread, tile in group:
            b.dep_pop(S.STORE, S.COMPUTE)
            parts.reset(tile, thread)
        for step in range(parts.steps):
            for thread, tile in group:
                b.dep_pop(S.COMPUTE, S.LOAD)
                parts.load(tile, thread, step)
                b.dep_push(S.LOAD, S.COMPUTE)
            for thread, tile in group:
                b.dep_pop(S.LOAD, S.COMPUTE)
                parts.gemm(tile, thread, step)
                b.dep_push(S.COMPUTE, S.LOAD)
        for thread, tile in group:
            parts.epilogue(tile, thread)
            b.dep_push(S.COMPUTE, S.STORE)
        for thread, tile in group:
            b.dep_pop(S.COMPUTE, S.STORE)
            parts.store(tile, thread)
            b.dep_push(S.STORE, S.COMPUTE)
