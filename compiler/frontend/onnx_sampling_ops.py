"""The ONNX converters of Resize, Upsample and ConvTranspose.

Resize (opsets 10, 11 to 17, 18 on) and Upsample (opsets 7 and 9) become one RESIZE node
whose output size is resolved here from the constant scales or sizes; Upsample, and Resize
before opset 11, is Resize with ``asymmetric`` coordinates (nearest rounding down when
upsampling and up when downsampling, as onnxruntime does). What RESIZE cannot compute is an
:class:`UnsupportedOperator`: antialiased linear or cubic interpolation,
``tf_crop_and_resize`` and ``tf_half_pixel_for_nearest`` coordinates, ``align_corners`` by
scales that give a fractional output length (where onnxruntime and onnx's reference disagree), a
``keep_aspect_ratio_policy`` other than ``stretch``, scales or sizes that are not constants,
resizing N or C. ConvTranspose (2-D) becomes CONV_TRANSPOSE with ``auto_pad`` and
``output_shape`` resolved into pads per the spec.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compiler.frontend.onnx_node import OnnxNode, converts
from compiler.graph.ir import Op
from runtime.opset.sampling import (
    COORDINATE_MODES,
    NEAREST_MODES,
    RESIZE_MODES,
    ConvTransposeAttrs,
    ResizeAttrs,
)

__all__: list[str] = []  # importing this module registers the converters

_F32 = np.float32


# ----------------------------------------------------------------------------- resize
def _emit_resize(
    n: OnnxNode,
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
    mode: str,
    transform: str,
    nearest_mode: str,
) -> None:
    """Emit RESIZE of input 0 by the 4 ``scales`` or to the 4 ``sizes`` (one of them)."""
    shape = n.shape()
    if len(shape) != 4:
        raise n.unsupported(f"resizes 4-D (NCHW) inputs only, got rank {len(shape)}")
    if scales is not None:
        if len(scales) != 4 or min(scales) <= 0:
            raise n.error(f"needs 4 positive scales, got {list(scales)}")
        f32 = [_F32(s) for s in scales]
        # onnxruntime's output size: the float32 product, truncated
        out = [int(np.floor(_F32(d) * s)) for d, s in zip(shape, f32, strict=True)]
    else:
        if len(sizes) != 4 or min(sizes) < 1:
            raise n.error(f"needs 4 positive sizes, got {list(sizes)}")
        out = [int(s) for s in sizes]
        f32 = [_F32(o) / _F32(d) for o, d in zip(out, shape, strict=True)]
    if out[:2] != list(shape[:2]):
        raise n.unsupported(
            f"resizes over H and W only; the output {out} changes N or C of {list(shape)}"
        )
    if min(out[2:]) < 1:
        raise n.error(f"the output size {out} of input {list(shape)} is empty")
    if scales is not None and transform == "align_corners":
        fractional = [float(d * s) for d, s in zip(shape[2:], f32[2:], strict=True)]
        if any(o != f for o, f in zip(out[2:], fractional, strict=True)):
            raise n.unsupported(
                f"align_corners by scales that give the fractional lengths {fractional}: "
                "onnxruntime aligns the corners of the truncated output, onnx's reference "
                "those of the fractional one (give sizes instead)"
            )
    attrs = ResizeAttrs(
        (out[2], out[3]),
        (float(f32[2]), float(f32[3])),
        mode,
        transform,
        nearest_mode,
        float(n.attrs.get("cubic_coeff_a", -0.75)),
        bool(n.attrs.get("exclude_outside", 0)),
    )
    n.emit(Op.RESIZE, n.inputs[:1], attrs)


def _mode(n: OnnxNode) -> str:
    mode = n.attrs.get("mode", "nearest")
    if mode not in RESIZE_MODES:
        raise n.error(f"mode {mode!r} is not 'nearest', 'linear' or 'cubic'")
    return mode


def _asymmetric(n: OnnxNode, scales: Sequence[float]) -> None:
    """Upsample's and Resize-10's resize: asymmetric coordinates; in nearest mode the index
    rounds down on upsampled axes and up on downsampled ones (onnxruntime's)."""
    mode = _mode(n)
    nearest = "floor"
    if mode == "nearest":
        down = [s < 1 for s in scales[2:]]
        if all(down):
            nearest = "ceil"
        elif any(down):
            raise n.unsupported(
                f"nearest resizing by scales {list(scales)}, up on one axis and down on the "
                "other, is not supported"
            )
    _emit_resize(n, scales, None, mode, "asymmetric", nearest)


@converts("Resize", emits=[Op.RESIZE], attrs=["mode"], since=10)
def _resize_v10(n: OnnxNode) -> None:
    _asymmetric(n, [float(s) for s in n.const(1, "scales").reshape(-1)])


def _resize(n: OnnxNode) -> None:
    """Resize from opset 11: inputs X, roi, scales, sizes."""
    mode = _mode(n)
    transform = n.attrs.get("coordinate_transformation_mode", "half_pixel")
    if transform in ("tf_crop_and_resize", "tf_half_pixel_for_nearest"):
        raise n.unsupported(f"coordinate_transformation_mode {transform!r} is not supported")
    if transform not in COORDINATE_MODES or (transform == "half_pixel_symmetric" and n.opset < 19):
        raise n.error(f"coordinate_transformation_mode {transform!r} is not known")
    nearest_mode = n.attrs.get("nearest_mode", "round_prefer_floor")
    if nearest_mode not in NEAREST_MODES:
        raise n.error(f"nearest_mode {nearest_mode!r} is not one of {', '.join(NEAREST_MODES)}")
    if int(n.attrs.get("antialias", 0)) != 0 and mode != "nearest":
        raise n.unsupported(f"antialiased {mode} interpolation is not supported")
    scales = n.const(2, "scales").reshape(-1) if n.has(2) else np.zeros(0)
    sizes = n.const(3, "sizes").reshape(-1) if n.has(3) else np.zeros(0)
    if (scales.size > 0) == (sizes.size > 0):
        raise n.error("needs either scales or sizes (one of them, not empty)")
    rank = n.rank()
    axes = [n.axis(int(a), rank) for a in n.attrs.get("axes", range(rank))]
    if len(set(axes)) != len(axes):
        raise n.error(f"axes {list(axes)} repeat an axis")
    given = scales if scales.size else sizes
    if given.size != len(axes):
        raise n.error(f"{given.size} scales or sizes for {len(axes)} axes")
    if scales.size:
        full = [1.0] * rank
        for axis, s in zip(axes, scales.tolist(), strict=True):
            full[axis] = float(s)
        _emit_resize(n, full, None, mode, transform, nearest_mode)
        return
    policy = n.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        raise n.unsupported(f"keep_aspect_ratio_policy {policy!r} is not supported")
    full = list(n.shape())
    for axis, s in zip(axes, sizes.tolist(), strict=True):
        full[axis] = int(s)
    _emit_resize(n, None, full, mode, transform, nearest_mode)


_RESIZE_11 = [
    "coordinate_transformation_mode",
    "cubic_coeff_a",
    "exclude_outside",
    "extrapolation_value",
    "mode",
    "nearest_mode",
]
converts("Resize", emits=[Op.RESIZE], attrs=_RESIZE_11, since=11)(_resize)
converts(
    "Resize",
    emits=[Op.RESIZE],
    attrs=[*_RESIZE_11, "antialias", "axes", "keep_aspect_ratio_policy"],
    since=18,
)(_resize)


def _upsample_scales(n: OnnxNode, scales: Sequence[float]) -> list[float]:
    scales = [float(s) for s in scales]
    if len(scales) != n.rank() or min(scales) < 1:
        raise n.error(f"needs one scale >= 1 per axis of the input, got {scales}")
    return scales


@converts("Upsample", emits=[Op.RESIZE], attrs=["mode", "scales"], since=7)
def _upsample_v7(n: OnnxNode) -> None:
    _asymmetric(n, _upsample_scales(n, n.attr("scales")))


@converts("Upsample", emits=[Op.RESIZE], attrs=["mode"], since=9)
def _upsample_v9(n: OnnxNode) -> None:
    _asymmetric(n, _upsample_scales(n, n.const(1, "scales").reshape(-1).tolist()))


# ----------------------------------------------------------------------------- transposed conv
def _transpose_pads(
    n: OnnxNode,
    extents: Sequence[int],
    strides: Sequence[int],
    output_padding: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int, int]]:
    """ConvTranspose's (top, left, bottom, right) pads: the ``pads`` attribute, or those that
    give ``output_shape`` (``auto_pad`` SAME_*: the input's size times the stride); and the
    rows and columns to add to ``output_padding`` where ``output_shape`` is past the full
    output."""
    auto_pad = n.attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"auto_pad {auto_pad!r} is not known")
    spatial = n.shape()[2:]
    if "output_shape" in n.attrs:
        target = [int(v) for v in n.attrs["output_shape"]][-2:]
        if len(target) != 2:
            raise n.error(f"output_shape {list(n.attrs['output_shape'])} has no 2 sizes")
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [d * s for d, s in zip(spatial, strides, strict=True)]
    elif auto_pad == "VALID":
        return (0, 0, 0, 0), (0, 0)
    else:
        return n.ints("pads", (0, 0, 0, 0), 4, low=0), (0, 0)
    begin, end, grow = [], [], []
    for size, extent, stride, extra, want in zip(
        spatial, extents, strides, output_padding, target, strict=True
    ):
        total = stride * (size - 1) + extra + extent - want
        # an output_shape past the full output adds zero rows and columns at the end
        grow.append(max(-total, 0))
        total = max(total, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return (*begin, *end), tuple(grow)


@converts(
    "ConvTranspose",
    emits=[Op.CONV_TRANSPOSE],
    attrs=[
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "output_padding",
        "output_shape",
        "pads",
        "strides",
    ],
)
def _conv_transpose(n: OnnxNode) -> None:
    if n.rank() != 4 or n.rank(1) != 4:
        raise n.unsupported(
            f"supports 2-D transposed convolutions (4-D inputs and weights) only, got ranks "
            f"{n.rank()} and {n.rank(1)}"
        )
    kernel = n.shape(1)[2:]
    if n.ints("kernel_shape", kernel, 2) != kernel:
        raise n.error(f"kernel_shape {n.attrs['kernel_shape']} differs from the weights' {kernel}")
    strides = n.ints("strides", (1, 1), 2)
    dilations = n.ints("dilations", (1, 1), 2)
    output_padding = n.ints("output_padding", (0, 0), 2, low=0)
    extents = [d * (k - 1) + 1 for d, k in zip(dilations, kernel, strict=True)]
    pads, grow = _transpose_pads(n, extents, strides, output_padding)
    output_padding = tuple(p + g for p, g in zip(output_padding, grow, strict=True))
    group = int(n.attrs.get("group", 1))
    attrs = ConvTransposeAttrs(strides, pads, dilations, output_padding, group)
    n.emit(Op.CONV_TRANSPOSE, [v for v in n.inputs if v], attrs)
