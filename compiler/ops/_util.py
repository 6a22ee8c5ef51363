"""Helpers shared by the operator templates."""

from __future__ import annotations

from compiler.expr import IterVar
from compiler.ops import nn
from compiler.ops.knobs import Config
from compiler.schedule import Schedule
from compiler.te import Tensor

__all__ = ["pad_nchw", "schedule_sliding_window", "vector_choices"]


def vector_choices(extent: int, widths: tuple[int, ...] = (16, 8, 32, 4)) -> tuple[int, ...]:
    """Vector widths worth trying for an axis of ``extent`` (default first), ending with 1."""
    fitting = tuple(w for w in widths if w <= extent) or (extent,)
    return fitting if 1 in fitting else (*fitting, 1)


def pad_nchw(data: Tensor, pad: int, value: float = 0.0) -> Tensor:
    """``data`` (N, C, H, W) or (N, C, H, W, c) padded by ``pad`` on both sides of H and W."""
    if pad == 0:
        return data
    pads = (0, 0, pad, pad, *(0,) * (data.ndim - 4))
    return nn.pad(data, pads, pad_value=value, name=f"{data.name}.pad")


def schedule_sliding_window(
    s: Schedule, out: Tensor, window: tuple[IterVar, IterVar], cfg: Config
) -> None:
    """The schedule of an NCHW sliding-window reduction (depthwise conv, pooling): output rows
    split into ``tile_ow`` vectors inside the window loops, channels in parallel."""
    ry, rx = window
    b, f, y, x = out.op.axis
    xo, xi = s[out].split(x, cfg["tile_ow"])
    s[out].reorder(b, f, y, xo, ry, rx, xi)
    if cfg["vectorize"]:
        s[out].vectorize(xi)
    if cfg.get("unroll_kw"):
        s[out].unroll(rx)
    if cfg["parallel"]:
        s[out].parallel(s[out].fuse(b, f))
