"""``build``: a schedule to a callable compiled function (lower, then generate code)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.codegen import CompiledFunction, Target, codegen
from compiler.lower import lower
from compiler.schedule import Schedule
from compiler.te import Tensor

__all__ = ["build"]


def build(
    schedule: Schedule, args: Sequence[Tensor], target: str | Target = "llvm", name: str = "main"
) -> CompiledFunction:
    """Compile ``schedule`` into a function over ``args`` (numpy arrays in this order).

    ``target`` is ``"llvm"`` (this machine) or a :class:`Target`; code for another machine is
    written with ``codegen(lower(...), target).emit_object(...)`` instead.
    """
    func = lower(schedule, args, name)
    module = codegen(func, target)
    address, engine = module.jit()
    return CompiledFunction(func, address, engine, module)
