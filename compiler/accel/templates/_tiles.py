"""The schedule shared by the accelerator's ALU-only operators (residual add, pooling): output
tiles of ``tile_c`` channel blocks x ``tile_h`` rows of a packed ``(N/B, C/BLOCK_OUT, H, W, B,
BLOCK_OUT)`` tensor, the inputs loaded into the accumulator per tile, one ALU instruction per
operation of the chain over a tile, and row virtual threads (``h_threads``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from compiler import te
from compiler.accel.env import Env
from compiler.accel.templates._common import check_fit, divisors, ordered_space
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.knobs import Config, KnobSpace
from isa import MemId

__all__ = ["check_activation", "tile_space", "tiled_schedule"]


def check_activation(env: Env, tensor: Tensor, op: str) -> None:
    """A CompileError unless ``tensor`` is a packed int8 activation of accumulator rows."""
    if tensor.ndim != 6 or tuple(tensor.shape[-2:]) != (env.BATCH, env.BLOCK_OUT):
        raise CompileError(
            f"must be packed (N/B, C/{env.BLOCK_OUT}, H, W, {env.BATCH}, {env.BLOCK_OUT})",
            tensor=tensor.name,
            op=op,
        )
    if str(tensor.dtype) != env.out_dtype:
        raise CompileError(f"must be {env.out_dtype}", tensor=tensor.name, op=op)


def tile_space(
    env: Env,
    op: str,
    out_shape: Sequence[int],
    rows_in: Callable[[Config], int],
    alu_ops: int,
) -> KnobSpace:
    """Tiles of the output, the default fitting the accumulator (``rows_in`` counts a tile's
    input rows) with the fewest instructions."""
    _, channels, height, width = out_shape[:4]
    choices = {"tile_h": divisors(height), "tile_c": divisors(channels), "h_threads": (1, 2)}

    def cost(config: Config) -> float:
        tiles = (channels // config["tile_c"]) * (height // config["tile_h"])
        rows = config["tile_c"] * config["tile_h"] * width
        return tiles * (alu_ops * 40 + 4 * 60) + tiles * rows * (
            0.5 if config["h_threads"] > 1 else 1
        )

    return ordered_space(choices, lambda c: check_tiles(env, op, out_shape, c, rows_in), cost)


def check_tiles(
    env: Env, op: str, out_shape: Sequence[int], config: Config, rows_in: Callable[[Config], int]
) -> None:
    """A CompileError unless ``config`` tiles the output and fits the accumulator."""
    height, width = out_shape[2], out_shape[3]
    if (height // config["tile_h"]) % config["h_threads"]:
        raise CompileError(
            f"h_threads={config['h_threads']} needs an even number of row tiles", op=op
        )
    threads = config["h_threads"]
    out_rows = config["tile_c"] * config["tile_h"] * width
    check_fit(
        env,
        op,
        [
            (MemId.ACC, "the input tiles", threads * rows_in(config)),
            (MemId.ACC, "the output tile", threads * out_rows),
        ],
    )


def tiled_schedule(
    env: Env,
    res: Tensor,
    loads: Sequence[Tensor],
    alu_stages: Sequence[Tensor],
    config: Config,
) -> Schedule:
    """Schedule ``res`` (an int8 copy of the last ALU stage) by tiles: every load (a copy into
    the accumulator) and ALU stage computed per tile, the stores per tile."""
    s = create_schedule(res.op)
    n, c, y, x, b, i = s[res].op.axis
    c_o, c_i = s[res].split(c, factor=config["tile_c"])
    y_o, y_i = s[res].split(y, factor=config["tile_h"])
    s[res].reorder(n, c_o, y_o, c_i, y_i, x, b, i)
    if config["h_threads"] > 1:
        _, thread = s[res].split(y_o, factor=config["h_threads"])
        s[res].reorder(thread, n)
        s[res].bind(thread, te.thread_axis("cthread"))
    s[res].pragma(c_i, env.dma_copy)
    for stage in alu_stages:
        s[stage].set_scope(env.acc_scope)
        s[stage].compute_at(s[res], y_o)
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    for load in loads:
        s[load].set_scope(env.acc_scope)
        s[load].compute_at(s[res], y_o)
        s[load].pragma(s[load].op.axis[0], env.dma_copy)
    return s
