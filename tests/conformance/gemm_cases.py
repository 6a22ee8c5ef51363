"""GEMM cases: VTA's ``test_gemm`` (plain and with 2 virtual threads) and blocked GEMM with 1
and 2 virtual threads, each followed by the requantising epilogue ``>> shift``, ``max 0``,
``min 127``.

Matrices are in units of the core's blocks: ``A`` is ``m x k`` INP elements (BATCH x BLOCK_IN),
``W`` is ``n x k`` WGT elements (BLOCK_OUT x BLOCK_IN, stored transposed) and ``C = A W^T`` is
``m x n`` OUT elements. Output tiles are ``tile_m x tile_n`` elements, reduced ``tile_k`` at a
time; virtual threads take turns over the tiles (:func:`runtime.programs.emit_pipeline`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa import AccelConfig, AluOp, Kernel, Loop, MemId, ProgramBuilder, Uop
from runtime.programs import TileSteps, emit_pipeline, row_kernel
from tests.conformance.common import (
    Built,
    ConformanceCase,
    Expectation,
    Size,
    as_bytes,
    built,
    random_ints,
)

__all__ = ["GEMM_CASES", "GemmShape", "build_gemm"]


@dataclass(frozen=True)
class GemmShape:
    m: int
    k: int
    n: int
    tile_m: int
    tile_k: int
    tile_n: int
    threads: int
    shift: int = 8


def build_gemm(cfg: AccelConfig, seed: int, shape: GemmShape) -> Built:
    """``clip((A @ W^T) >> shift, 0, 127)`` by tiles, with ``shape.threads`` virtual threads."""
    rng = np.random.default_rng(seed)
    b_, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    a = random_ints(rng, cfg.inp_width, (shape.m, shape.k, b_, bi))
    w = random_ints(rng, cfg.wgt_width, (shape.n, shape.k, bo, bi))
    b = ProgramBuilder(cfg)
    a_buf = b.alloc("A", MemId.INP, shape.m * shape.k, as_bytes(a, cfg.inp_width))
    w_buf = b.alloc("W", MemId.WGT, shape.n * shape.k, as_bytes(w, cfg.wgt_width))
    c_buf = b.alloc("C", MemId.OUT, shape.m * shape.n)
    tm, tk, tn = shape.tile_m, shape.tile_k, shape.tile_n
    inp_rows, wgt_rows, acc_rows = tm * tk, tn * tk, tm * tn

    def reset(tile, thread):
        b.gemm(_grid(thread * acc_rows, 0, 0, tm, tn, tk, reset=True), reset=True)

    def load(tile, thread, step):
        # the tile's rows of A, then of W: rows of tile_k elements, k elements apart in DRAM
        for buffer, first_row, rows, sram in (
            (a_buf, tile[0] * tm, tm, thread * inp_rows),
            (w_buf, tile[1] * tn, tn, thread * wgt_rows),
        ):
            offset = first_row * shape.k + step * tk
            b.load_2d(buffer, sram=sram, y_size=rows, x_size=tk, x_stride=shape.k, offset=offset)

    def gemm(tile, thread, step):
        b.gemm(_grid(thread * acc_rows, thread * inp_rows, thread * wgt_rows, tm, tn, tk))

    def epilogue(tile, thread):
        rows = row_kernel(thread * acc_rows, thread * acc_rows, acc_rows)
        b.alu(rows, AluOp.SHR, imm=shape.shift)
        b.alu(rows, AluOp.MAX, imm=0)
        b.alu(rows, AluOp.MIN, imm=127)

    def store(tile, thread):
        i, j = tile
        b.store_2d(
            c_buf,
            sram=thread * acc_rows,
            y_size=tm,
            x_size=tn,
            x_stride=shape.n,
            offset=i * tm * shape.n + j * tn,
        )

    tiles = [(i, j) for i in range(shape.m // tm) for j in range(shape.n // tn)]
    steps = TileSteps(shape.k // tk, reset, load, gemm, epilogue, store)
    emit_pipeline(b, tiles, shape.threads, steps)
    product = np.einsum("ikbc,jkoc->ijbo", a, w)
    expected = np.clip(product >> shape.shift, 0, 127)
    return built(b.finish(), [Expectation("gemm", c_buf, expected, cfg.out_width)])


def _grid(acc: int, inp: int, wgt: int, tm: int, tn: int, tk: int, reset: bool = False) -> Kernel:
    """Micro-ops over the tile's columns, loops over its rows and the reduction.

    Steps run through the ``tm * tn`` output elements innermost, so consecutive steps never
    touch the same accumulator row (the read-after-write window); the reduction is the outer
    loop. A reset needs no reduction loop.
    """
    uops = tuple(Uop(dst_idx=acc + j, src_idx=inp, wgt_idx=wgt + j * tk) for j in range(tn))
    rows = Loop(tm, dst_factor=tn, src_factor=tk)
    if reset:
        return Kernel(uops, (rows,))
    return Kernel(uops, (Loop(tk, src_factor=1, wgt_factor=1), rows))


def _case(name: str, shape: GemmShape, size: Size = Size.SMALL, presets=("default", "tiny")):
    return ConformanceCase(name, lambda cfg, seed: build_gemm(cfg, seed, shape), presets, size)


GEMM_CASES: tuple[ConformanceCase, ...] = (
    # VTA's test_gemm: 4 input rows x 4 weight tiles, one block of reduction.
    _case("gemm", GemmShape(m=4, k=1, n=4, tile_m=4, tile_k=1, tile_n=4, threads=1)),
    _case("gemm_vt2", GemmShape(m=4, k=1, n=4, tile_m=4, tile_k=1, tile_n=2, threads=2)),
    _case("blocked_gemm_vt1", GemmShape(m=16, k=8, n=8, tile_m=4, tile_k=4, tile_n=4, threads=1)),
    _case("blocked_gemm_vt2", GemmShape(m=16, k=8, n=8, tile_m=4, tile_k=4, tile_n=4, threads=2)),
    # VTA's blocked_gemm_test(256, 256, 64): 256 rows, 256 channels, 64-channel tiles.
    _case(
        "blocked_gemm_vta_vt2",
        GemmShape(m=256, k=16, n=16, tile_m=64, tile_k=4, tile_n=4, threads=2),
        Size.LARGE,
        ("default",),
    ),
)
