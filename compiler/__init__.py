"""The TVM-style compiler: frontends, graph passes, tensor expressions and schedules,
lowering passes (tensorize, DMA, latency hiding) and code generators (accelerator, LLVM, CUDA).

The core API follows TVM's: ``te.placeholder`` / ``te.compute`` declare what to compute,
``create_schedule`` and the stage primitives say how, ``lower`` returns the printable loop IR and
``build`` a function callable on numpy arrays. Whole models: ``compile_model`` (ONNX, PyTorch or
a graph, for an accelerator configuration) and ``reference`` (any graph run in numpy: for a
quantized one, the bit-exact oracle of the accelerator).
"""

from compiler import te
from compiler.build import build
from compiler.errors import CompileError, ScheduleError
from compiler.lower import PIPELINE, lower
from compiler.model import CompiledModel, compile_model, reference
from compiler.schedule import create_schedule

__all__ = [
    "PIPELINE",
    "CompileError",
    "CompiledModel",
    "ScheduleError",
    "build",
    "compile_model",
    "create_schedule",
    "lower",
    "reference",
    "te",
]
