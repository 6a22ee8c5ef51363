"""Operator templates for the accelerator: each declares a computation in the packed layouts
and schedules it from a knob configuration whose defaults fit the configuration's buffers."""

from compiler.accel.ops.conv2d import CONV2D, ConvGeometry

__all__ = ["CONV2D", "ConvGeometry"]
