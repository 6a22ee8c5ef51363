"""Graph passes: functions from a :class:`~compiler.graph.ir.Graph` to a new one, each pure
(the input graph is never changed) and keeping the graph's input and output names; and the
calibration that the quantizer reads (:mod:`compiler.graph.passes.calibrate`)."""

from compiler.graph.passes.calibrate import (
    CALIBRATION_METHODS,
    Calibration,
    CalibrationMethod,
    QuantRecord,
    calibrate,
    calibration_method,
    exponent,
    quantization_table,
)
from compiler.graph.passes.fold import fold_batch_norm, fold_constants
from compiler.graph.passes.qdq import fake_quant_pairs, strip_fake_quant
from compiler.graph.passes.quantize import quantize, quantize_with_records
from compiler.graph.passes.simplify import simplify

__all__ = [
    "CALIBRATION_METHODS",
    "Calibration",
    "CalibrationMethod",
    "QuantRecord",
    "calibrate",
    "calibration_method",
    "exponent",
    "fake_quant_pairs",
    "fold_batch_norm",
    "fold_constants",
    "quantization_table",
    "quantize",
    "quantize_with_records",
    "simplify",
    "strip_fake_quant",
]
