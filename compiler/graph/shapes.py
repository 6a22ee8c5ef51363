"""Type inference: each operator's output types from its inputs' types and attributes.

:func:`infer_types` is called by :class:`~compiler.graph.ir.GraphBuilder` for every node added,
so each node's outputs carry static shapes and dtypes, and an operator applied to operands it
cannot take fails there with a :class:`GraphError` naming the node and the operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ClipAttrs,
    ConvAttrs,
    GemmAttrs,
    LeakyReluAttrs,
    NoAttrs,
    Op,
    PadAttrs,
    PoolAttrs,
    QAddAttrs,
    QAvgPoolAttrs,
    QConvAttrs,
    QDenseAttrs,
    QuantAttrs,
    ReshapeAttrs,
    TensorType,
    TransposeAttrs,
)
from runtime.ops.windows import window_count

__all__ = ["ATTRS", "broadcast", "infer_types"]

Rule = Callable[[Any, Sequence[TensorType], Sequence[np.ndarray | None]], list[TensorType]]


class _Bad(Exception):
    """A rule's complaint; :func:`infer_types` turns it into a located GraphError."""


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise _Bad(message)


def infer_types(
    op: Op,
    attrs: Any,
    inputs: Sequence[TensorType],
    consts: Sequence[np.ndarray | None],
    *,
    node: str = "",
) -> list[TensorType]:
    """The output types of ``op`` applied to values of types ``inputs`` (``consts`` holds the
    arrays of inputs that are parameters, None elsewhere)."""
    arity = _ARITY[op]
    record = ATTRS.get(op, NoAttrs)
    if not isinstance(attrs, record):
        raise GraphError(
            f"needs a {record.__name__} record, got {type(attrs).__name__}", node=node, op=op.value
        )
    try:
        _need(
            arity[0] <= len(inputs) <= arity[1],
            f"takes {arity[0]}"
            + (f" to {arity[1]}" if arity[1] != arity[0] else "")
            + f" inputs, got {len(inputs)}",
        )
        return _RULES[op](attrs, inputs, consts)
    except _Bad as err:
        shapes = ", ".join(str(t) for t in inputs)
        raise GraphError(f"{err} (inputs {shapes})", node=node, op=op.value) from None


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's (and ONNX's multidirectional) broadcast of two shapes."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        _need(x == y or x == 1 or y == 1, f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def _dtype(inputs: Sequence[TensorType], *allowed: str) -> str:
    dtype = inputs[0].dtype
    _need(dtype in allowed, f"needs {' or '.join(allowed)} operands, got {dtype}")
    _need(all(t.dtype == dtype for t in inputs), "mixes operand dtypes")
    return dtype


def _conv(attrs: ConvAttrs, inputs, _consts) -> list[TensorType]:
    x, w = inputs[0].shape, inputs[1].shape
    _need(len(x) == 4 and len(w) == 4, "needs a 4-D input and 4-D weights (NCHW, OIHW)")
    groups = attrs.groups
    _need(groups >= 1 and x[1] % groups == 0, f"{x[1]} input channels in {groups} groups")
    _need(w[1] * groups == x[1], f"weights expect {w[1] * groups} input channels, got {x[1]}")
    _need(w[0] % groups == 0, f"{w[0]} output channels in {groups} groups")
    _need(min(attrs.strides) >= 1 and min(attrs.dilations) >= 1, "needs positive strides")
    if len(inputs) == 3:
        _need(inputs[2].shape == (w[0],), f"the bias must have shape [{w[0]}]")
    s, p, d = attrs.strides, attrs.pads, attrs.dilations
    oh = window_count(x[2], w[2], s[0], (p[0], p[2]), d[0])
    ow = window_count(x[3], w[3], s[1], (p[1], p[3]), d[1])
    _need(oh >= 1 and ow >= 1, "the kernel is larger than the padded input")
    return [TensorType((x[0], w[0], oh, ow), _dtype(inputs[:2], "float32"))]


def _qconv(attrs: QConvAttrs, inputs, consts) -> list[TensorType]:
    _need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 data and weights")
    _need(len(inputs) < 3 or inputs[2].dtype == "int32", "needs an int32 bias")
    float_like = [TensorType(t.shape, "float32") for t in inputs]
    (out,) = _conv(attrs.conv, float_like, consts)
    return [TensorType(out.shape, "int8")]


def _gemm(attrs, inputs, _consts) -> list[TensorType]:
    a, b = inputs[0].shape, inputs[1].shape
    _need(len(a) == 2 and len(b) == 2, "needs 2-D operands")
    m, k = (a[1], a[0]) if attrs.trans_a else a
    k2, n = (b[1], b[0]) if attrs.trans_b else b
    _need(k == k2, f"inner dimensions {k} and {k2} differ")
    if len(inputs) == 3:
        _need(broadcast(inputs[2].shape, (m, n)) == (m, n), "C does not broadcast to the output")
    return [TensorType((m, n), _dtype(inputs[:2], "float32"))]


def _qdense(_attrs, inputs, _consts) -> list[TensorType]:
    x, w = inputs[0].shape, inputs[1].shape
    _need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 data and weights")
    _need(len(x) == 2 and len(w) == 2 and x[1] == w[1], "needs x[N, K] and w[M, K]")
    return [TensorType((x[0], w[0]), "int8")]


def _matmul(_attrs, inputs, _consts) -> list[TensorType]:
    a, b = inputs[0].shape, inputs[1].shape
    _need(len(a) >= 1 and len(b) >= 1, "needs operands of rank >= 1")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    _need(a2[-1] == b2[-2], f"inner dimensions {a2[-1]} and {b2[-2]} differ")
    batch = broadcast(a2[:-2], b2[:-2])
    shape = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return [TensorType(shape, _dtype(inputs, "float32"))]


def _binary(_attrs, inputs, _consts) -> list[TensorType]:
    return [TensorType(broadcast(inputs[0].shape, inputs[1].shape), _dtype(inputs, "float32"))]


def _qadd(_attrs, inputs, _consts) -> list[TensorType]:
    _need(inputs[0].dtype == inputs[1].dtype == "int8", "needs int8 operands")
    _need(inputs[0].shape == inputs[1].shape, "needs operands of one shape")
    return [inputs[0]]


def _unary(_attrs, inputs, _consts) -> list[TensorType]:
    _dtype(inputs, "float32")
    return [inputs[0]]


def _same(_attrs, inputs, _consts) -> list[TensorType]:
    return [inputs[0]]


def _float_pool(attrs: PoolAttrs, inputs, consts) -> list[TensorType]:
    _dtype(inputs, "float32")
    return _pool(attrs, inputs, consts)


def _float_global_pool(attrs, inputs, consts) -> list[TensorType]:
    _dtype(inputs, "float32")
    return _global_pool(attrs, inputs, consts)


def _pool(attrs: PoolAttrs, inputs, _consts) -> list[TensorType]:
    x = inputs[0].shape
    _need(len(x) == 4, "needs a 4-D (NCHW) input")
    _need(len(attrs.kernel) == 2, "needs a 2-D window")
    _need(min(attrs.strides) >= 1 and min(attrs.kernel) >= 1, "needs positive windows, strides")
    k, s, p = attrs.kernel, attrs.strides, attrs.pads
    oh = window_count(x[2], k[0], s[0], (p[0], p[2]), ceil=attrs.ceil_mode)
    ow = window_count(x[3], k[1], s[1], (p[1], p[3]), ceil=attrs.ceil_mode)
    _need(oh >= 1 and ow >= 1, "the window is larger than the padded input")
    _need(
        all(p < k for p, k in zip(attrs.pads, attrs.kernel * 2, strict=True)),
        "a padding as large as the window",
    )
    return [TensorType((x[0], x[1], oh, ow), inputs[0].dtype)]


def _global_pool(_attrs, inputs, _consts) -> list[TensorType]:
    x = inputs[0].shape
    _need(len(x) == 4, "needs a 4-D (NCHW) input")
    return [TensorType((x[0], x[1], 1, 1), inputs[0].dtype)]


def _batch_norm(_attrs, inputs, _consts) -> list[TensorType]:
    x = inputs[0].shape
    _need(len(x) >= 2, "needs an input of rank >= 2")
    for t in inputs[1:]:
        _need(t.shape == (x[1],), f"scale, bias, mean and variance must have shape [{x[1]}]")
    return [TensorType(x, _dtype(inputs, "float32"))]


def _axis(attrs: AxisAttrs, rank: int) -> int:
    _need(0 <= attrs.axis < rank, f"axis {attrs.axis} is out of range for rank {rank}")
    return attrs.axis


def _flatten(attrs: AxisAttrs, inputs, _consts) -> list[TensorType]:
    x = inputs[0].shape
    axis = _axis(attrs, len(x) + 1)  # ONNX allows 0..rank
    head = int(np.prod(x[:axis], dtype=np.int64))
    return [TensorType((head, int(np.prod(x[axis:], dtype=np.int64))), inputs[0].dtype)]


def _reshape(attrs: ReshapeAttrs, inputs, _consts) -> list[TensorType]:
    size = inputs[0].size
    _need(all(d >= 0 for d in attrs.shape), f"target shape {list(attrs.shape)} is not static")
    target = int(np.prod(attrs.shape, dtype=np.int64))
    _need(target == size, f"cannot reshape {size} elements to {list(attrs.shape)}")
    return [TensorType(attrs.shape, inputs[0].dtype)]


def _transpose(attrs: TransposeAttrs, inputs, _consts) -> list[TensorType]:
    x = inputs[0].shape
    _need(sorted(attrs.perm) == list(range(len(x))), f"perm {list(attrs.perm)} for rank {len(x)}")
    return [TensorType(tuple(x[p] for p in attrs.perm), inputs[0].dtype)]


def _concat(attrs: AxisAttrs, inputs, _consts) -> list[TensorType]:
    first = inputs[0].shape
    axis = _axis(attrs, len(first))
    for t in inputs[1:]:
        others = [d for i, d in enumerate(t.shape) if i != axis]
        _need(
            len(t.shape) == len(first) and others == [d for i, d in enumerate(first) if i != axis],
            "needs inputs equal in every dimension but the axis",
        )
    shape = list(first)
    shape[axis] = sum(t.shape[axis] for t in inputs)
    return [TensorType(tuple(shape), _dtype(inputs, "float32", "int8"))]


def _pad(attrs: PadAttrs, inputs, _consts) -> list[TensorType]:
    x = inputs[0].shape
    rank = len(x)
    _need(len(attrs.pads) == 2 * rank, f"needs {2 * rank} pads for rank {rank}")
    _need(attrs.mode in ("constant", "reflect", "edge"), f"mode {attrs.mode!r}")
    shape = tuple(d + attrs.pads[i] + attrs.pads[i + rank] for i, d in enumerate(x))
    _need(all(d >= 0 for d in shape), "negative pads remove more than the input has")
    return [TensorType(shape, inputs[0].dtype)]


def _softmax(attrs: AxisAttrs, inputs, _consts) -> list[TensorType]:
    _axis(attrs, len(inputs[0].shape))
    return _unary(attrs, inputs, _consts)


def _quantize(attrs: QuantAttrs, inputs, _consts) -> list[TensorType]:
    _dtype(inputs, "float32")
    _need(attrs.dtype == "int8", f"quantizes to int8 only, not {attrs.dtype}")
    _need(attrs.scale > 0, f"scale {attrs.scale} must be positive")
    return [TensorType(inputs[0].shape, attrs.dtype)]


def _dequantize(attrs: QuantAttrs, inputs, _consts) -> list[TensorType]:
    _need(inputs[0].dtype == attrs.dtype, f"needs an {attrs.dtype} input")
    _need(attrs.scale > 0, f"scale {attrs.scale} must be positive")
    return [TensorType(inputs[0].shape, "float32")]


def _int8_pool(attrs: PoolAttrs, inputs, consts) -> list[TensorType]:
    _need(inputs[0].dtype == "int8", "needs an int8 input")
    return _pool(attrs, inputs, consts)


def _int8_global_pool(attrs, inputs, consts) -> list[TensorType]:
    _need(inputs[0].dtype == "int8", "needs an int8 input")
    return _global_pool(attrs, inputs, consts)


#: The attribute record each operator takes (NoAttrs for those not listed).
ATTRS: dict[Op, type] = {
    Op.CONV: ConvAttrs,
    Op.GEMM: GemmAttrs,
    Op.CLIP: ClipAttrs,
    Op.LEAKY_RELU: LeakyReluAttrs,
    Op.MAX_POOL: PoolAttrs,
    Op.AVERAGE_POOL: PoolAttrs,
    Op.BATCH_NORM: BatchNormAttrs,
    Op.FLATTEN: AxisAttrs,
    Op.RESHAPE: ReshapeAttrs,
    Op.TRANSPOSE: TransposeAttrs,
    Op.CONCAT: AxisAttrs,
    Op.PAD: PadAttrs,
    Op.SOFTMAX: AxisAttrs,
    Op.QUANTIZE: QuantAttrs,
    Op.DEQUANTIZE: QuantAttrs,
    Op.QCONV: QConvAttrs,
    Op.QDENSE: QDenseAttrs,
    Op.QADD: QAddAttrs,
    Op.QMAX_POOL: PoolAttrs,
    Op.QGLOBAL_AVG_POOL: QAvgPoolAttrs,
}

_MANY = 1 << 30
_ARITY: dict[Op, tuple[int, int]] = {
    Op.CONV: (2, 3),
    Op.GEMM: (2, 3),
    Op.MATMUL: (2, 2),
    Op.ADD: (2, 2),
    Op.SUB: (2, 2),
    Op.MUL: (2, 2),
    Op.RELU: (1, 1),
    Op.CLIP: (1, 1),
    Op.LEAKY_RELU: (1, 1),
    Op.SIGMOID: (1, 1),
    Op.MAX_POOL: (1, 1),
    Op.AVERAGE_POOL: (1, 1),
    Op.GLOBAL_AVERAGE_POOL: (1, 1),
    Op.BATCH_NORM: (5, 5),
    Op.FLATTEN: (1, 1),
    Op.RESHAPE: (1, 1),
    Op.TRANSPOSE: (1, 1),
    Op.CONCAT: (1, _MANY),
    Op.PAD: (1, 1),
    Op.SOFTMAX: (1, 1),
    Op.IDENTITY: (1, 1),
    Op.QUANTIZE: (1, 1),
    Op.DEQUANTIZE: (1, 1),
    Op.QCONV: (2, 3),
    Op.QDENSE: (2, 3),
    Op.QADD: (2, 2),
    Op.QMAX_POOL: (1, 1),
    Op.QGLOBAL_AVG_POOL: (1, 1),
}

_RULES: dict[Op, Rule] = {
    Op.CONV: _conv,
    Op.GEMM: _gemm,
    Op.MATMUL: _matmul,
    Op.ADD: _binary,
    Op.SUB: _binary,
    Op.MUL: _binary,
    Op.RELU: _unary,
    Op.CLIP: _unary,
    Op.LEAKY_RELU: _unary,
    Op.SIGMOID: _unary,
    Op.MAX_POOL: _float_pool,
    Op.AVERAGE_POOL: _float_pool,
    Op.GLOBAL_AVERAGE_POOL: _float_global_pool,
    Op.BATCH_NORM: _batch_norm,
    Op.FLATTEN: _flatten,
    Op.RESHAPE: _reshape,
    Op.TRANSPOSE: _transpose,
    Op.CONCAT: _concat,
    Op.PAD: _pad,
    Op.SOFTMAX: _softmax,
    Op.IDENTITY: _same,
    Op.QUANTIZE: _quantize,
    Op.DEQUANTIZE: _dequantize,
    Op.QCONV: _qconv,
    Op.QDENSE: _qdense,
    Op.QADD: _qadd,
    Op.QMAX_POOL: _int8_pool,
    Op.QGLOBAL_AVG_POOL: _int8_global_pool,
}
