"""Pooling on the accelerator's ALU: max pooling and global average pooling of int8
activations packed ``(N/B, C/BLOCK_OUT, H, W, B, BLOCK_OUT)``. VTA ran both on the CPU.

Max pooling (any window, stride, padding; ``ceil_mode`` as ONNX's, the last windows running
past the input and its padding as far as the count needs) is one MAX per window tap over a
tile's rows, after copying the first tap. Padding is zeros (the DMA's, on the far side as
much more as ceil mode needs), which equals the usual -inf padding whenever the input is
non-negative, as after a ReLU (ResNet's max pooling): the declaration says zeros, and the
reference must too.

Global average pooling sums every pixel of a channel block (ADD per pixel, channel blocks
innermost so consecutive steps write different rows) and divides by ``H * W`` as
``(sum * multiplier) >> shift`` (rounding to nearest with ``round``): the multiplier (at most
the ALU's 8-bit operand) and shift that approximate ``1 / (H * W)`` best, e.g. ``84 / 4096`` for
7x7. That needs the ALU's MUL unless ``H * W`` is a power of two (a multiplier of 1): on a
configuration without ``alu_mul`` the other sizes are a CompileError.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from compiler import te
from compiler.accel.env import Env
from compiler.accel.templates._tiles import (
    check_activation,
    check_tiles,
    tile_space,
    tiled_schedule,
)
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates import nn
from compiler.templates.knobs import Config, Knob, KnobSpace, Template
from isa import AluOp
from runtime.opset.windows import window_count

__all__ = ["GLOBAL_AVG_POOL", "MAX_POOL", "average_divisor"]


@dataclass(frozen=True)
class _Pooling:
    """A max pooling's geometry: the output shape, and the padding on the near side and on
    the far side of each spatial axis (more there in ceil mode)."""

    shape: tuple[int, ...]
    before: int
    after: tuple[int, int]


def _pooling(data: Tensor, window: int, stride: int, padding: int, ceil_mode: bool) -> _Pooling:
    n, c, h, w, b, i = data.shape
    if window < 1 or stride < 1 or padding < 0:
        raise CompileError(f"window {window}, stride {stride}, padding {padding}", op="max_pool")
    pads = (padding, padding)
    oh, ow = (window_count(size, window, stride, pads, ceil=ceil_mode) for size in (h, w))
    if oh < 1 or ow < 1:
        raise CompileError(f"window {window}, stride {stride}, padding {padding}", op="max_pool")
    after = tuple(
        max(padding, (out - 1) * stride + window - size - padding)
        for out, size in ((oh, h), (ow, w))
    )
    return _Pooling((n, c, oh, ow, b, i), padding, after)


def _max_rows(data: Tensor, window: int, stride: int, pooling: _Pooling) -> Any:
    def rows(config: Config) -> int:
        in_h = (config["tile_h"] - 1) * stride + window
        return config["tile_c"] * in_h * (data.shape[3] + pooling.before + pooling.after[1])

    return rows


def _max_space(
    data: Tensor,
    *,
    env: Env,
    window: int = 2,
    stride: int = 2,
    padding: int = 0,
    ceil_mode: bool = False,
    **_: Any,
) -> KnobSpace:
    check_activation(env, data, "max_pool")
    pooling = _pooling(data, window, stride, padding, ceil_mode)
    rows = _max_rows(data, window, stride, pooling)
    return tile_space(env, "max_pool", pooling.shape, rows, window**2 + 1)


def _max_declare(
    data: Tensor,
    *,
    cfg: Config,
    env: Env,
    window: int = 2,
    stride: int = 2,
    padding: int = 0,
    ceil_mode: bool = False,
) -> tuple[Schedule, Tensor]:
    check_activation(env, data, "max_pool")
    pooling = _pooling(data, window, stride, padding, ceil_mode)
    shape = pooling.shape
    check_tiles(env, "max_pool", shape, cfg, _max_rows(data, window, stride, pooling))
    p, (after_h, after_w) = pooling.before, pooling.after
    padded = (
        nn.pad(data, [0, 0, p, p, 0, 0], [0, 0, after_h, after_w, 0, 0], name="data_pad")
        if p or after_h or after_w
        else data
    )
    loaded = te.compute(padded.shape, lambda *i: padded(*i).astype(env.acc_dtype), name="data_acc")
    taps = [(dy, dx) for dy in range(window) for dx in range(window)]

    def pooled(n, c, y, x, b, i):
        values = [loaded[n, c, y * stride + dy, x * stride + dx, b, i] for dy, dx in taps]
        return reduce(te.max, values)

    result = te.compute(shape, pooled, name="res_max")
    res = te.compute(shape, lambda *i: result(*i).astype(env.out_dtype), name="res")
    s = tiled_schedule(env, res, [loaded], [result], cfg)
    if padded is not data:
        s[padded].compute_inline()
    return s, res


#: ``MAX_POOL(data, env=env, window=2, stride=2, padding=0, ceil_mode=False, config=...)``.
MAX_POOL = Template("max_pool_packed", _max_space, _max_declare)


def average_divisor(pixels: int, mul_bits: int) -> tuple[int, int]:
    """(multiplier, shift) with ``multiplier / 2**shift`` closest to ``1 / pixels`` and the
    multiplier a positive ``mul_bits``-bit signed value."""
    best = None
    for shift in range(0, 31):
        multiplier = round((1 << shift) / pixels)
        if not 0 < multiplier < (1 << (mul_bits - 1)):
            continue
        error = abs(multiplier / (1 << shift) - 1 / pixels)
        if best is None or error < best[0]:
            best = (error, multiplier, shift)
    if best is None:
        raise CompileError(f"no multiplier approximates 1/{pixels}", op="global_avg_pool")
    return best[1], best[2]


def _divisor(env: Env, data: Tensor) -> tuple[int, int]:
    """:func:`average_divisor` of ``data``'s pixels; a CompileError when its multiplier needs
    the ALU's MUL and the configuration has none (a power-of-two count only shifts)."""
    h, w = data.shape[2:4]
    multiplier, shift = average_divisor(h * w, env.cfg.mul_arg_bits)
    why = env.cfg.missing_alu_op(AluOp.MUL)
    if multiplier != 1 and why is not None:
        raise CompileError(
            f"averaging {h}x{w} pixels multiplies by {multiplier} (then shifts right by "
            f"{shift}), but {why}",
            op="global_avg_pool",
        )
    return multiplier, shift


def _avg_space(data: Tensor, *, env: Env, **_: Any) -> KnobSpace:
    check_activation(env, data, "global_avg_pool")
    _divisor(env, data)
    return KnobSpace((Knob("unused", (None,)),))


def _avg_declare(
    data: Tensor, *, cfg: Config, env: Env, round: bool = False
) -> tuple[Schedule, Tensor]:
    check_activation(env, data, "global_avg_pool")
    n, c, h, w, b, i = data.shape
    rows = n * c * h * w + n * c
    if rows > env.cfg.acc_buff_depth:
        raise CompileError(
            f"the input needs {rows} accumulator rows, the buffer has {env.cfg.acc_buff_depth}",
            op="global_avg_pool",
        )
    multiplier, shift = _divisor(env, data)
    loaded = te.compute(data.shape, lambda *k: data(*k).astype(env.acc_dtype), name="data_acc")
    ry = te.reduce_axis((0, h), name="ry")
    rx = te.reduce_axis((0, w), name="rx")
    shape = (n, c, 1, 1, b, i)
    total = te.compute(
        shape,
        lambda nn_, cc, y, x, bb, ii: te.sum(loaded[nn_, cc, ry, rx, bb, ii], axis=[ry, rx]),
        name="res_sum",
    )
    half = 1 << (shift - 1) if round and shift else 0
    average = te.compute(shape, lambda *k: (total(*k) * multiplier + half) >> shift, name="res_avg")
    res = te.compute(shape, lambda *k: average(*k).astype(env.out_dtype), name="res")
    s = create_schedule(res.op)
    s[res].pragma(s[res].op.axis[0], env.dma_copy)
    for stage in (loaded, total, average):
        s[stage].set_scope(env.acc_scope)
    s[loaded].pragma(s[loaded].op.axis[0], env.dma_copy)
    tn, tc, ty, tx, tb, ti = s[total].op.axis
    s[total].reorder(tn, ty, tx, ry, rx, tc, tb, ti)
    s[total].pragma(tn, env.alu)
    s[average].pragma(s[average].op.axis[0], env.alu)
    return s, res


#: ``GLOBAL_AVG_POOL(data, env=env, round=False)``: ``(sum * multiplier) >> shift`` per channel.
GLOBAL_AVG_POOL = Template("global_avg_pool_packed", _avg_space, _avg_declare)
