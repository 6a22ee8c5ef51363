"""What the accelerator's operator templates share: divisor knobs, the requantising epilogue
and its schedule, buffer-fit checks and the choice of defaults by an estimate of cycles."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from compiler import te
from compiler.accel.env import Env
from compiler.errors import CompileError
from compiler.expr import Expr
from compiler.schedule import Schedule
from compiler.te import Tensor
from compiler.templates.knobs import Knob, KnobSpace
from isa import MemId

__all__ = [
    "check_fit",
    "divisors",
    "ordered_space",
    "requantize",
    "schedule_epilogue",
]


def divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n``, largest first."""
    return tuple(d for d in range(n, 0, -1) if n % d == 0)


def ordered_space(
    choices: Mapping[str, Sequence[Any]],
    check: Callable[[dict[str, Any]], None],
    cost: Callable[[dict[str, Any]], float],
) -> KnobSpace:
    """The knob space whose first choices (the defaults) are the configuration of least
    ``cost`` among those ``check`` accepts (it raises CompileError for the others). When none
    is accepted the choices keep their order, and declaring the default says why."""
    names = list(choices)
    best = None
    for config in KnobSpace(tuple(Knob(n, tuple(choices[n])) for n in names)):
        try:
            check(config)
        except CompileError:
            continue
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


def requantize(
    env: Env,
    acc: Tensor,
    vectors: tuple[Tensor | None, Tensor | None, Tensor | None],
    bias_index: Callable[..., tuple],
    shift: int,
    lo: int,
    hi: int,
    bias_first: bool = False,
) -> tuple[list[Tensor], Tensor]:
    """The requantisation VTA runs on the ALU, ``clip((acc >> shift) + bias, lo, hi)`` cast to
    the output type, of the per-channel ``vectors`` ``(bias, multiplier, shifts)`` (each
    optional, read at ``bias_index(*axes)``); with ``bias_first``, ``clip((acc + bias) >>
    shift, lo, hi)``, the bias at the accumulator's scale (where a quantizer folds the rounding
    constant ``2**(shift-1)`` in, so the shift rounds to nearest at no cost). With a
    ``multiplier`` and ``shifts`` (and a bias), the fixed-point form ``clip((((acc >> shift) *
    multiplier + bias) >> shifts, lo, hi)`` (:func:`runtime.opset.integer.requantize`): MUL and
    SHR by accumulator rows. Returns (the ALU stages in order, the output stage)."""
    bias, multiplier, shifts = vectors
    steps: list[tuple[str, Callable[[Expr, tuple], Expr]]] = []
    add_bias = ("res_bias", lambda x, axes: x + bias(*bias_index(*axes)))
    if multiplier is not None:
        factor = ("res_mul", lambda x, axes: x * _narrow(multiplier(*bias_index(*axes)), env))
        rescale = ("res_rescale", lambda x, axes: x >> shifts(*bias_index(*axes)))
        steps += [("res_shr", lambda x, _: x >> shift)] if shift else []
        steps += [factor, add_bias, rescale]
    else:
        if bias is not None and bias_first:
            steps.append(add_bias)
        if shift:
            steps.append(("res_shr", lambda x, _: x >> shift))
        if bias is not None and not bias_first:
            steps.append(add_bias)
    steps += [("res_max", lambda x, _: te.max(x, lo)), ("res_min", lambda x, _: te.min(x, hi))]
    stages, value = [], acc
    for name, step in steps:
        value = te.compute(acc.shape, lambda *i, v=value, f=step: f(v(*i), i), name=name)
        stages.append(value)
    out = te.compute(acc.shape, lambda *i: value(*i).astype(env.out_dtype), name="res")
    return stages, out


def _narrow(value: Expr, env: Env) -> Expr:
    """An accumulator value as the ALU's MUL reads it: its low ``mul_arg_bits`` bits, signed."""
    return value.astype(f"int{env.cfg.mul_arg_bits}").astype(env.acc_dtype)


def schedule_epilogue(
    env: Env,
    s: Schedule,
    stages: Sequence[Tensor],
    out: Tensor,
    channel_vectors: Sequence[Tensor | None],
    at: object,
    bias_at: object,
) -> None:
    """Compute the ALU stages inside ``out``'s loop ``at``, each as ALU instructions, and the
    per-channel vectors they read (the bias, and a fixed-point requantisation's multiplier and
    shifts; None where absent), cached in the accumulator, inside their loop ``bias_at``."""
    for stage in stages:
        s[stage].set_scope(env.acc_scope)
        s[stage].compute_at(s[out], at)
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    for vector in channel_vectors:
        if vector is None:
            continue
        readers = [t for t in stages if vector in t.op.inputs]
        cached = s.cache_read(vector, env.acc_scope, readers)
        s[cached].compute_at(s[out], bias_at)
        s[cached].pragma(s[cached].op.axis[0], env.dma_copy)
