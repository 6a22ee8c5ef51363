"""The aten operators the PyTorch frontend reads: one registered converter per operator
(:func:`~compiler.frontend.torch_node.converts`), with the mapping the module docstring of
:mod:`compiler.frontend.torch` describes."""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import fx

from compiler.frontend.composites import (
    GELU_OPS,
    HARD_SIGMOID_OPS,
    SILU_OPS,
    gelu,
    hard_sigmoid,
    hard_swish,
    silu,
)
from compiler.frontend.torch_node import (
    Converter,
    TorchImport,
    converts,
    f32,
    meta_type,
    norm_axis,
    pair,
    unsupported,
)
from compiler.graph.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ClipAttrs,
    ConvAttrs,
    GemmAttrs,
    LeakyReluAttrs,
    Op,
    PadAttrs,
    PoolAttrs,
    ReshapeAttrs,
    TransposeAttrs,
)
from runtime.opset import CastAttrs, LayerNormAttrs
from runtime.opset.indexing import SliceAttrs
from runtime.opset.reduction import ReduceAttrs

__all__: list[str] = []  # importing this module registers the converters

_F32_LOWEST = float(np.finfo(np.float32).min)
_F32_MAX = float(np.finfo(np.float32).max)

#: ``pad``'s modes, as the IR's PadAttrs spells them.
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


@converts("conv2d.default", "conv2d.padding", emits=[Op.CONV])
def _conv(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    dilations = pair(args["dilation"])
    padding = args["padding"]
    if isinstance(padding, str):  # the conv2d.padding overload: "valid" or "same"
        if padding == "valid":
            pads = (0, 0, 0, 0)
        else:  # torch's "same" puts the odd pixel at the end, as ONNX's SAME_UPPER
            kernel = imp.builder.type_of(imp.value(args["weight"])).shape[2:]
            total = [d * (k - 1) for d, k in zip(dilations, kernel, strict=True)]
            pads = (*(t // 2 for t in total), *(t - t // 2 for t in total))
    else:
        pads = pair(padding) * 2
    attrs = ConvAttrs(pair(args["stride"]), pads, dilations, int(args["groups"]))
    inputs = [imp.value(args["input"]), imp.value(args["weight"])]
    if args["bias"] is not None:
        inputs.append(imp.value(args["bias"]))
    return imp.add(node, Op.CONV, inputs, attrs)


@converts("linear.default", emits=[Op.GEMM, Op.MATMUL, Op.ADD, Op.TRANSPOSE])
def _linear(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x, weight, bias = imp.value(args["input"]), imp.value(args["weight"]), args["bias"]
    if imp.rank(args["input"]) == 2 and bias is not None:
        return imp.add(node, Op.GEMM, [x, weight, imp.value(bias)], GemmAttrs(trans_b=True))
    # torch.onnx's rule: MatMul by the transposed weight (folded where it is a parameter),
    # then Add(bias, product)
    array = imp.builder.param_of(weight)
    if array is None:
        transposed = imp.builder.add1(
            Op.TRANSPOSE, [weight], TransposeAttrs((1, 0)), name=f"{node.name}.weight_t"
        )
    else:
        transposed = imp.builder.param(imp.builder.fresh(f"{weight}.T"), array.T)
    if bias is None:
        return imp.add(node, Op.MATMUL, [x, transposed])
    product = imp.builder.add1(Op.MATMUL, [x, transposed], name=f"{node.name}.matmul")
    return imp.add(node, Op.ADD, [imp.value(bias), product])


@converts("matmul.default", "mm.default", emits=[Op.MATMUL])
def _matmul(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    other = args["other"] if "other" in args else args["mat2"]
    return imp.add(node, Op.MATMUL, [imp.value(args["self"]), imp.value(other)])


def _binary(op: Op, *, swap: bool = False) -> Converter:
    """ADD/SUB/MUL of ``self`` and ``other`` (``other`` first with ``swap``: ``rsub``)."""

    def convert(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
        if args.get("alpha", 1) != 1:
            raise unsupported(node, f"alpha={args['alpha']} is not supported")
        a = imp.operand(args["self"], node, "self")
        b = imp.operand(args["other"], node, "other")
        return imp.add(node, op, [b, a] if swap else [a, b])

    return convert


@converts("relu.default", "relu_.default", emits=[Op.RELU])
def _relu(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    return imp.add(node, Op.RELU, [imp.value(args["self"])])


@converts("sigmoid.default", "sigmoid_.default", emits=[Op.SIGMOID])
def _sigmoid(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    return imp.add(node, Op.SIGMOID, [imp.value(args["self"])])


def _clip(lo_arg: str, hi_arg: str) -> Converter:
    """CLIP between the arguments named ``lo_arg`` and ``hi_arg``; a bound left out (None) is
    float32's extreme, as ONNX's Clip without it."""

    def convert(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
        lo, hi = args[lo_arg], args[hi_arg]
        attrs = ClipAttrs(
            _F32_LOWEST if lo is None else f32(lo), _F32_MAX if hi is None else f32(hi)
        )
        return imp.add(node, Op.CLIP, [imp.value(args["self"])], attrs)

    return convert


@converts("relu6.default", "relu6_.default", emits=[Op.CLIP])
def _relu6(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    return imp.add(node, Op.CLIP, [imp.value(args["self"])], ClipAttrs(0.0, 6.0))


@converts("leaky_relu.default", "leaky_relu_.default", emits=[Op.LEAKY_RELU])
def _leaky_relu(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    attrs = LeakyReluAttrs(f32(args["negative_slope"]))
    return imp.add(node, Op.LEAKY_RELU, [imp.value(args["self"])], attrs)


def _pool(op: Op) -> Converter:
    """MAX_POOL (``max_pool2d``) or AVERAGE_POOL (``avg_pool2d``)."""

    def convert(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
        kernel = pair(args["kernel_size"])
        strides = pair(args["stride"]) if args["stride"] else kernel
        if pair(args.get("dilation", 1)) != (1, 1):
            raise unsupported(node, f"dilation {list(pair(args['dilation']))} is not supported")
        if args.get("divisor_override") is not None:
            raise unsupported(node, "divisor_override is not supported")
        attrs = PoolAttrs(
            kernel,
            strides,
            pair(args["padding"]) * 2,
            bool(args["ceil_mode"]),
            bool(args.get("count_include_pad", False)),
        )
        return imp.add(node, op, [imp.value(args["self"])], attrs)

    return convert


@converts(
    "adaptive_avg_pool2d.default",
    emits=[
        *(Op.GLOBAL_AVERAGE_POOL, Op.AVERAGE_POOL, Op.IDENTITY),
        *(Op.SLICE, Op.REDUCE_MEAN, Op.CONCAT),
    ],
)
def _adaptive_avg_pool(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    """To 1x1: a global average; to a size that divides the input's: an average pool whose
    windows tile the input (torch's windows there; to the input's own size, the input); to any
    other size: each output cell the mean of its own window (rows ``floor(i*H/oh)`` to
    ``ceil((i+1)*H/oh)``, likewise columns), as slices averaged and concatenated."""
    x = imp.value(args["self"])
    size = pair(args["output_size"])
    shape = imp.builder.type_of(x).shape
    spatial = shape[-2:]
    if size == (1, 1) and len(shape) == 4:
        return imp.add(node, Op.GLOBAL_AVERAGE_POOL, [x])
    if size == tuple(spatial):
        return imp.add(node, Op.IDENTITY, [x])
    if len(shape) == 4 and not any(s % o for s, o in zip(spatial, size, strict=True)):
        window = tuple(s // o for s, o in zip(spatial, size, strict=True))
        return imp.add(node, Op.AVERAGE_POOL, [x], PoolAttrs(window, window))
    return _adaptive_cells(imp, node, x, shape, size)


def _adaptive_cells(
    imp: TorchImport, node: fx.Node, x: str, shape: tuple[int, ...], size: tuple[int, int]
) -> str:
    """Adaptive average pooling cell by cell: a row of cells concatenated along W, the rows
    along H."""
    b, rank = imp.builder, len(shape)
    (h, w), (oh, ow) = shape[-2:], size
    rows = []
    for i in range(oh):
        cells = []
        for j in range(ow):
            window_h = ((i * h) // oh, -(-((i + 1) * h) // oh))
            window_w = ((j * w) // ow, -(-((j + 1) * w) // ow))
            bounds = SliceAttrs.along(shape, {rank - 2: window_h, rank - 1: window_w})
            window = b.add1(Op.SLICE, [x], bounds, name=b.fresh(f"{node.name}.window"))
            mean = ReduceAttrs((rank - 2, rank - 1), True)
            cells.append(b.add1(Op.REDUCE_MEAN, [window], mean, name=b.fresh(f"{node.name}.cell")))
        rows.append(b.add1(Op.CONCAT, cells, AxisAttrs(rank - 1), name=b.fresh(f"{node.name}.row")))
    return imp.add(node, Op.CONCAT, rows, AxisAttrs(rank - 2))


@converts("batch_norm.default", emits=[Op.BATCH_NORM])
def _batch_norm(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    if args["training"] or args["running_mean"] is None or args["running_var"] is None:
        raise unsupported(node, "batch statistics (training mode) are not supported")
    x = imp.value(args["input"])
    channels = imp.builder.type_of(x).shape[1]
    affine = []
    for name, fill in (("weight", 1.0), ("bias", 0.0)):
        if args[name] is None:  # affine=False: the identity scale and shift
            array = np.full(channels, fill, np.float32)
            affine.append(imp.builder.param(imp.builder.fresh(f"{node.name}.{name}"), array))
        else:
            affine.append(imp.value(args[name]))
    inputs = [x, *affine, imp.value(args["running_mean"]), imp.value(args["running_var"])]
    return imp.add(node, Op.BATCH_NORM, inputs, BatchNormAttrs(f32(args["eps"])))


@converts("flatten.using_ints", emits=[Op.FLATTEN, Op.RESHAPE])
def _flatten(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    rank = imp.rank(args["self"])
    if rank >= 2 and (norm_axis(args["start_dim"], rank), norm_axis(args["end_dim"], rank)) == (
        1,
        rank - 1,
    ):
        return imp.add(node, Op.FLATTEN, [imp.value(args["self"])], AxisAttrs(1))
    return _reshape(imp, node, args)


@converts(
    "view.default",
    "reshape.default",
    "unflatten.int",
    "squeeze.default",
    "squeeze.dim",
    "squeeze.dims",
    "unsqueeze.default",
    emits=[Op.RESHAPE],
)
def _reshape(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    attrs = ReshapeAttrs(meta_type(node)[0])
    return imp.add(node, Op.RESHAPE, [imp.value(args["self"])], attrs)


@converts("permute.default", emits=[Op.TRANSPOSE])
def _permute(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    rank = imp.rank(args["self"])
    perm = tuple(norm_axis(d, rank) for d in args["dims"])
    return imp.add(node, Op.TRANSPOSE, [imp.value(args["self"])], TransposeAttrs(perm))


@converts("transpose.int", emits=[Op.TRANSPOSE])
def _transpose(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    rank = imp.rank(args["self"])
    perm = list(range(rank))
    a, b = norm_axis(args["dim0"], rank), norm_axis(args["dim1"], rank)
    perm[a], perm[b] = perm[b], perm[a]
    return imp.add(node, Op.TRANSPOSE, [imp.value(args["self"])], TransposeAttrs(tuple(perm)))


@converts("cat.default", emits=[Op.CONCAT])
def _cat(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    inputs = [imp.value(t) for t in args["tensors"]]
    axis = norm_axis(args["dim"], len(imp.builder.type_of(inputs[0]).shape))
    return imp.add(node, Op.CONCAT, inputs, AxisAttrs(axis))


@converts("pad.default", "constant_pad_nd.default", emits=[Op.PAD])
def _pad(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    mode = args.get("mode", "constant")
    if mode not in _PAD_MODES:
        raise unsupported(node, f"mode {mode!r} is not supported")
    rank = imp.rank(args["self"])
    pad = [int(p) for p in args["pad"]]
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch lists (begin, end) from the last axis backwards
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    value = args["value"] if args["value"] is not None else 0.0
    attrs = PadAttrs(tuple(begins + ends), f32(value), _PAD_MODES[mode])
    return imp.add(node, Op.PAD, [imp.value(args["self"])], attrs)


@converts("softmax.int", emits=[Op.SOFTMAX])
def _softmax(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    if args["dtype"] is not None:
        raise unsupported(node, f"dtype={args['dtype']} is not supported")
    axis = norm_axis(args["dim"], imp.rank(args["self"]))
    return imp.add(node, Op.SOFTMAX, [imp.value(args["self"])], AxisAttrs(axis))


@converts("dropout.default", "dropout_.default", "feature_dropout.default")
def _dropout(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    if args["train"] and args["p"] > 0:
        raise unsupported(node, "dropout in training mode is not supported")
    return imp.value(args["input"] if "input" in args else args["self"])


@converts("clone.default", "detach.default", "alias.default")
def _alias(imp: TorchImport, _node: fx.Node, args: dict[str, Any]) -> str:
    return imp.value(args["self"])


converts("add.Tensor", "add_.Tensor", emits=[Op.ADD])(_binary(Op.ADD))
converts("sub.Tensor", "sub_.Tensor", emits=[Op.SUB])(_binary(Op.SUB))
converts("rsub.Scalar", emits=[Op.SUB])(_binary(Op.SUB, swap=True))
converts("mul.Tensor", "mul_.Tensor", emits=[Op.MUL])(_binary(Op.MUL))
converts("hardtanh.default", "hardtanh_.default", emits=[Op.CLIP])(_clip("min_val", "max_val"))
converts("clamp.default", "clamp_.default", emits=[Op.CLIP])(_clip("min", "max"))
converts("max_pool2d.default", emits=[Op.MAX_POOL])(_pool(Op.MAX_POOL))
converts("avg_pool2d.default", emits=[Op.AVERAGE_POOL])(_pool(Op.AVERAGE_POOL))


# ----------------------------------------------------------------------------- math
def _unary(op: Op) -> Converter:
    """``op`` of ``self`` alone."""
    return lambda imp, node, args: imp.add(node, op, [imp.value(args["self"])])


for _name, _op in [
    ("tanh", Op.TANH),
    ("exp", Op.EXP),
    ("log", Op.LOG),
    ("sqrt", Op.SQRT),
    ("reciprocal", Op.RECIPROCAL),
    ("erf", Op.ERF),
    ("neg", Op.NEG),
    ("abs", Op.ABS),
    ("floor", Op.FLOOR),
    ("ceil", Op.CEIL),
    ("logical_not", Op.NOT),
]:
    converts(f"{_name}.default", f"{_name}_.default", emits=[_op])(_unary(_op))


@converts("bitwise_not.default", emits=[Op.NOT])
def _bitwise_not(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    if meta_type(node)[1] != "bool":
        raise unsupported(node, "bitwise_not of integers is not supported (of bools it is Not)")
    return imp.add(node, Op.NOT, [imp.value(args["self"])])


@converts("rsqrt.default", emits=[Op.SQRT, Op.RECIPROCAL])
def _rsqrt(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    root = imp.builder.add1(Op.SQRT, [imp.value(args["self"])], name=f"{node.name}.sqrt")
    return imp.add(node, Op.RECIPROCAL, [root])


def _pair_of(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> list[str]:
    """``self`` and ``other`` as values, a scalar ``other`` in ``self``'s dtype."""
    a = imp.value(args["self"])
    return [a, imp.operand(args["other"], node, "other", like=a)]


def _elementwise(op: Op) -> Converter:
    """``op`` of ``self`` and ``other`` (a tensor or a scalar)."""
    return lambda imp, node, args: imp.add(node, op, _pair_of(imp, node, args))


for _name, _op in [
    ("eq", Op.EQUAL),
    ("lt", Op.LESS),
    ("le", Op.LESS_OR_EQUAL),
    ("gt", Op.GREATER),
    ("ge", Op.GREATER_OR_EQUAL),
]:
    converts(f"{_name}.Tensor", f"{_name}.Scalar", emits=[_op])(_elementwise(_op))
converts("maximum.default", emits=[Op.MAX])(_elementwise(Op.MAX))
converts("minimum.default", emits=[Op.MIN])(_elementwise(Op.MIN))
converts("logical_and.default", emits=[Op.AND])(_elementwise(Op.AND))
converts("logical_or.default", emits=[Op.OR])(_elementwise(Op.OR))
converts("logical_xor.default", emits=[Op.XOR])(_elementwise(Op.XOR))


def _bitwise(op: Op) -> Converter:
    """A bitwise operator of bools: the logic operator ``op``."""

    def convert(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
        if meta_type(node)[1] != "bool":
            raise unsupported(node, "bitwise operators of integers are not supported")
        return imp.add(node, op, _pair_of(imp, node, args))

    return convert


converts("bitwise_and.Tensor", "__and__.Tensor", emits=[Op.AND])(_bitwise(Op.AND))
converts("bitwise_or.Tensor", "__or__.Tensor", emits=[Op.OR])(_bitwise(Op.OR))
converts("bitwise_xor.Tensor", "__xor__.Tensor", emits=[Op.XOR])(_bitwise(Op.XOR))


@converts("div.Tensor", "div_.Tensor", "div.Tensor_mode", emits=[Op.DIV, Op.FLOOR, Op.CAST])
def _div(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    """True division (of integers: in float32, as torch promotes them), or with
    ``rounding_mode`` "floor" of floats and "trunc" of integers."""
    mode = args.get("rounding_mode")
    inputs = _pair_of(imp, node, args)
    dtype, result = imp.builder.type_of(inputs[0]).dtype, meta_type(node)[1]
    if dtype != result:  # integers divided truly: torch computes in float32
        inputs = [
            imp.builder.add1(Op.CAST, [v], CastAttrs(result), name=f"{node.name}.cast{k}")
            for k, v in enumerate(inputs)
        ]
    floats = result == "float32"
    if (mode is None and floats) or (mode == "trunc" and not floats):
        return imp.add(node, Op.DIV, inputs)
    if mode == "floor" and floats:
        quotient = imp.builder.add1(Op.DIV, inputs, name=f"{node.name}.quotient")
        return imp.add(node, Op.FLOOR, [quotient])
    kind = "floor division of integers" if mode == "floor" else f"rounding_mode={mode!r}"
    raise unsupported(node, f"{kind} is not supported (of {result} values)")


@converts("pow.Tensor_Scalar", "pow.Tensor_Tensor", emits=[Op.POW])
def _pow(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    base = imp.value(args["self"])
    exponent = imp.operand(args["exponent"], node, "exponent", like=base)
    return imp.add(node, Op.POW, [base, exponent])


@converts("where.self", emits=[Op.WHERE])
def _where(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    inputs = [imp.value(args["condition"]), imp.value(args["self"]), imp.value(args["other"])]
    return imp.add(node, Op.WHERE, inputs)


@converts("masked_fill.Scalar", "masked_fill.Tensor", emits=[Op.WHERE])
def _masked_fill(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x = imp.value(args["self"])
    fill = imp.operand(args["value"], node, "value", like=x)
    return imp.add(node, Op.WHERE, [imp.value(args["mask"]), fill, x])


@converts("clamp_min.default", "clamp_min_.default", emits=[Op.CLIP])
def _clamp_min(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    attrs = ClipAttrs(f32(args["min"]), _F32_MAX)
    return imp.add(node, Op.CLIP, [imp.value(args["self"])], attrs)


@converts("to.dtype", "_to_copy.default", "type_as.default", emits=[Op.CAST, Op.IDENTITY])
def _to(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x = imp.value(args["self"])
    target = meta_type(node)[1]
    if imp.builder.type_of(x).dtype == target:
        return x
    return imp.add(node, Op.CAST, [x], CastAttrs(target))


# ----------------------------------------------------------------------------- composites
@converts("gelu.default", "gelu_.default", emits=GELU_OPS)
def _gelu(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    approximate = args.get("approximate", "none")
    return gelu(
        imp.builder, imp.value(args["self"]), name=node.name, out=None, approximate=approximate
    )


@converts("silu.default", "silu_.default", emits=SILU_OPS)
def _silu(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    return silu(imp.builder, imp.value(args["self"]), name=node.name, out=None)


@converts("hardswish.default", "hardswish_.default", emits=HARD_SIGMOID_OPS)
def _hardswish(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    return hard_swish(imp.builder, imp.value(args["self"]), name=node.name, out=None)


@converts("hardsigmoid.default", "hardsigmoid_.default", emits=HARD_SIGMOID_OPS)
def _hardsigmoid(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x = imp.value(args["self"])
    return hard_sigmoid(imp.builder, x, name=node.name, out=None, alpha=1 / 6, beta=0.5)


@converts("layer_norm.default", emits=[Op.LAYER_NORM])
def _layer_norm(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x = imp.value(args["input"])
    shape = tuple(args["normalized_shape"])
    rank = imp.rank(args["input"])
    affine = []
    for role, fill in (("weight", 1.0), ("bias", 0.0)):
        if args[role] is None:
            array = np.full(shape, fill, np.float32)
            affine.append(imp.builder.param(imp.builder.fresh(f"{node.name}.{role}"), array))
        else:
            affine.append(imp.value(args[role]))
    attrs = LayerNormAttrs(rank - len(shape), f32(args["eps"]))
    return imp.add(node, Op.LAYER_NORM, [x, *affine], attrs)


@converts("addmm.default", emits=[Op.GEMM])
def _addmm(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    """``beta * self + alpha * (mat1 @ mat2)``: ONNX's Gemm exactly."""
    inputs = [imp.value(args["mat1"]), imp.value(args["mat2"]), imp.value(args["self"])]
    attrs = GemmAttrs(alpha=f32(args["alpha"]), beta=f32(args["beta"]))
    return imp.add(node, Op.GEMM, inputs, attrs)


@converts(
    "scaled_dot_product_attention.default",
    emits=[Op.MATMUL, Op.TRANSPOSE, Op.MUL, Op.ADD, Op.WHERE, Op.SOFTMAX],
)
def _attention(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    """``softmax(q @ k^T * scale + mask) @ v`` (a bool mask keeps where true, a float mask
    adds; ``is_causal`` keeps the lower triangle), decomposed as torch defines it."""
    if args.get("dropout_p", 0.0) or args.get("enable_gqa", False):
        raise unsupported(node, "attention with dropout or grouped queries is not supported")
    q, k, v = (imp.value(args[name]) for name in ("query", "key", "value"))
    q_shape, k_shape = imp.builder.type_of(q).shape, imp.builder.type_of(k).shape
    b, name = imp.builder, node.name
    rank = len(k_shape)
    perm = (*range(rank - 2), rank - 1, rank - 2)
    k_t = b.add1(Op.TRANSPOSE, [k], TransposeAttrs(perm), name=b.fresh(f"{name}.key_t"))
    scores = b.add1(Op.MATMUL, [q, k_t], name=b.fresh(f"{name}.scores"))
    scale = args.get("scale") or 1 / np.sqrt(q_shape[-1])
    factor = b.param(b.fresh(f"{name}.scale"), np.array(scale, np.float32))
    scores = b.add1(Op.MUL, [scores, factor], name=b.fresh(f"{name}.scaled"))
    mask = args.get("attn_mask")
    if args.get("is_causal", False):
        causal = np.tril(np.ones((q_shape[-2], k_shape[-2]), bool))
        mask = b.param(b.fresh(f"{name}.causal"), causal)
    elif mask is not None:
        mask = imp.value(mask)
    if mask is not None and b.type_of(mask).dtype == "bool":
        lowest = b.param(b.fresh(f"{name}.masked"), np.array(-np.inf, np.float32))
        scores = b.add1(Op.WHERE, [mask, scores, lowest], name=b.fresh(f"{name}.masked_scores"))
    elif mask is not None:
        scores = b.add1(Op.ADD, [scores, mask], name=b.fresh(f"{name}.masked_scores"))
    probs = b.add1(Op.SOFTMAX, [scores], AxisAttrs(rank - 1), name=b.fresh(f"{name}.probs"))
    return imp.add(node, Op.MATMUL, [probs, v])
