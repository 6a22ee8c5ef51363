"""Hand-built accelerator programs written with :class:`isa.ProgramBuilder` (the tests'
conformance fixtures and the benchmarks' peers): the token protocol of tiled, latency-hiding
programs, and a 3x3 conv2d layer with VTA's ResNet-18 epilogue.

:func:`emit_pipeline` is what TVM's ``InjectVirtualThread`` + ``CoProcSync`` produce
(vta-facts 3.3): each of ``threads`` virtual threads owns its own SRAM regions (double
buffering); the threads' loads, computes and stores are interleaved into one stream, and tokens
order every reuse of a region:

- compute -> load (``g2l``): the compute that read a thread's INP/WGT region lets the next load
  into it proceed; the stream is primed with one such token per thread;
- load -> compute (``l2g``): the data of a reduction step is loaded;
- compute -> store (``g2s``): a thread's output tile is ready;
- store -> compute (``s2g``): its OUT rows are stored and may be overwritten; primed likewise.

Tokens are counters matched first-in first-out, so the i-th pop of a counter meets the i-th push:
with every group of tiles holding exactly ``threads`` tiles, each pop meets the push of the same
thread's previous use of the region. With one thread, loading a tile waits for the compute of the
previous one; with two, it overlaps it.

:func:`conv2d_program` is a 3x3 conv2d (stride 1, pad 1) with requantisation,
``clip(((x * w) >> shift) + bias, 0, 127)`` as int8, by tiles of ``tile_h`` output rows. Layouts
are VTA's packed ones (vta-facts 3.6): the input is ``CI/BI x H x W`` INP elements, the weights
``CO/BO x CI/BI x 3 x 3`` WGT elements, the bias ``CO/BO`` ACC elements and the output
``CO/BO x H x W`` OUT elements. Per tile, the DMA pads the input (one column each side, one row at
the image's top and bottom), one GEMM of ``9 x CI/BI x CO/BO`` micro-ops walks every output pixel,
the ALU shifts, adds the bias and clips, and one 2-D store writes the tile. Weights and bias are
loaded once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from isa import (
    AccelConfig,
    AluOp,
    BuilderError,
    DramBuffer,
    Kernel,
    Loop,
    MemId,
    Program,
    ProgramBuilder,
    Uop,
)
from isa import Stage as S

__all__ = [
    "KERNEL",
    "RESNET18_C2",
    "ConvProgram",
    "ConvShape",
    "TileSteps",
    "conv2d_program",
    "emit_pipeline",
    "row_kernel",
]

Tile = Any
KERNEL = 3  # the conv's kernel size; pad 1, stride 1


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
    if threads < 1 or len(tiles) % threads:
        raise BuilderError(f"{len(tiles)} tiles do not split into groups of {threads} threads")
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


def row_kernel(dst: int, src: int, rows: int) -> Kernel:
    """One micro-op walked over ``rows`` consecutive accumulator rows (dst and src alike)."""
    return Kernel((Uop(dst_idx=dst, src_idx=src),), (Loop(rows, dst_factor=1, src_factor=1),))


@dataclass(frozen=True)
class ConvShape:
    """A 3x3 conv2d layer (stride 1, pad 1) and its schedule: output rows per tile, virtual
    threads, and the requantising right shift."""

    height: int
    width: int
    in_channels: int
    out_channels: int
    tile_h: int
    threads: int = 2
    shift: int = 10

    def macs(self, cfg: AccelConfig) -> int:
        """Multiply-accumulates of the layer (``batch`` images)."""
        k2 = KERNEL * KERNEL
        return cfg.batch * self.height * self.width * self.in_channels * self.out_channels * k2


#: ResNet-18's C2 layer (vta-facts 6): 56x56, 64 -> 64 channels.
RESNET18_C2 = ConvShape(height=56, width=56, in_channels=64, out_channels=64, tile_h=2)


@dataclass(frozen=True)
class ConvProgram:
    """A built conv2d: the program and the DRAM buffers it reads and writes."""

    program: Program
    inputs: DramBuffer
    weights: DramBuffer
    bias: DramBuffer
    output: DramBuffer


def conv2d_program(
    cfg: AccelConfig,
    shape: ConvShape,
    inputs: bytes | None = None,
    weights: bytes | None = None,
    bias: bytes | None = None,
) -> ConvProgram:
    """The conv2d program for ``shape`` (module docstring) with its data in DRAM.

    ``inputs``, ``weights`` and ``bias`` are the packed INP, WGT and ACC elements as bytes
    (``bias`` holds one ACC element per output-channel block); None leaves a buffer zeroed.
    Raises BuilderError if the layer does not suit ``cfg`` (channels not whole blocks, tiles
    that do not fit the buffers).
    """
    bi, bo = cfg.block_in, cfg.block_out
    ci, co = shape.in_channels // bi, shape.out_channels // bo
    h, wd, th = shape.height, shape.width, shape.tile_h
    if shape.in_channels % bi or shape.out_channels % bo:
        raise BuilderError(f"{shape}: channels must be whole blocks of {bi} in, {bo} out")
    if co < cfg.acc_raw_window + 1 or h % th:
        raise BuilderError(f"{shape}: needs >= 3 output-channel blocks and whole row tiles")
    b = ProgramBuilder(cfg)
    x_buf = b.alloc("input", MemId.INP, ci * h * wd, inputs)
    w_buf = b.alloc("weights", MemId.WGT, co * ci * KERNEL * KERNEL, weights)
    bias_buf = b.alloc("bias", MemId.ACC, co, bias)
    y_buf = b.alloc("output", MemId.OUT, co * h * wd)

    plane = (th + 2) * (wd + 2)  # one padded input channel block of a tile
    inp_rows, acc_rows = ci * plane, co * th * wd
    bias_base = shape.threads * acc_rows
    b.load_2d(w_buf, sram=0, y_size=1, x_size=co * ci * KERNEL * KERNEL)
    b.dep_push(S.LOAD, S.COMPUTE)
    b.dep_pop(S.LOAD, S.COMPUTE)
    b.load_2d(bias_buf, sram=bias_base, y_size=1, x_size=co)

    def reset(row, thread):
        b.gemm(row_kernel(thread * acc_rows, 0, acc_rows), reset=True)

    def load(row, thread, step):
        top, bottom = int(row == 0), int(row + th == h)
        for c in range(ci):
            b.load_2d(
                x_buf,
                sram=thread * inp_rows + c * plane,
                y_size=th + 2 - top - bottom,
                x_size=wd,
                offset=(c * h + row - 1 + top) * wd,
                y_pad_0=top,
                y_pad_1=bottom,
                x_pad_0=1,
                x_pad_1=1,
            )

    # Micro-ops over (input block, ky, kx, output block), the output block innermost so that
    # consecutive steps write different accumulator rows; loops over the tile's rows and columns.
    def conv_kernel(thread: int) -> Kernel:
        uops = tuple(
            Uop(
                dst_idx=thread * acc_rows + o * th * wd,
                src_idx=thread * inp_rows + c * plane + ky * (wd + 2) + kx,
                wgt_idx=((o * ci + c) * KERNEL + ky) * KERNEL + kx,
            )
            for c in range(ci)
            for ky in range(KERNEL)
            for kx in range(KERNEL)
            for o in range(co)
        )
        return Kernel(uops, (Loop(th, dst_factor=wd, src_factor=wd + 2), Loop(wd, 1, 1)))

    def gemm(row, thread, step):
        b.gemm(conv_kernel(thread))

    def epilogue(row, thread):
        base = thread * acc_rows
        pixels = row_kernel(base, base, acc_rows)
        b.alu(pixels, AluOp.SHR, imm=shape.shift)
        per_block = tuple(Uop(dst_idx=base + o * th * wd, src_idx=bias_base + o) for o in range(co))
        b.alu(Kernel(per_block, (Loop(th * wd, dst_factor=1),)), AluOp.ADD)
        b.alu(pixels, AluOp.MAX, imm=0)
        b.alu(pixels, AluOp.MIN, imm=127)

    def store(row, thread):
        b.store_2d(
            y_buf,
            sram=thread * acc_rows,
            y_size=co,
            x_size=th * wd,
            x_stride=h * wd,
            offset=row * wd,
        )

    rows = list(range(0, h, th))
    emit_pipeline(b, rows, shape.threads, TileSteps(1, reset, load, gemm, epilogue, store))
    return ConvProgram(b.finish(), x_buf, w_buf, bias_buf, y_buf)
