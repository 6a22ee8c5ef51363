"""``build``: a schedule to a callable compiled function (lower, then generate code)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.accel import AccelFunction, AccelTarget, build_accel
from compiler.codegen import (
    CompiledFunction,
    CudaTarget,
    GpuFunction,
    Target,
    codegen,
    codegen_nvptx,
)
from compiler.lower import GPU_PIPELINE, lower
from compiler.schedule import Schedule
from compiler.tensor import Tensor

__all__ = ["build"]


def build(
    schedule: Schedule,
    args: Sequence[Tensor],
    target: str | Target | CudaTarget | AccelTarget = "llvm",
    name: str = "main",
) -> CompiledFunction | GpuFunction | AccelFunction:
    """Compile ``schedule`` into a function over ``args`` (numpy arrays in this order).

    ``target`` is ``"llvm"`` (this machine), a :class:`Target`, or an accelerator's
    ``Env(cfg).target`` (an :class:`~compiler.accel.AccelFunction` results), or ``"cuda"`` /
    ``"cuda -arch=sm_90"`` / a :class:`CudaTarget` (a :class:`GpuFunction`: ``.ptx``,
    ``.emulate(*arrays)`` on the CPU, a call on the GPU); code for another
    machine is written with ``codegen(lower(...), target).emit_object(...)`` instead.
    """
    if isinstance(target, AccelTarget):
        return build_accel(schedule, args, target.cfg, name)
    if isinstance(target, CudaTarget) or (isinstance(target, str) and target.startswith("cuda")):
        func = lower(schedule, args, name, GPU_PIPELINE)
        return GpuFunction(codegen_nvptx(func, target))
    func = lower(schedule, args, name)
    module = codegen(func, target)
    address, engine = module.jit()
    return CompiledFunction(func, address, engine, module)
