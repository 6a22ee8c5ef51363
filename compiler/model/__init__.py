"""Whole models for the accelerator: partitioning a quantized graph, planning its layouts and
DRAM, generating its programs, and the :class:`CompiledModel` that saves as one file."""

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
    "CompileContext",
    "CompiledModel",
    "Partition",
    "Placement",
    "Plan",
    "compile_model",
    "partition",
    "plan_model",
    "reference",
]
