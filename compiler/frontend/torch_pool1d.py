"""The aten converters of 1-D pooling, ``max_pool1d`` and ``avg_pool1d`` (which ``torch.export``
keeps whole), as the 2-D pools.

The graph has 2-D pools only (NCHW), so a 1-D pool of an (N, C, L) value is a RESHAPE to
(N, C, 1, L), the 2-D pool of window (1, k), strides (1, s) and pads (0, p, 0, p), and a
RESHAPE back, as :mod:`compiler.frontend.onnx_pool1d` reads ONNX's. ``avg_pool1d`` counts the
padding by default (torch's ``count_include_pad=True``). A dilation other than 1, and an
unbatched (C, L) input, are :class:`~compiler.errors.UnsupportedOperator`\\ s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import fx

from compiler.frontend.torch_node import Converter, TorchImport, converts, unsupported
from compiler.graph.ir import Op, PoolAttrs, ReshapeAttrs

__all__: list[str] = []  # importing this module registers the converters


def _one(values: int | Sequence[int], node: fx.Node, what: str) -> int:
    """aten's ``int[1]`` argument (an int or a one-element list) as an int."""
    if isinstance(values, int):
        return values
    values = [int(v) for v in values]
    if len(values) != 1:
        raise unsupported(node, f"{what} {values} is not one integer")
    return values[0]


def _pool_1d(op: Op) -> Converter:
    """MAX_POOL (``max_pool1d``) or AVERAGE_POOL (``avg_pool1d``) of height 1, between
    RESHAPEs."""

    def convert(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
        x = imp.value(args["self"])
        shape = imp.builder.type_of(x).shape
        if len(shape) != 3:
            raise unsupported(node, f"needs a 3-D (N, C, L) input, got rank {len(shape)}")
        kernel = _one(args["kernel_size"], node, "kernel_size")
        stride = _one(args["stride"], node, "stride") if args["stride"] else kernel
        padding = _one(args["padding"], node, "padding")
        if _one(args.get("dilation", 1), node, "dilation") != 1:
            raise unsupported(node, f"dilation {list(args['dilation'])} is not supported")
        attrs = PoolAttrs(
            (1, kernel),
            (1, stride),
            (0, padding, 0, padding),
            bool(args["ceil_mode"]),
            bool(args.get("count_include_pad", False)),
        )
        batch, channels, length = shape
        lifted = imp.builder.add1(
            Op.RESHAPE, [x], ReshapeAttrs((batch, channels, 1, length)), name=f"{node.name}.2d"
        )
        pooled = imp.builder.add1(op, [lifted], attrs, name=f"{node.name}.pool")
        out = imp.builder.type_of(pooled).shape
        return imp.add(node, Op.RESHAPE, [pooled], ReshapeAttrs((out[0], out[1], out[3])))

    return convert


converts("max_pool1d.default", emits=[Op.MAX_POOL, Op.RESHAPE])(_pool_1d(Op.MAX_POOL))
converts("avg_pool1d.default", emits=[Op.AVERAGE_POOL, Op.RESHAPE])(_pool_1d(Op.AVERAGE_POOL))
