"""Operator templates for the accelerator: each declares a computation in the packed layouts
and schedules it from a knob configuration whose defaults fit the configuration's buffers."""

from compiler.accel.templates.conv2d import (
    CONV2D,
    RESNET18_LAYERS,
    VTA_RESNET18_CYCLES,
    ConvGeometry,
    ConvLayer,
)
from compiler.accel.templates.dense import DENSE
from compiler.accel.templates.eltwise import ADD
from compiler.accel.templates.pool import GLOBAL_AVG_POOL, MAX_POOL, average_divisor

__all__ = [
    "ADD",
    "CONV2D",
    "DENSE",
    "GLOBAL_AVG_POOL",
    "MAX_POOL",
    "RESNET18_LAYERS",
    "VTA_RESNET18_CYCLES",
    "ConvGeometry",
    "ConvLayer",
    "average_divisor",
]
