"""Helpers shared by the operator templates: the target's machine model and the vector widths
and register tiles derived from it."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.codegen.machine import MachineModel
from compiler.codegen.target import Target
from compiler.expr import IterVar
from compiler.schedule import Schedule
from compiler.te import Tensor
from compiler.templates import nn
from compiler.templates.knobs import Config

__all__ = [
    "TargetSpec",
    "pad_nchw",
    "register_rows",
    "schedule_nchwc_rows",
    "schedule_sliding_window",
    "target_model",
    "vector_choices",
]

#: How a template's ``target`` parameter names the CPU: a :class:`Target`, an ``"llvm ..."``
#: string (recordable in tuning logs), or None for the host.
TargetSpec = Target | str | None


def target_model(target: TargetSpec) -> MachineModel:
    """The machine model of ``target`` (None: this host, :meth:`Target.host`)."""
    return Target.parse(target or "llvm").model


def vector_choices(
    extent: int, lanes: int, multiples: Sequence[float] = (1, 0.5, 2, 0.25)
) -> tuple[int, ...]:
    """Vector widths worth trying for an axis of ``extent``: ``lanes`` times each of
    ``multiples`` (the first the default), those longer than ``extent`` dropped, ending with 1."""
    widths = dict.fromkeys(max(1, int(lanes * m)) for m in multiples)
    fitting = tuple(w for w in widths if w <= extent) or (extent,)
    return fitting if 1 in fitting else (*fitting, 1)


def register_rows(
    model: MachineModel, extent: int, vectors: int, candidates: Sequence[int], exact: bool
) -> int:
    """The rows of a register tile of ``vectors`` accumulator vectors per row for an axis of
    ``extent``: the largest of ``candidates`` (then 1) whose tile stays within
    ``model.accumulators``; with ``exact``, one dividing ``extent`` where one fits (a partial
    tile's bounds checks stay inside the reduction loop: on znver, matmul 1024^3 in 6-row tiles
    ran at 0.76x numpy, in 4-row tiles at 1.0x)."""
    fitting = [r for r in (*candidates, 1) if r <= extent and r * vectors <= model.accumulators]
    dividing = [r for r in fitting if extent % r == 0] if exact else []
    return max(dividing or fitting or [1])


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


def schedule_nchwc_rows(
    s: Schedule,
    out: Tensor,
    data: Tensor,
    padded: Tensor,
    reductions: Sequence[IterVar],
    column: IterVar,
    cfg: Config,
) -> None:
    """The schedule of an NCHWc window reduction ``out`` (N, C/c, OH, OW, c) over ``padded``
    (``data`` padded, or ``data`` itself): each row of ``tile_ow`` output pixels keeps its
    accumulators (a vector of the channel block each) in registers across the ``reductions``
    (outermost first; the window's ``column`` loop unrolled where ``unroll_kw``), rows in
    parallel where ``parallel``; the padded copy vectorized along its block."""
    vectorize = cfg.get("vectorize", True)
    acc = s.cache_write(out, "local")
    b, f, y, x, v = out.op.axis
    xo, xi = s[out].split(x, cfg["tile_ow"])
    s[out].reorder(b, f, y, xo, xi, v)
    s[acc].compute_at(s[out], xo)
    ab, af, ay, ax, av = acc.op.axis
    s[acc].reorder(ab, af, ay, *reductions, ax, av)
    s[acc].unroll(ax)
    if cfg["unroll_kw"]:
        s[acc].unroll(column)
    if vectorize:
        s[acc].vectorize(av)
        s[out].vectorize(v)
    if cfg["parallel"]:
        s[out].parallel(s[out].fuse(b, f, y))
    if padded is not data:
        pb, pc, py, _, pv = padded.op.axis
        if vectorize:
            s[padded].vectorize(pv)
        if cfg["parallel"]:
            s[padded].parallel(s[padded].fuse(pb, pc, py))
