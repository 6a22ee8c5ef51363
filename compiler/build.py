"""``build``: a schedule to a callable compiled function (lower, then generate code)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.accel import AccelFunction, AccelTarget, build_accel
from compiler.codegen import CompiledFunction, Target, codegen
from compiler.lower import lower
from compiler.schedule import Schedule
from compiler.te import Tensor

__all__ = ["build"]


def build(
    schedule: Schedule,
    args: Sequence[Tensor],
    target: str | Target | AccelTarget = "llvm",
    name: str = "main",
) -> CompiledFunction | AccelFunction:
    """Compile ``schedule`` into a function over ``args`` (numpy arrays in this order).

    ``target`` is ``"llvm"`` (this machine), a :class:`Target`, or an accelerator's
    ``Env(cfg).target`` (an :class:`~compiler.accel.AccelFunction` results); code for another
    machine is written with ``codegen(lower(...), target).emit_object(...)`` instead.
    """
    if isinstance(target, AccelTarget):
        return build_accel(schedule, args, target.cfg, name)
    func = lower(schedule, args, name)
    module = codegen(func, target)
    address, engine = module.jit()
    return CompiledFunction(func, address, engine, module)
