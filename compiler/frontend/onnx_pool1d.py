"""ONNX's 1-D pooling (MaxPool and AveragePool of an (N, C, L) input) as the 2-D pools.

A 1-D pool is read as a 2-D one of height 1 (which the quantizer and the accelerator take): a
RESHAPE to (N, C, 1, L), the 2-D pool of window (1, k), strides (1, s), dilations (1, d) and
pads (0, begin, 0, end), and a RESHAPE back to (N, C, L'). Rows of height 1 meet no padding, so
the pooled values (maxima, averages with or without the padding counted, under ``ceil_mode``
too) are the 1-D pool's.

:func:`pool_1d` is not a converter of its own (one converter reads an operator type at an
opset): the MaxPool and AveragePool converters hand it their rank-3 inputs, and declare
RESHAPE among the operators they emit.
"""

from __future__ import annotations

from compiler.frontend.onnx_node import OnnxNode
from compiler.graph.ir import Op, PoolAttrs, ReshapeAttrs

__all__ = ["pool_1d"]


def _pads_1d(n: OnnxNode, length: int, extent: int, stride: int) -> tuple[int, int]:
    """The (begin, end) pads of the length axis, ``auto_pad`` resolved against the window's
    ``extent`` (its dilated size)."""
    auto_pad = n.attrs.get("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        begin, end = n.ints("pads", (0, 0), 2, low=0)
        return begin, end
    if auto_pad == "VALID":
        return 0, 0
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.unsupported(f"auto_pad {auto_pad!r} is not supported")
    total = max((-(-length // stride) - 1) * stride + extent - length, 0)
    small, large = total // 2, total - total // 2
    return (small, large) if auto_pad == "SAME_UPPER" else (large, small)


def pool_1d(n: OnnxNode, op: Op) -> None:
    """Read the MaxPool or AveragePool node ``n`` (``op``: MAX_POOL or AVERAGE_POOL) of a
    rank-3 (N, C, L) input: RESHAPE to (N, C, 1, L), ``op`` of height 1, RESHAPE back."""
    if op not in (Op.MAX_POOL, Op.AVERAGE_POOL):
        raise n.unsupported(f"1-D pooling reads MaxPool and AveragePool, not {op.value}")
    shape = n.shape()
    if len(shape) != 3:
        raise n.unsupported(f"1-D pooling needs a 3-D (N, C, L) input, got rank {len(shape)}")
    batch, channels, length = shape
    (kernel,) = n.ints("kernel_shape", None, 1)
    (dilation,) = n.ints("dilations", (1,), 1)
    (stride,) = n.ints("strides", (1,), 1)
    extent = dilation * (kernel - 1) + 1
    begin, end = _pads_1d(n, length, extent, stride)
    if max(begin, end) >= extent:
        raise n.error(f"pads {[begin, end]} are not smaller than the window {extent}")
    attrs = PoolAttrs(
        (1, kernel),
        (1, stride),
        (0, begin, 0, end),
        bool(n.attrs.get("ceil_mode", 0)),
        bool(n.attrs.get("count_include_pad", 0)),
        (1, dilation),
    )
    builder = n.builder
    lifted = builder.add1(
        Op.RESHAPE,
        n.inputs[:1],
        ReshapeAttrs((batch, channels, 1, length)),
        name=builder.fresh(f"{n.name}_2d"),
    )
    pooled = builder.add1(op, [lifted], attrs, name=builder.fresh(f"{n.name}_pool"))
    out = builder.type_of(pooled).shape
    n.emit(Op.RESHAPE, [pooled], ReshapeAttrs((out[0], out[1], out[3])))
