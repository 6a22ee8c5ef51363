"""What the accelerator's operator templates share: divisor knobs, the requantising epilogue
and its schedule, buffer-fit checks and the choice of defaults by an estimate of cycles."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from compiler import te
from compiler.accel.env import Env
from compiler.errors import CompileError
from compiler.ops.knobs import Knob, KnobSpace
from compiler.schedule import Schedule
from compiler.te import Tensor
from isa import MemId

__all__ = [
    "Epilogue",
    "check_fit",
    "divisors",
    "ordered_space",
    "schedule_epilogue",
]


def divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n``, largest first."""
    return tuple(d for d in range(n, 0, -1) if n % d == 0)


def ordered_space(
    choices: Mapping[str, Sequence[Any]],
    valid: Callable[[dict[str, Any]], bool],
    cost: Callable[[dict[str, Any]], float],
) -> KnobSpace:
    """The knob space whose first choices (the defaults) are the valid configuration of least
    ``cost``; a CompileError when no configuration is valid."""
    names = list(choices)
    best = None
    for config in KnobSpace(tuple(Knob(n, tuple(choices[n])) for n in names)):
        if valid(config):
            key = cost(config)
            if best is None or key < best[0]:
                best = (key, config)
    if best is None:
        return KnobSpace(tuple(Knob(n, tuple(choices[n])) for n in names))
    default = best[1]
    return KnobSpace(
        tuple(Knob(n, (default[n], *(c for c in choices[n] if c != default[n]))) for n in names)
    )


def check_fit(env: Env, op: str, needs: Iterable[tuple[MemId, str, int]]) -> None:
    """A CompileError naming the first buffer whose rows (``(memory, what, rows)``) exceed the
    SRAM, with the bytes needed and the bytes there are."""
    cfg = env.cfg
    totals: dict[MemId, int] = {}
    for mem, _, rows in needs:
        totals[mem] = totals.get(mem, 0) + rows
    for mem, what, _ in needs:
        depth = cfg.buffer_depth(mem)
        if totals[mem] > depth:
            size = cfg.elem_bytes(mem)
            raise CompileError(
                f"the tile does not fit the {mem.name} buffer: {what} and the rest need "
                f"{totals[mem] * size} bytes ({totals[mem]} rows), the buffer has "
                f"{depth * size} bytes ({depth} rows)",
                op=op,
            )


class Epilogue:
    """The requantisation VTA runs on the ALU: ``clip((acc >> shift) + bias, lo, hi)`` cast to
    the output type (``bias`` optional, per output channel)."""

    def __init__(self, shift: int, lo: int, hi: int) -> None:
        self.shift, self.lo, self.hi = shift, lo, hi

    def stages(
        self, env: Env, acc: Tensor, bias: Tensor | None, bias_index: Callable[..., tuple]
    ) -> tuple[list[Tensor], Tensor]:
        """(the ALU stages in order, the output stage)."""
        shape = acc.shape
        stages = []
        value = acc
        if self.shift:
            value = te.compute(shape, lambda *i: value(*i) >> self.shift, name="res_shr")
            stages.append(value)
        if bias is not None:
            shifted = value
            value = te.compute(
                shape, lambda *i: shifted(*i) + bias(*bias_index(*i)), name="res_bias"
            )
            stages.append(value)
        clipped_low = value
        value = te.compute(shape, lambda *i: te.max(clipped_low(*i), self.lo), name="res_max")
        stages.append(value)
        clipped_high = value
        value = te.compute(shape, lambda *i: te.min(clipped_high(*i), self.hi), name="res_min")
        stages.append(value)
        last = value
        out = te.compute(shape, lambda *i: last(*i).astype(env.out_dtype), name="res")
        return stages, out


def schedule_epilogue(
    env: Env,
    s: Schedule,
    stages: Sequence[Tensor],
    out: Tensor,
    bias: Tensor | None,
    at: object,
    bias_at: object,
) -> None:
    """Compute the ALU stages inside ``out``'s loop ``at``, each as ALU instructions, and the
    bias, cached in the accumulator, inside its loop ``bias_at``."""
    for stage in stages:
        s[stage].set_scope(env.acc_scope)
        s[stage].compute_at(s[out], at)
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    if bias is not None:
        readers = [t for t in stages if bias in t.op.inputs]
        cached = s.cache_read(bias, env.acc_scope, readers)
        s[cached].compute_at(s[out], bias_at)
        s[cached].pragma(s[cached].op.axis[0], env.dma_copy)
