"""The conv2d cases: :func:`runtime.programs.conv2d_program` on seeded random data, checked
against an independent numpy conv2d with the same requantisation,
``clip(((x * w) >> shift) + bias, 0, 127)`` as int8 (VTA's ResNet-18 epilogue)."""

from __future__ import annotations

import numpy as np

from isa import AccelConfig
from runtime.programs import KERNEL, RESNET18_C2, ConvShape, conv2d_program
from tests.conformance.common import (
    Built,
    ConformanceCase,
    Expectation,
    Size,
    as_bytes,
    built,
    random_ints,
)

__all__ = ["CONV_CASES", "build_conv2d", "conv2d_reference"]


def conv2d_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy's int64 3x3 conv2d, pad 1: ``x`` is NCHW, ``w`` OIHW."""
    n, c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack(
        [padded[:, :, dy : dy + h, dx : dx + wd] for dy in range(KERNEL) for dx in range(KERNEL)],
        axis=2,
    )  # N, C, 9, H, W
    cols = cols.transpose(0, 3, 4, 1, 2).reshape(n * h * wd, c * KERNEL * KERNEL)
    out = cols @ w.reshape(w.shape[0], -1).T
    return out.reshape(n, h, wd, -1).transpose(0, 3, 1, 2)


def build_conv2d(cfg: AccelConfig, seed: int, shape: ConvShape) -> Built:
    """The conv2d program for ``shape`` with seeded random data, and its numpy check."""
    rng = np.random.default_rng(seed)
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    ci, co = shape.in_channels // bi, shape.out_channels // bo
    h, wd = shape.height, shape.width
    x = random_ints(rng, cfg.inp_width, (ci, h, wd, bt, bi))
    w = random_ints(rng, cfg.wgt_width, (co, ci, KERNEL, KERNEL, bo, bi))
    bias = random_ints(rng, cfg.acc_width, (co, bo), -64, 64)
    bias_rows = np.ascontiguousarray(np.broadcast_to(bias[:, None, :], (co, bt, bo)))
    conv = conv2d_program(
        cfg,
        shape,
        as_bytes(x, cfg.inp_width),
        as_bytes(w, cfg.wgt_width),
        as_bytes(bias_rows, cfg.acc_width),
    )
    nchw = x.transpose(3, 0, 4, 1, 2).reshape(bt, ci * bi, h, wd)
    oihw = w.transpose(0, 4, 1, 5, 2, 3).reshape(co * bo, ci * bi, KERNEL, KERNEL)
    result = conv2d_reference(nchw, oihw)  # N, CO, H, W
    requant = np.clip((result >> shape.shift) + bias.reshape(1, co * bo, 1, 1), 0, 127)
    expected = requant.reshape(bt, co, bo, h, wd).transpose(1, 3, 4, 0, 2)
    return built(conv.program, [Expectation("conv2d", conv.output, expected, cfg.out_width)])


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
