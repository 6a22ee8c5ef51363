"""Lowering for the accelerator: one named pass list, then emission.

:func:`accel_pipeline` lists the passes for a configuration, in the order they run, each a pure
function from a lowered function to a lowered function (printable between any two):

1. ``simplify``: fold index arithmetic, drop loops of extent 1;
2. ``inject_dma``: ``dma_copy`` stages become 2-D transfers, padding from bounds conditions;
3. ``share_acc_storage``: ``alu`` stages compute in place where the buffer they read dies;
4. ``lower_alu``: ``alu`` stages become ALU compute steps;
5. ``tensorize_gemm``: ``env.gemm`` nests and the reductions' initialisation become GEMM steps;
6. ``inject_virtual_thread``: virtual threads become interleaved, double-buffered streams;
7. ``fold_uop_loops``: nests of compute steps become micro-op kernels with hardware loops;
8. ``simplify``.

The emitter (:mod:`compiler.accel.emit`) then runs the loops, inserts the dependency
tokens that order every reuse of an SRAM row (the second half of latency hiding), places the
kernels in the micro-op buffer and writes the :class:`isa.Program`.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.accel.passes import (
    fold_uop_loops,
    inject_dma,
    inject_virtual_thread,
    lower_alu,
    share_acc_storage,
    tensorize_gemm,
)
from compiler.loop_ir import LoweredFunc
from compiler.lower import schedule_to_ir
from compiler.passes.simplify import simplify
from compiler.pipeline import Pass, run_pipeline
from compiler.schedule import Schedule
from compiler.te import Tensor
from isa import AccelConfig

__all__ = ["accel_pipeline", "lower_accel"]


def accel_pipeline(cfg: AccelConfig) -> tuple[Pass[LoweredFunc], ...]:
    """The accelerator's lowering passes for ``cfg``, in order (module docstring)."""
    return (
        Pass("simplify", simplify),
        Pass("inject_dma", inject_dma(cfg)),
        Pass("share_acc_storage", share_acc_storage),
        Pass("lower_alu", lower_alu(cfg)),
        Pass("tensorize_gemm", tensorize_gemm(cfg)),
        Pass("inject_virtual_thread", inject_virtual_thread),
        Pass("fold_uop_loops", fold_uop_loops(cfg)),
        Pass("simplify", simplify),
    )


def lower_accel(
    schedule: Schedule,
    args: Sequence[Tensor],
    cfg: AccelConfig,
    name: str = "main",
    passes: Sequence[Pass[LoweredFunc]] | None = None,
) -> LoweredFunc:
    """The loop IR of ``schedule`` for the accelerator of ``cfg``, after ``passes`` (all of
    :func:`accel_pipeline` by default). ``print(...)`` shows it."""
    func = schedule_to_ir(schedule, args, name)
    return run_pipeline(func, accel_pipeline(cfg) if passes is None else passes)
