"""The ONNX operators the frontend reads: one registered converter per operator and opset
range (:func:`~compiler.frontend.onnx_node.converts`).

Opset-dependent spellings are separate converters: Clip's bounds and Pad's pads are attributes
before opset 11 and constant inputs from it, Softmax's axis means "flatten from here" before
opset 13. Anything a converter does not cover (an attribute value, a non-constant input that
must be constant) is an :class:`UnsupportedOperator` naming the operator type, node and opset.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend.composites import (
    GELU_OPS,
    HARD_SIGMOID_OPS,
    gelu,
    hard_sigmoid,
    hard_swish,
)
from compiler.frontend.onnx_node import Converter, OnnxNode, converts
from compiler.frontend.onnx_pool1d import pool_1d
from compiler.graph.ir import (
    DTYPES,
    AxisAttrs,
    BatchNormAttrs,
    ClipAttrs,
    ConvAttrs,
    GemmAttrs,
    LeakyReluAttrs,
    Op,
    PadAttrs,
    PoolAttrs,
    QuantAttrs,
    ReshapeAttrs,
    TransposeAttrs,
)
from runtime.opset import CastAttrs, LayerNormAttrs, ModAttrs
from runtime.opset.arithmetic import ROUND_MODES
from runtime.opset.movement import PAD_MODES
from runtime.opset.quantization import QUANTIZED, QUANTIZED_FLOATS
from runtime.opset.reduction import ReduceAttrs

__all__: list[str] = []  # importing this module registers the converters

_F32_LOWEST = float(np.finfo(np.float32).min)
_F32_MAX = float(np.finfo(np.float32).max)
_WINDOW = ("auto_pad", "dilations", "kernel_shape", "pads", "strides")


def _plain(op: Op) -> Converter:
    """Operators without attributes: every input passes through."""
    return lambda n: n.emit(op, n.inputs)


#: Operators read as they are: every input passes through, no attributes.
_PLAIN = (
    *(Op.MATMUL, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAX, Op.MIN),
    *(Op.RELU, Op.SIGMOID, Op.TANH, Op.EXP, Op.LOG, Op.SQRT, Op.RECIPROCAL, Op.ERF),
    *(Op.NEG, Op.ABS, Op.FLOOR, Op.CEIL, Op.GLOBAL_AVERAGE_POOL),
    *(Op.EQUAL, Op.LESS, Op.LESS_OR_EQUAL, Op.GREATER, Op.GREATER_OR_EQUAL),
    *(Op.AND, Op.OR, Op.XOR, Op.NOT, Op.WHERE),
)
for _op in _PLAIN:
    converts(_op.value, emits=[_op])(_plain(_op))


# ----------------------------------------------------------------------------- linear
@converts("Conv", emits=[Op.CONV], attrs=[*_WINDOW, "group"])
def _conv(n: OnnxNode) -> None:
    if n.rank() != 4 or n.rank(1) != 4:
        raise n.unsupported(
            f"supports 2-D convolutions (4-D inputs and weights) only, got ranks "
            f"{n.rank()} and {n.rank(1)}"
        )
    kernel = n.shape(1)[2:]
    if n.ints("kernel_shape", kernel, len(kernel)) != kernel:
        raise n.error(f"kernel_shape {n.attrs['kernel_shape']} differs from the weights' {kernel}")
    strides = n.ints("strides", (1, 1), 2)
    dilations = n.ints("dilations", (1, 1), 2)
    extents = [d * (k - 1) + 1 for d, k in zip(dilations, kernel, strict=True)]
    attrs = ConvAttrs(strides, _pads(n, extents, strides), dilations, int(n.attrs.get("group", 1)))
    n.emit(Op.CONV, [v for v in n.inputs if v], attrs)


def _pads(n: OnnxNode, extents: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """A convolution's or pool's pads, the begins and then the ends of the spatial axes ((top,
    left, bottom, right) in 2-D), ``auto_pad`` resolved against the window ``extents`` (dilated
    kernel sizes, one per spatial axis)."""
    auto_pad = n.attrs.get("auto_pad", "NOTSET")
    count = 2 * len(extents)
    if auto_pad == "NOTSET":
        return n.ints("pads", (0,) * count, count, low=0)
    if auto_pad == "VALID":
        return (0,) * count
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.unsupported(f"auto_pad {auto_pad!r} is not supported")
    begin, end = [], []
    for size, extent, stride in zip(n.shape()[2:], extents, strides, strict=True):
        total = max((-(-size // stride) - 1) * stride + extent - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return (*begin, *end)


@converts("Gemm", emits=[Op.GEMM], attrs=["alpha", "beta", "transA", "transB"])
def _gemm(n: OnnxNode) -> None:
    attrs = GemmAttrs(
        float(n.attrs.get("alpha", 1.0)),
        float(n.attrs.get("beta", 1.0)),
        bool(n.attrs.get("transA", 0)),
        bool(n.attrs.get("transB", 0)),
    )
    n.emit(Op.GEMM, [v for v in n.inputs if v], attrs)


# ----------------------------------------------------------------------------- activations
@converts("Clip", emits=[Op.CLIP], attrs=["min", "max"])
def _clip_v1(n: OnnxNode) -> None:
    lo, hi = n.attrs.get("min", _F32_LOWEST), n.attrs.get("max", _F32_MAX)
    n.emit(Op.CLIP, n.inputs[:1], ClipAttrs(float(lo), float(hi)))


@converts("Clip", emits=[Op.CLIP], since=11)
def _clip_v11(n: OnnxNode) -> None:
    lo = n.scalar(1, "min") if n.has(1) else _F32_LOWEST
    hi = n.scalar(2, "max") if n.has(2) else _F32_MAX
    n.emit(Op.CLIP, n.inputs[:1], ClipAttrs(float(lo), float(hi)))


@converts("LeakyRelu", emits=[Op.LEAKY_RELU], attrs=["alpha"])
def _leaky_relu(n: OnnxNode) -> None:
    n.emit(Op.LEAKY_RELU, n.inputs, LeakyReluAttrs(float(n.attrs.get("alpha", 0.01))))


@converts("Softmax", emits=[Op.SOFTMAX], attrs=["axis"])
def _softmax_v1(n: OnnxNode) -> None:
    rank = n.rank()
    axis = n.axis(n.attrs.get("axis", 1), rank)
    if axis != rank - 1:
        raise n.unsupported(
            f"axis {axis} of a rank-{rank} input: before opset 13 Softmax flattens the axes from "
            "it on, supported only where that is the last axis"
        )
    n.emit(Op.SOFTMAX, n.inputs, AxisAttrs(axis))


@converts("Softmax", emits=[Op.SOFTMAX], attrs=["axis"], since=13)
def _softmax_v13(n: OnnxNode) -> None:
    n.emit(Op.SOFTMAX, n.inputs, AxisAttrs(n.axis(n.attrs.get("axis", -1), n.rank())))


@converts("HardSigmoid", emits=HARD_SIGMOID_OPS, attrs=["alpha", "beta"])
def _hard_sigmoid(n: OnnxNode) -> None:
    alpha, beta = float(n.attrs.get("alpha", 0.2)), float(n.attrs.get("beta", 0.5))
    hard_sigmoid(n.builder, n.inputs[0], name=n.name, out=n.proto.output[0], alpha=alpha, beta=beta)


@converts("HardSwish", emits=HARD_SIGMOID_OPS)
def _hard_swish(n: OnnxNode) -> None:
    hard_swish(n.builder, n.inputs[0], name=n.name, out=n.proto.output[0])


@converts("Gelu", emits=GELU_OPS, attrs=["approximate"], since=20)
def _gelu(n: OnnxNode) -> None:
    approximate = n.attrs.get("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise n.error(f"approximate {approximate!r} is not 'none' or 'tanh'")
    gelu(n.builder, n.inputs[0], name=n.name, out=n.proto.output[0], approximate=approximate)


@converts("Mod", emits=[Op.MOD], attrs=["fmod"])
def _mod(n: OnnxNode) -> None:
    n.emit(Op.MOD, n.inputs, ModAttrs(bool(n.attrs.get("fmod", 0))))


@converts("Cast", emits=[Op.CAST], attrs=["to", "saturate", "round_mode"])
def _cast(n: OnnxNode) -> None:
    to = n.attr("to")
    try:
        dtype = str(helper.tensor_dtype_to_np_dtype(to))
    except (KeyError, ValueError):
        dtype = f"element type {to}"
    if dtype not in DTYPES:
        raise n.unsupported(f"casts to {dtype}, not one of {', '.join(DTYPES)}")
    round_mode = n.attrs.get("round_mode", "up")
    if round_mode not in ROUND_MODES:
        raise n.error(f"round_mode {round_mode!r} is not one of {', '.join(ROUND_MODES)}")
    n.emit(Op.CAST, n.inputs, CastAttrs(dtype, bool(n.attrs.get("saturate", 1)), round_mode))


# ----------------------------------------------------------------------------- pooling
def _pool(op: Op) -> Converter:
    """MaxPool and AveragePool of any spatial rank (1-D through :func:`pool_1d`, as 2-D)."""

    def convert(n: OnnxNode) -> None:
        if n.rank() == 3:
            pool_1d(n, op)
            return
        if n.rank() < 3:
            raise n.unsupported(f"needs an (N, C, *spatial) input, got rank {n.rank()}")
        rank = n.rank() - 2
        kernel = n.ints("kernel_shape", None, rank)
        strides = n.ints("strides", (1,) * rank, rank)
        dilations = n.ints("dilations", (1,) * rank, rank)
        extents = [d * (k - 1) + 1 for d, k in zip(dilations, kernel, strict=True)]
        attrs = PoolAttrs(
            kernel,
            strides,
            _pads(n, extents, strides),
            bool(n.attrs.get("ceil_mode", 0)),
            bool(n.attrs.get("count_include_pad", 0)),
            dilations,
        )
        n.emit(op, n.inputs, attrs)

    return convert


converts(
    "MaxPool", emits=[Op.MAX_POOL, Op.RESHAPE], attrs=[*_WINDOW, "ceil_mode", "storage_order"]
)(_pool(Op.MAX_POOL))
converts(
    "AveragePool",
    emits=[Op.AVERAGE_POOL, Op.RESHAPE],
    attrs=[*_WINDOW, "ceil_mode", "count_include_pad"],
)(_pool(Op.AVERAGE_POOL))


# ----------------------------------------------------------------------------- normalisation
@converts(
    "BatchNormalization",
    emits=[Op.BATCH_NORM],
    attrs=["epsilon", "momentum", "spatial", "training_mode"],
)
def _batch_norm(n: OnnxNode) -> None:
    if n.attrs.get("training_mode", 0) or not n.attrs.get("spatial", 1):
        raise n.unsupported("supports inference-mode, spatial batch normalisation only")
    n.emit(Op.BATCH_NORM, n.inputs, BatchNormAttrs(float(n.attrs.get("epsilon", 1e-5))))


@converts(
    "LayerNormalization",
    emits=[Op.LAYER_NORM, Op.REDUCE_MEAN, Op.SUB, Op.MUL, Op.ADD, Op.SQRT, Op.RECIPROCAL],
    attrs=["axis", "epsilon", "stash_type"],
    since=17,
)
def _layer_norm(n: OnnxNode) -> None:
    """The normalised output; where the model reads them, also the optional outputs Mean and
    InvStdDev (over the normalised axes, kept as axes of size 1), computed by their own
    nodes."""
    if n.attrs.get("stash_type", 1) != TensorProto.FLOAT:
        raise n.unsupported("computes in float32 only (stash_type 1)")
    axis = n.axis(n.attrs.get("axis", -1), n.rank())
    epsilon = float(np.float32(n.attrs.get("epsilon", 1e-5)))
    n.emit(Op.LAYER_NORM, [v for v in n.inputs if v], LayerNormAttrs(axis, epsilon))
    mean_out, inv_std_out = [*n.proto.output[1:3], "", ""][:2]
    if not mean_out and not inv_std_out:
        return
    b, x, name = n.builder, n.inputs[0], n.name
    reduce = ReduceAttrs(tuple(range(axis, n.rank())), True)
    mean = b.add(
        Op.REDUCE_MEAN,
        [x],
        reduce,
        name=b.fresh(f"{name}.mean"),
        outputs=[mean_out or b.fresh(f"{name}.mean")],
    )[0]
    if not inv_std_out:
        return
    centred = b.add1(Op.SUB, [x, mean], name=b.fresh(f"{name}.centred"))
    square = b.add1(Op.MUL, [centred, centred], name=b.fresh(f"{name}.square"))
    var = b.add1(Op.REDUCE_MEAN, [square], reduce, name=b.fresh(f"{name}.var"))
    eps = b.param(b.fresh(f"{name}.epsilon"), np.array(epsilon, np.float32))
    root = b.add1(
        Op.SQRT,
        [b.add1(Op.ADD, [var, eps], name=b.fresh(f"{name}.var_eps"))],
        name=b.fresh(f"{name}.std"),
    )
    b.add(Op.RECIPROCAL, [root], name=b.fresh(f"{name}.inv_std"), outputs=[inv_std_out])


# ----------------------------------------------------------------------------- data movement
@converts("Flatten", emits=[Op.FLATTEN], attrs=["axis"])
def _flatten(n: OnnxNode) -> None:
    rank = n.rank()
    axis = n.attrs.get("axis", 1)
    if not -rank <= axis <= rank:  # Flatten's axis may be the rank itself
        raise n.error(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    n.emit(Op.FLATTEN, n.inputs, AxisAttrs(axis))


@converts("Reshape", emits=[Op.RESHAPE], attrs=["allowzero"])
def _reshape(n: OnnxNode) -> None:
    target = [int(d) for d in n.const(1, "the shape").reshape(-1)]
    source = n.shape()
    if not n.attrs.get("allowzero", 0):
        for i, d in enumerate(target):
            if d == 0:
                if i >= len(source):
                    raise n.error(f"shape {target}: dimension {i} copies a missing input dim")
                target[i] = source[i]
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise n.error(f"shape {target} has more than one -1 or a negative dimension")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        size = int(np.prod(source, dtype=np.int64))
        if known == 0 or size % known:
            raise n.error(f"cannot reshape {list(source)} to {target}")
        target[target.index(-1)] = size // known
    n.emit(Op.RESHAPE, n.inputs[:1], ReshapeAttrs(tuple(target)))


@converts("Transpose", emits=[Op.TRANSPOSE], attrs=["perm"])
def _transpose(n: OnnxNode) -> None:
    perm = n.attrs.get("perm", range(n.rank() - 1, -1, -1))
    n.emit(Op.TRANSPOSE, n.inputs, TransposeAttrs(tuple(int(p) for p in perm)))


@converts("Concat", emits=[Op.CONCAT], attrs=["axis"])
def _concat(n: OnnxNode) -> None:
    n.emit(Op.CONCAT, n.inputs, AxisAttrs(n.axis(n.attr("axis"), n.rank())))


def _pad_mode(n: OnnxNode) -> str:
    mode = n.attrs.get("mode", "constant")
    if mode not in PAD_MODES:
        raise n.error(f"mode {mode!r} is not one of {', '.join(PAD_MODES)}")
    return mode


@converts("Pad", emits=[Op.PAD], attrs=["mode", "pads", "value"])
def _pad_v1(n: OnnxNode) -> None:
    mode = _pad_mode(n)
    pads, value = list(n.attr("pads")), float(n.attrs.get("value", 0.0))
    n.emit(Op.PAD, n.inputs[:1], PadAttrs(tuple(pads), value, mode))


@converts("Pad", emits=[Op.PAD], attrs=["mode"], since=11)
def _pad_v11(n: OnnxNode) -> None:
    mode = _pad_mode(n)
    rank = n.rank()
    pads = [int(p) for p in n.const(1, "the pads").reshape(-1)]
    value = float(n.scalar(2, "the constant value")) if n.has(2) else 0.0
    if n.has(3):
        axes = [n.axis(int(a), rank) for a in n.const(3, "the axes").reshape(-1)]
        if len(pads) != 2 * len(axes):
            raise n.error(f"needs {2 * len(axes)} pads for axes {axes}, got {len(pads)}")
        full = [0] * (2 * rank)
        for k, axis in enumerate(axes):
            full[axis], full[axis + rank] = pads[k], pads[k + len(axes)]
        pads = full
    n.emit(Op.PAD, n.inputs[:1], PadAttrs(tuple(pads), value, mode))


# ----------------------------------------------------------------------------- quantization
def _quant(op: Op) -> Converter:
    """QuantizeLinear (to one of QUANTIZED) and DequantizeLinear (of those or int32, as
    biases are) with a constant per-tensor float32 scale and zero point (0 for the float
    types); QuantizeLinear saturates (``saturate`` must be 1, its default). A DequantizeLinear
    of a constant (a QDQ model's weights and biases) with per-axis scales becomes the float
    constant it computes (:func:`_dequantized_constant`)."""

    def convert(n: OnnxNode) -> None:
        if n.attrs.get("block_size", 0):
            raise n.unsupported("blocked quantization is not supported")
        scale = n.const(1, "the scale")
        zero = n.const(2, "the zero point") if n.has(2) else None
        per_axis = scale.size != 1 or (zero is not None and zero.size != 1)
        if per_axis and op is Op.DEQUANTIZE and n.builder.param_of(n.inputs[0]) is not None:
            n.builder.param(n.proto.output[0], _dequantized_constant(n, scale, zero))
            return
        if per_axis:
            raise n.unsupported(
                "per-axis quantization is not supported (per-tensor only, or per-axis "
                "DequantizeLinear of a constant)"
            )
        if scale.dtype != np.float32:
            raise n.unsupported(f"supports float32 scales only, not {scale.dtype}")
        if op is Op.QUANTIZE:
            if not n.attrs.get("saturate", 1):
                raise n.unsupported("saturates always (saturate must be 1)")
            # the zero point's type is the output's (uint8 if it is left out) unless output_dtype
            wanted = n.attrs.get("output_dtype", 0)
            dtype = (
                str(helper.tensor_dtype_to_np_dtype(wanted))
                if wanted
                else str(zero.dtype)
                if zero is not None
                else "uint8"
            )
            if dtype not in QUANTIZED:
                raise n.unsupported(f"quantizes to {', '.join(QUANTIZED)} only, not {dtype}")
        else:
            dtype = n.builder.type_of(n.inputs[0]).dtype
            if dtype not in (*QUANTIZED, "int32"):
                raise n.unsupported(
                    f"dequantizes {', '.join(QUANTIZED)} or int32 values only, not {dtype}"
                )
        if zero is not None and str(zero.dtype) != dtype:
            raise n.error(f"the zero point is {zero.dtype}, the quantized values {dtype}")
        zero_point = 0 if zero is None else float(zero.reshape(()))
        if dtype in QUANTIZED_FLOATS and zero_point != 0:
            raise n.unsupported(f"the zero point of {dtype} must be 0, not {zero_point}")
        n.emit(op, n.inputs[:1], QuantAttrs(float(scale.reshape(())), int(zero_point), dtype))

    return convert


def _dequantized_constant(n: OnnxNode, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    """``(x - zero_point) * scale`` of the constant input with per-axis float32 scales (and
    zero points) along ``axis`` (default 1), in float32 as onnxruntime computes it (the
    difference in int32)."""
    x = n.const(0, "the quantized values")
    if scale.dtype != np.float32:
        raise n.unsupported(f"supports float32 scales only, not {scale.dtype}")
    if x.dtype.kind not in "iu":
        raise n.unsupported(f"dequantizes integer constants per axis only, not {x.dtype}")
    axis = n.axis(int(n.attrs.get("axis", 1)), x.ndim)
    if scale.shape != (x.shape[axis],) or (zero is not None and zero.shape != scale.shape):
        raise n.error(
            f"per-axis scales {list(scale.shape)} and zero points must have the "
            f"{x.shape[axis]} entries of axis {axis} of {list(x.shape)}"
        )
    if zero is not None and zero.dtype != x.dtype:
        raise n.error(f"the zero point is {zero.dtype}, the quantized values {x.dtype}")
    shape = [1] * x.ndim
    shape[axis] = -1
    offset = np.zeros(1, np.int32) if zero is None else zero.astype(np.int32).reshape(shape)
    return (x.astype(np.int32) - offset).astype(np.float32) * scale.reshape(shape)


converts(
    "QuantizeLinear",
    emits=[Op.QUANTIZE],
    attrs=["axis", "block_size", "output_dtype", "saturate"],
)(_quant(Op.QUANTIZE))
converts("DequantizeLinear", emits=[Op.DEQUANTIZE], attrs=["axis", "block_size"])(
    _quant(Op.DEQUANTIZE)
)


# ----------------------------------------------------------------------------- no node
@converts("Constant", attrs=["value", "value_float", "value_floats", "value_int", "value_ints"])
def _constant(n: OnnxNode) -> None:
    ((key, value),) = n.attrs.items()  # the checker lets a Constant have exactly one
    if key == "value":
        array = numpy_helper.to_array(value)
    else:
        array = np.array(value, np.float32 if key.startswith("value_float") else np.int64)
    n.builder.param(n.proto.output[0], array)


@converts("Identity", emits=[Op.IDENTITY])
def _identity(n: OnnxNode) -> str:
    return n.inputs[0]


@converts("Dropout", emits=[Op.IDENTITY], attrs=["ratio", "seed"])
def _dropout(n: OnnxNode) -> str:
    if n.has(2) and bool(n.scalar(2, "training_mode")):
        raise n.unsupported("supports inference mode only (training_mode must be false)")
    return n.inputs[0]
