"""The accelerator backend: tensor-expression schedules compiled into :class:`isa.Program`s.

``Env(cfg)`` describes the target (VTA's ``vta.get_env()``, explicit); schedules use its scopes,
pragmas (``dma_copy``, ``alu``) and GEMM intrinsic; ``compiler.build(s, args,
target=env.target)`` lowers them through :func:`accel_pipeline` and generates an
:class:`AccelFunction` that runs on any device.
"""

from compiler.accel.env import ALU, DMA_COPY, AccelTarget, Env
from compiler.accel.function import AccelFunction, Argument, build_accel
from compiler.accel.lower import accel_pipeline, lower_accel

__all__ = [
    "ALU",
    "DMA_COPY",
    "AccelFunction",
    "AccelTarget",
    "Argument",
    "Env",
    "accel_pipeline",
    "build_accel",
    "lower_accel",
]
