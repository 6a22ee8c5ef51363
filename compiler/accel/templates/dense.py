"""Dense (fully connected) layers on the accelerator, in VTA's packed layouts.

Data ``(N/BATCH, CI/BLOCK_IN, BATCH, BLOCK_IN)`` int8, weights ``(CO/BLOCK_OUT, CI/BLOCK_IN,
BLOCK_OUT, BLOCK_IN)`` int8, bias ``(1, CO/BLOCK_OUT, BATCH, BLOCK_OUT)`` int32 (optional); the
output ``(N/BATCH, CO/BLOCK_OUT, BATCH, BLOCK_OUT)`` is ``clip((data x weights^T >> shift) +
bias, lo, hi)`` as int8 (the bias before the shift with ``bias_first``). The schedule is VTA's
``dense_packed`` (the blocked GEMM tutorial): output tiles of ``tile_b`` batch blocks x
``tile_co`` channel blocks, the reduction in steps of ``tile_ci`` blocks, virtual threads over
channel tiles (``oc_threads``).

Batched (a batched matrix product, as attention's two): data, weights and output carry one more,
leading axis of ``G`` groups, ``(G, N/BATCH, ...)`` and ``(G, CO/BLOCK_OUT, ...)``, and group
``g`` of the output is the dense layer of group ``g``'s data by group ``g``'s weights (the bias
shared); the groups are an outer loop around the same schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from compiler import te
from compiler.accel.env import Env
from compiler.accel.templates._common import (
    check_fit,
    divisors,
    ordered_space,
    requantize,
    schedule_epilogue,
)
from compiler.errors import CompileError
from compiler.expr import Expr
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.knobs import Config, KnobSpace, Template
from isa import MemId

__all__ = ["DENSE"]


@dataclass(frozen=True)
class _Shape:
    groups: tuple[int, ...]  # () for a dense layer, (G,) for a batched product
    batch: int  # batch blocks
    ci: int
    co: int


def _shape(env: Env, data: Tensor, weight: Tensor) -> _Shape:
    if data.ndim not in (4, 5) or weight.ndim != data.ndim:
        raise CompileError(
            "data and weight must be 4-D packed tensors (5-D, with a leading group axis, "
            "both, for a batched product)",
            op="dense",
        )
    *groups, n, ci, b, bi = data.shape
    *wgroups, co, wci, bo, wbi = weight.shape
    if (b, bi, bo, wbi) != (env.BATCH, env.BLOCK_IN, env.BLOCK_OUT, env.BLOCK_IN):
        raise CompileError("the blocks are not the accelerator's", op="dense")
    if wci != ci:
        raise CompileError(f"weight has {wci} input blocks, data {ci}", op="dense")
    if wgroups != groups:
        raise CompileError(f"weight has groups {wgroups}, data {groups}", op="dense")
    return _Shape(tuple(groups), n, ci, co)


def _check(env: Env, g: _Shape, config: Config, vectors: int = 1) -> None:
    """A CompileError unless ``config`` suits the shape and its tiles fit the buffers (with
    ``vectors`` per-channel vectors cached per channel tile: bias, multiplier, shifts)."""
    if (g.co // config["tile_co"]) % config["oc_threads"]:
        raise CompileError(
            f"oc_threads={config['oc_threads']} needs an even number of channel tiles",
            op="dense",
        )
    threads = config["oc_threads"]
    check_fit(
        env,
        "dense",
        [
            (MemId.INP, "the input tile", threads * config["tile_b"] * config["tile_ci"]),
            (MemId.WGT, "the weight tile", threads * config["tile_co"] * config["tile_ci"]),
            (MemId.ACC, "the output tile", threads * config["tile_b"] * config["tile_co"]),
            (MemId.ACC, "the bias", threads * config["tile_co"] * vectors),
        ],
    )


def _cycles(env: Env, g: _Shape, config: Config) -> float:
    cfg = env.cfg
    tiles = math.prod(g.groups) * (g.batch // config["tile_b"]) * (g.co // config["tile_co"])
    steps = g.ci // config["tile_ci"]
    gemm = config["tile_b"] * config["tile_co"] * config["tile_ci"] + 20
    load = (
        config["tile_b"] * config["tile_ci"] * cfg.inp_elem_bytes
        + config["tile_co"] * config["tile_ci"] * cfg.wgt_elem_bytes
    ) / cfg.bus_bytes + 80
    step = max(gemm, load) if config["oc_threads"] > 1 else gemm + load
    return tiles * (steps * step + 6 * config["tile_b"] * config["tile_co"] + 120)


def _space(
    data: Tensor, weight: Tensor, *vectors: Tensor | None, env: Env, **params: Any
) -> KnobSpace:
    g = _shape(env, data, weight)
    count = max(1, sum(v is not None for v in vectors))
    choices = {
        "tile_b": divisors(g.batch),
        "tile_co": divisors(g.co),
        "tile_ci": divisors(g.ci),
        "oc_threads": (1, 2),
    }
    return ordered_space(choices, lambda c: _check(env, g, c, count), lambda c: _cycles(env, g, c))


def _declare(
    data: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    multiplier: Tensor | None = None,
    shifts: Tensor | None = None,
    *,
    cfg: Config,
    env: Env,
    shift: int = 0,
    lo: int = -128,
    hi: int = 127,
    bias_first: bool = False,
) -> tuple[Schedule, Tensor]:
    g = _shape(env, data, weight)
    vectors = (bias, multiplier, shifts)
    _check(env, g, cfg, max(1, sum(v is not None for v in vectors)))
    ic = te.reduce_axis((0, g.ci), name="ic")
    ici = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    out_shape = (*g.groups, g.batch, g.co, env.BATCH, env.BLOCK_OUT)

    def gemm_at(*axes: Expr) -> Expr:
        *group, n, co, b, c = axes
        return te.sum(
            data[*group, n, ic, b, ici].astype(env.acc_dtype)
            * weight[*group, co, ic, c, ici].astype(env.acc_dtype),
            axis=[ic, ici],
        )

    gemm = te.compute(out_shape, gemm_at, name="res_gemm")
    stages, res = requantize(
        env, gemm, vectors, lambda *axes: (0, *axes[-3:]), shift, lo, hi, bias_first
    )
    s = create_schedule(res.op)
    *group, n, co, b, c = s[res].op.axis
    n_o, n_i = s[res].split(n, factor=cfg["tile_b"])
    co_o, co_i = s[res].split(co, factor=cfg["tile_co"])
    s[res].reorder(*group, n_o, co_o, n_i, co_i, b, c)
    if cfg["oc_threads"] > 1:
        co_o, thread = s[res].split(co_o, factor=cfg["oc_threads"])
        s[res].reorder(thread, n_o)
        s[res].bind(thread, te.thread_axis("cthread"))
    s[res].pragma(n_i, env.dma_copy)
    s[gemm].set_scope(env.acc_scope)
    s[gemm].compute_at(s[res], co_o)
    schedule_epilogue(env, s, stages, res, vectors, co_o, co_o)
    *ggroup, gn, gco, gb, gc = s[gemm].op.axis
    ic_o, ic_i = s[gemm].split(ic, factor=cfg["tile_ci"])
    s[gemm].reorder(ic_o, *ggroup, gn, gco, ic_i, gb, gc, ici)
    s[gemm].tensorize(gb, env.gemm)
    for tensor, scope in ((data, env.inp_scope), (weight, env.wgt_scope)):
        cached = s.cache_read(tensor, scope, [gemm])
        s[cached].compute_at(s[gemm], ic_o)
        s[cached].pragma(s[cached].op.axis[0], env.dma_copy)
    return s, res


#: ``DENSE(data, weight, bias, env=env, shift=..., config=...)`` (batched with 5-D operands).
DENSE = Template("dense_packed", _space, _declare)
