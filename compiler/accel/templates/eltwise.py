"""The residual connection on the accelerator: two int8 activations added with requantisation.

``res = clip(((a << a_shift) + (b << b_shift)) >> shift, lo, hi)`` as int8 (with ``round``, the
shift rounds to nearest: ``2**(shift-1)`` is added before it), lane by lane, on
packed activations ``(N/B, C/BLOCK_OUT, H, W, B, BLOCK_OUT)``. Power-of-two quantisation scales
make the requantisation shifts, so the whole operator runs on the ALU: both inputs are loaded
into the accumulator (sign-extending int8 loads), shifted, added, shifted and clipped, per tile.
VTA ran residual adds on the CPU.
"""

from __future__ import annotations

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
from compiler.schedule import Schedule
from compiler.te import Tensor
from compiler.templates.knobs import Config, KnobSpace, Template

__all__ = ["ADD"]


def _rows_in(width: int) -> Any:
    return lambda config: 2 * config["tile_c"] * config["tile_h"] * width


def _space(a: Tensor, b: Tensor, *, env: Env, **params: Any) -> KnobSpace:
    _check(env, a, b)
    return tile_space(env, "add", a.shape, _rows_in(a.shape[3]), 6)


def _check(env: Env, a: Tensor, b: Tensor) -> None:
    check_activation(env, a, "add")
    check_activation(env, b, "add")
    if a.shape != b.shape:
        raise CompileError(f"shapes {a.shape} and {b.shape} differ", tensor=b.name, op="add")


def _declare(
    a: Tensor,
    b: Tensor,
    *,
    cfg: Config,
    env: Env,
    a_shift: int = 0,
    b_shift: int = 0,
    shift: int = 0,
    lo: int = -128,
    hi: int = 127,
    round: bool = False,
) -> tuple[Schedule, Tensor]:
    _check(env, a, b)
    check_tiles(env, "add", a.shape, cfg, _rows_in(a.shape[3]))
    acc = env.acc_dtype
    a_buf = te.compute(a.shape, lambda *i: a(*i).astype(acc), name="a_acc")
    b_buf = te.compute(b.shape, lambda *i: b(*i).astype(acc), name="b_acc")
    b_scaled = te.compute(b.shape, lambda *i: b_buf(*i) << b_shift, name="b_scaled")
    half = 1 << (shift - 1) if round and shift else 0
    total = te.compute(
        a.shape,
        lambda *i: ((a_buf(*i) << a_shift) + b_scaled(*i) + half) >> shift,
        name="res_add",
    )
    low = te.compute(a.shape, lambda *i: te.max(total(*i), lo), name="res_max")
    high = te.compute(a.shape, lambda *i: te.min(low(*i), hi), name="res_min")
    res = te.compute(a.shape, lambda *i: high(*i).astype(env.out_dtype), name="res")
    stages = [b_scaled, total, low, high]
    return tiled_schedule(env, res, [a_buf, b_buf], stages, cfg), res


#: ``ADD(a, b, env=env, a_shift=..., b_shift=..., shift=..., round=False, config=...)``.
ADD = Template("add_packed", _space, _declare)
