"""The aten converters of interpolation and transposed convolution.

``upsample_nearest2d`` is ONNX Resize with ``asymmetric`` coordinates rounded down (``floor``);
``upsample_bilinear2d`` is a linear Resize with ``half_pixel`` coordinates, or
``align_corners`` where torch's ``align_corners`` is set. The output size is the one torch
recorded; the scales are the scale factors given, else the ratio of the sizes.
``conv_transpose2d`` is CONV_TRANSPOSE (torch's weights are ONNX's ``[C, M/group, kh, kw]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import fx

from compiler.frontend.torch_node import TorchImport, converts, meta_type, pair, unsupported
from compiler.graph.ir import Op
from runtime.opset.sampling import ConvTransposeAttrs, ResizeAttrs

__all__: list[str] = []  # importing this module registers the converters


def _resize(
    imp: TorchImport,
    node: fx.Node,
    args: dict[str, Any],
    mode: str,
    transform: str,
    nearest_mode: str = "floor",
) -> str:
    x = imp.value(args["input"] if "input" in args else args["self"])
    shape = imp.builder.type_of(x).shape
    out = meta_type(node)[0]
    if len(shape) != 4 or len(out) != 4:
        raise unsupported(node, f"resizes 4-D (NCHW) inputs only, got {list(shape)}")
    factors: Sequence[float] | None = args.get("scale_factors")
    if factors is None and args.get("scales_h") is not None and args.get("scales_w") is not None:
        factors = (args["scales_h"], args["scales_w"])
    if factors is not None:
        scales = tuple(float(s) for s in _pair_floats(factors))
    else:
        scales = tuple(o / i for o, i in zip(out[2:], shape[2:], strict=True))
    attrs = ResizeAttrs((out[2], out[3]), scales, mode, transform, nearest_mode)
    return imp.add(node, Op.RESIZE, [x], attrs)


def _pair_floats(values: float | Sequence[float]) -> tuple[float, float]:
    """A float or a one- or two-element list of floats as a pair."""
    if isinstance(values, int | float):
        return float(values), float(values)
    values = [float(v) for v in values]
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


@converts("upsample_nearest2d.vec", "upsample_nearest2d.default", emits=[Op.RESIZE])
def _upsample_nearest(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    return _resize(imp, node, args, "nearest", "asymmetric", "floor")


@converts("upsample_bilinear2d.vec", "upsample_bilinear2d.default", emits=[Op.RESIZE])
def _upsample_bilinear(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    transform = "align_corners" if args["align_corners"] else "half_pixel"
    return _resize(imp, node, args, "linear", transform)


@converts("conv_transpose2d.input", emits=[Op.CONV_TRANSPOSE])
def _conv_transpose(imp: TorchImport, node: fx.Node, args: dict[str, Any]) -> str:
    x, w = imp.value(args["input"]), imp.value(args["weight"])
    if imp.rank(args["input"]) != 4:
        raise unsupported(node, "supports 4-D (NCHW) inputs only")
    attrs = ConvTransposeAttrs(
        pair(args["stride"]),
        pair(args["padding"]) * 2,
        pair(args["dilation"]),
        pair(args["output_padding"]),
        int(args["groups"]),
    )
    inputs = [x, w]
    if args.get("bias") is not None:
        inputs.append(imp.value(args["bias"]))
    return imp.add(node, Op.CONV_TRANSPOSE, inputs, attrs)
