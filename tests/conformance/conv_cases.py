"""A hand-built 3x3 conv2d (stride 1, pad 1) with requantisation, by row tiles, two virtual
threads: ``clip(((x * w) >> shift) + bias, 0, 127)`` as int8, VTA's ResNet-18 epilogue.

Layouts are VTA's packed ones (vta-facts 3.6): the input is ``CI/BI x H x W`` INP elements
(``N = BATCH`` images per element), weights ``CO/BO x CI/BI x 3 x 3`` WGT elements, the bias
``CO/BO`` ACC elements and the output ``CO/BO x H x W`` OUT elements. Each tile is ``tile_h``
output rows: the DMA pads the input (one column each side, one row at the image's top and
bottom), one GEMM with 9 x CI/BI x CO/BO micro-ops walks every output pixel, the ALU shifts, adds
the bias, clips, and one 2-D store writes the tile. Weights and bias are loaded once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa import AccelConfig, AluOp, Kernel, Loop, MemId, ProgramBuilder, Uop
from isa import Stage as S
from tests.conformance.common import (
    Built,
    ConformanceCase,
    Expectation,
    Size,
    as_bytes,
    built,
    random_ints,
    row_kernel,
)
from tests.conformance.pipeline import TileSteps, emit_pipeline

__all__ = ["CONV_CASES", "ConvShape", "build_conv2d", "conv2d_reference"]

_K = 3  # kernel size; pad 1, stride 1


@dataclass(frozen=True)
class ConvShape:
    height: int
    width: int
    in_channels: int
    out_channels: int
    tile_h: int
    threads: int = 2
    shift: int = 10

    def macs(self, cfg: AccelConfig) -> int:
        return cfg.batch * self.height * self.width * self.in_channels * self.out_channels * _K * _K


#: ResNet-18's C2 layer (vta-facts 6): 56x56, 64 -> 64 channels.
RESNET18_C2 = ConvShape(height=56, width=56, in_channels=64, out_channels=64, tile_h=2)


def conv2d_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy's int64 3x3 conv2d, pad 1: ``x`` is NCHW, ``w`` OIHW."""
    n, c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack(
        [padded[:, :, dy : dy + h, dx : dx + wd] for dy in range(_K) for dx in range(_K)], axis=2
    )  # N, C, 9, H, W
    cols = cols.transpose(0, 3, 4, 1, 2).reshape(n * h * wd, c * _K * _K)
    out = cols @ w.reshape(w.shape[0], -1).T
    return out.reshape(n, h, wd, -1).transpose(0, 3, 1, 2)


def build_conv2d(cfg: AccelConfig, seed: int, shape: ConvShape) -> Built:
    """The conv2d program for ``shape`` with seeded random data, and its numpy check."""
    rng = np.random.default_rng(seed)
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    ci, co = shape.in_channels // bi, shape.out_channels // bo
    h, wd, th = shape.height, shape.width, shape.tile_h
    if co < cfg.acc_raw_window + 1 or h % th:
        raise ValueError(f"{shape}: needs >= 3 output-channel blocks and whole row tiles")
    x = random_ints(rng, cfg.inp_width, (ci, h, wd, bt, bi))
    w = random_ints(rng, cfg.wgt_width, (co, ci, _K, _K, bo, bi))
    bias = random_ints(rng, cfg.acc_width, (co, bo), -64, 64)
    b = ProgramBuilder(cfg)
    x_buf = b.alloc("input", MemId.INP, ci * h * wd, as_bytes(x, cfg.inp_width))
    w_buf = b.alloc("weights", MemId.WGT, co * ci * _K * _K, as_bytes(w, cfg.wgt_width))
    bias_rows = np.broadcast_to(bias[:, None, :], (co, bt, bo))
    bias_buf = b.alloc(
        "bias", MemId.ACC, co, as_bytes(np.ascontiguousarray(bias_rows), cfg.acc_width)
    )
    y_buf = b.alloc("output", MemId.OUT, co * h * wd)

    plane = (th + 2) * (wd + 2)  # one padded input channel block of a tile
    inp_rows, acc_rows = ci * plane, co * th * wd
    bias_base = shape.threads * acc_rows
    b.load_2d(w_buf, sram=0, y_size=1, x_size=co * ci * _K * _K)
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
                wgt_idx=((o * ci + c) * _K + ky) * _K + kx,
            )
            for c in range(ci)
            for ky in range(_K)
            for kx in range(_K)
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

    nchw = x.transpose(3, 0, 4, 1, 2).reshape(bt, ci * bi, h, wd)
    oihw = w.transpose(0, 4, 1, 5, 2, 3).reshape(co * bo, ci * bi, _K, _K)
    conv = conv2d_reference(nchw, oihw)  # N, CO, H, W
    requant = np.clip((conv >> shape.shift) + bias.reshape(1, co * bo, 1, 1), 0, 127)
    expected = requant.reshape(bt, co, bo, h, wd).transpose(1, 3, 4, 0, 2)
    return built(b.finish(), [Expectation("conv2d", y_buf, expected, cfg.out_width)])


def _small(cfg: AccelConfig, seed: int) -> Built:
    """A 4x6 image, 2 input and 3 output channel blocks: every feature, any configuration."""
    shape = ConvShape(4, 6, in_channels=2 * cfg.block_in, out_channels=3 * cfg.block_out, tile_h=2)
    return build_conv2d(cfg, seed, shape)


CONV_CASES: tuple[ConformanceCase, ...] = (
    ConformanceCase("conv2d_small", _small),
    ConformanceCase(
        "conv2d_resnet18_c2",
        lambda cfg, seed: build_conv2d(cfg, seed, RESNET18_C2),
        ("default",),
        Size.LARGE,
    ),
)
