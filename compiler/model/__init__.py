"""Whole models for the accelerator: partitioning a quantized graph, planning its layouts and
DRAM, generating its programs, and the :class:`CompiledModel` that saves as one file; and
:func:`compare_model`, where a compiled model's accuracy goes, layer by layer."""

from compiler.model.compare import Comparison, LayerError, compare_model
from compiler.model.compile import (
    STAGES,
    CompileContext,
    CompiledModel,
    compile_model,
    reference,
)
from compiler.model.partition import Partition, Placement, partition
from compiler.model.plan import Plan, plan_model

__all__ = [
    "STAGES",
    "Comparison",
    "CompileContext",
    "CompiledModel",
    "LayerError",
    "Partition",
    "Placement",
    "Plan",
    "compare_model",
    "compile_model",
    "partition",
    "plan_model",
    "reference",
]
