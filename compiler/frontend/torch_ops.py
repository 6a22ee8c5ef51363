"""The aten operators the PyTorch frontend reads: one registered converter per operator
(:func:`~compiler.frontend.torch_node.converts`), with the mapping the module docstring of
:mod:`compiler.frontend.torch` describes."""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import fx

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


@converts("adaptive_avg_pool2d.default", emits=[Op.GLOBAL_AVERAGE_POOL])
def _adaptive_avg_pool(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    size = pair(args["output_size"])
    if size != (1, 1):
        raise unsupported(node, f"output size {list(size)} is not supported, only [1, 1]")
    return imp.add(node, Op.GLOBAL_AVERAGE_POOL, [imp.value(args["self"])])


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


@converts("view.default", "reshape.default", emits=[Op.RESHAPE])
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


@converts("dropout.default")
def _dropout(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    if args["train"] and args["p"] > 0:
        raise unsupported(node, "dropout in training mode is not supported")
    return imp.value(args["input"])


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
