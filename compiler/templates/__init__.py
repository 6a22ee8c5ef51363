"""Operator templates: each declares a computation and schedules it from a knob configuration.

A :class:`Template` is called on input tensors (plus operator parameters) and returns
``(schedule, output)``; ``template.space(*inputs, ...)`` is the knob space a tuner searches.
Every CPU template takes a ``target`` parameter (an ``"llvm ..."`` string or a
:class:`~compiler.codegen.Target`; None: this host) whose vector width and registers give its
default knobs.
The submodule :mod:`compiler.templates.nn` holds unscheduled operators spelled as TVM's ``topi.nn``.
"""

from compiler.templates import nn
from compiler.templates.conv2d import CONV2D_NCHW, CONV2D_NCHWC, nchwc_block, out_size
from compiler.templates.depthwise import DEPTHWISE_CONV2D, DEPTHWISE_CONV2D_NCHWC
from compiler.templates.elementwise import ELEMENTWISE, broadcast_shape
from compiler.templates.knobs import Config, Knob, KnobSpace, Template
from compiler.templates.matmul import MATMUL
from compiler.templates.pool import POOL2D

__all__ = [
    "CONV2D_NCHW",
    "CONV2D_NCHWC",
    "DEPTHWISE_CONV2D",
    "DEPTHWISE_CONV2D_NCHWC",
    "ELEMENTWISE",
    "MATMUL",
    "POOL2D",
    "Config",
    "Knob",
    "KnobSpace",
    "Template",
    "broadcast_shape",
    "nchwc_block",
    "nn",
    "out_size",
]
