"""Graph passes: functions from a :class:`~compiler.graph.ir.Graph` to a new one, each pure
(the input graph is never changed) and keeping the graph's input and output names."""

from compiler.graph.passes.fold import fold_batch_norm, fold_constants
from compiler.graph.passes.quantize import Calibration, calibrate, exponent, quantize
from compiler.graph.passes.simplify import simplify

__all__ = [
    "Calibration",
    "calibrate",
    "exponent",
    "fold_batch_norm",
    "fold_constants",
    "quantize",
    "simplify",
]
