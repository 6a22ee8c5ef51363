"""The operator set: every graph operator's contract, one class per operator.

Each operator (:class:`~runtime.opset.base.Operator`) holds its name, attribute record (with
defaults), arity, type rule, numpy kernel and multiply-accumulate count; :data:`OPERATORS`
maps names to them. ``compiler`` builds its graph IR on these definitions, ``runtime`` runs
their kernels for CPU steps; ``runtime`` never imports ``compiler``, so the names and plain
attribute values are the contract between them. The kernels of the float operators follow ONNX;
those of the integer operators are the accelerator's arithmetic exactly, so a quantized graph
run with them is the bit-exact oracle of every accelerator run.
"""

# importing a family's module registers its operators
from runtime.opset import (  # noqa: F401
    arithmetic,
    blocked,
    elementwise,
    indexing,
    layout,
    linear,
    movement,
    normalization,
    pooling,
    quantization,
    reduction,
    sampling,
)
from runtime.opset.arithmetic import CastAttrs, ModAttrs, QAddAttrs
from runtime.opset.base import (
    DTYPES,
    OPERATORS,
    AxisAttrs,
    NoAttrs,
    OperandError,
    Operator,
    OperatorError,
    Origin,
    TensorType,
    broadcast,
    kernel_kwargs,
)
from runtime.opset.blocked import BlockAttrs
from runtime.opset.elementwise import ClipAttrs, LeakyReluAttrs
from runtime.opset.layout import PackAttrs, PackWeightsAttrs, pack, pack_weights, unpack
from runtime.opset.linear import ConvAttrs, GemmAttrs, QConvAttrs, QDenseAttrs
from runtime.opset.movement import PadAttrs, ReshapeAttrs, TransposeAttrs
from runtime.opset.normalization import BatchNormAttrs, LayerNormAttrs
from runtime.opset.pooling import PoolAttrs, QAvgPoolAttrs
from runtime.opset.quantization import QuantAttrs

__all__ = [
    "DTYPES",
    "OPERATORS",
    "AxisAttrs",
    "BatchNormAttrs",
    "BlockAttrs",
    "CastAttrs",
    "ClipAttrs",
    "ConvAttrs",
    "GemmAttrs",
    "LayerNormAttrs",
    "LeakyReluAttrs",
    "ModAttrs",
    "NoAttrs",
    "OperandError",
    "Operator",
    "OperatorError",
    "Origin",
    "PackAttrs",
    "PackWeightsAttrs",
    "PadAttrs",
    "PoolAttrs",
    "QAddAttrs",
    "QAvgPoolAttrs",
    "QConvAttrs",
    "QDenseAttrs",
    "QuantAttrs",
    "ReshapeAttrs",
    "TensorType",
    "TransposeAttrs",
    "broadcast",
    "kernel_kwargs",
    "pack",
    "pack_weights",
    "unpack",
]
