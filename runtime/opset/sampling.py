"""Operators that resample or scatter spatial data: Resize (and Upsample) and ConvTranspose.

Both work on 4-D NCHW float32 values over H and W. Resize's output size is static (the
frontends resolve it from scales or sizes); its record keeps the scales too, since ONNX maps
output coordinates to input coordinates through the scale, not through the size ratio.
ConvTranspose's layouts are ONNX's: weights ``[C, M/group, kh, kw]``, ``pads`` (top, left,
bottom, right).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, TensorType, need, same_dtype

__all__ = [
    "COORDINATE_MODES",
    "NEAREST_MODES",
    "RESIZE_MODES",
    "ConvTranspose",
    "ConvTransposeAttrs",
    "Resize",
    "ResizeAttrs",
    "conv_transpose_size",
]

_F32 = np.float32

#: Resize's interpolation modes.
RESIZE_MODES = ("nearest", "linear", "cubic")
#: Resize's coordinate transformations (ONNX's, less ``tf_crop_and_resize`` and
#: ``tf_half_pixel_for_nearest``, which onnxruntime does not run either).
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
)
#: Resize's rounding of input coordinates to indices in nearest mode.
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class ResizeAttrs:
    """``size`` is the output's (H, W); ``scales`` the (H, W) scales that ONNX's coordinate
    transformations divide by (``size[i] / input[i]`` where the model gave sizes; None means
    that ratio). The modes, ``cubic_coeff_a`` and ``exclude_outside`` are ONNX Resize's
    attributes of the same names (the last two matter to cubic interpolation only)."""

    size: tuple[int, int]
    scales: tuple[float, float] | None = None
    mode: str = "nearest"
    coordinate_transformation_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False


def _source_coords(out: int, length: int, scale: float, transform: str) -> np.ndarray:
    """The input coordinate of each of ``out`` output positions along an axis of ``length``,
    in float32 arithmetic, in the order of operations onnxruntime uses."""
    x = np.arange(out, dtype=_F32)
    s = _F32(scale)
    half = _F32(0.5)
    if transform == "asymmetric":
        return x / s
    if transform == "align_corners":
        if out == 1:
            return np.zeros(1, _F32)
        return x * _F32(length - 1) / _F32(out - 1)
    if transform == "pytorch_half_pixel" and out == 1:
        return np.zeros(1, _F32)
    coords = (x + half) / s - half
    if transform == "half_pixel_symmetric":
        adjustment = _F32(out) / (s * _F32(length))
        center = _F32(length) / _F32(2)
        coords = center * (_F32(1) - adjustment) + coords
    return coords


def _nearest_index(coords: np.ndarray, length: int, nearest_mode: str) -> np.ndarray:
    floor = np.floor(coords)
    if nearest_mode == "floor":
        index = floor
    elif nearest_mode == "ceil":
        index = np.ceil(coords)
    else:
        tie = floor + (_F32(1) if nearest_mode == "round_prefer_ceil" else _F32(0))
        index = np.where(coords - floor == _F32(0.5), tie, np.rint(coords))
    return np.clip(index, 0, length - 1).astype(np.int64)


def _cubic_weights(ratio: np.ndarray, a: float) -> np.ndarray:
    """The weights ``(out, 4)`` of the neighbours at offsets -1, 0, 1, 2 from the floor of each
    coordinate, ``ratio`` past it: Keys' cubic convolution kernel with coefficient ``a``."""
    distance = np.abs(np.arange(-1, 3)[None, :] - ratio[:, None])
    near = ((a + 2) * distance - (a + 3)) * distance * distance + 1
    far = ((a * distance - 5 * a) * distance + 8 * a) * distance - 4 * a
    return np.where(distance <= 1, near, np.where(distance < 2, far, 0.0))


def _cubic_axis(x: np.ndarray, axis: int, coords: np.ndarray, attrs: dict) -> np.ndarray:
    """Cubic interpolation along ``axis`` at ``coords``, in float64 (as onnx's reference):
    the four neighbours around each coordinate, indices past the input clamped to its edge
    or, with ``exclude_outside``, weighted 0 and the other weights scaled to sum to 1."""
    length = x.shape[axis]
    coords = coords.astype(np.float64)
    low = np.floor(coords)
    weights = _cubic_weights(coords - low, float(attrs["cubic_coeff_a"]))
    index = low.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    if attrs["exclude_outside"]:
        weights = np.where((index >= 0) & (index < length), weights, 0.0)
        weights = weights / weights.sum(axis=1, keepdims=True)
    taken = np.take(x.astype(np.float64), np.clip(index, 0, length - 1), axis=axis)
    # taken: the axis replaced by (out, 4); contract the 4 neighbours with the weights
    moved = np.moveaxis(taken, (axis, axis + 1), (-2, -1))
    return np.moveaxis(np.einsum("...ok,ok->...o", moved, weights), -1, axis)


def _resize_axis(x: np.ndarray, axis: int, out: int, scale: float, attrs: dict) -> np.ndarray:
    length = x.shape[axis]
    coords = _source_coords(out, length, scale, attrs["coordinate_transformation_mode"])
    if attrs["mode"] == "nearest":
        return np.take(x, _nearest_index(coords, length, attrs["nearest_mode"]), axis=axis)
    if attrs["mode"] == "cubic":
        return _cubic_axis(x, axis, coords, attrs).astype(x.dtype)
    coords = np.clip(coords, _F32(0), _F32(length - 1))
    low = np.floor(coords).astype(np.int64)
    high = np.minimum(low + 1, length - 1)
    ratio = (coords - low.astype(_F32)).astype(_F32)
    shape = [1] * x.ndim
    shape[axis] = out
    ratio = ratio.reshape(shape)
    a, b = np.take(x, low, axis=axis), np.take(x, high, axis=axis)
    return (a * (_F32(1) - ratio) + b * ratio).astype(_F32)


class Resize(Operator):
    """ONNX Resize of a 4-D NCHW value over H and W (N and C keep their sizes), to ``size``.

    Each output index ``x`` maps to the input coordinate that ``coordinate_transformation_mode``
    gives (``half_pixel``: ``(x + 0.5) / scale - 0.5``; ``pytorch_half_pixel``: the same, 0
    where the output length is 1; ``half_pixel_symmetric``: ``half_pixel`` shifted to keep the
    centres aligned; ``align_corners``: ``x * (in - 1) / (out - 1)``; ``asymmetric``:
    ``x / scale``). ``nearest`` takes the
    input element at that coordinate rounded by ``nearest_mode``, ``linear`` interpolates the two
    neighbours on each axis (bilinear), ``cubic`` the four (Keys' kernel with
    ``cubic_coeff_a``; ``exclude_outside`` drops the neighbours past the input), indices
    clamped to the input in each mode.
    """

    name = "Resize"
    member = "RESIZE"
    Attrs = ResizeAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0].shape
        same_dtype(inputs, "float32")
        need(len(x) == 4, f"needs a 4-D (NCHW) input, got rank {len(x)}")
        need(len(attrs.size) == 2 and min(attrs.size) >= 1, f"size {attrs.size} is not 2 sizes")
        if attrs.scales is not None:
            need(
                len(attrs.scales) == 2 and min(attrs.scales) > 0,
                f"scales {attrs.scales} are not 2 positive scales",
            )
        need(attrs.mode in RESIZE_MODES, f"mode {attrs.mode!r} is not one of {RESIZE_MODES}")
        need(
            attrs.coordinate_transformation_mode in COORDINATE_MODES,
            f"coordinate_transformation_mode {attrs.coordinate_transformation_mode!r} is not "
            f"one of {COORDINATE_MODES}",
        )
        need(
            attrs.nearest_mode in NEAREST_MODES,
            f"nearest_mode {attrs.nearest_mode!r} is not one of {NEAREST_MODES}",
        )
        need(min(x[2:]) >= 1, f"cannot resize the empty input {list(x)}")
        return [TensorType((x[0], x[1], *attrs.size), "float32")]

    @staticmethod
    def kernel(
        x,
        *,
        size,
        scales,
        mode,
        coordinate_transformation_mode,
        nearest_mode,
        cubic_coeff_a,
        exclude_outside,
    ):
        y = np.asarray(x, _F32)
        modes = dict(
            mode=mode,
            coordinate_transformation_mode=coordinate_transformation_mode,
            nearest_mode=nearest_mode,
            cubic_coeff_a=cubic_coeff_a,
            exclude_outside=exclude_outside,
        )
        for axis in (2, 3):
            out = int(size[axis - 2])
            scale = out / x.shape[axis] if scales is None else float(scales[axis - 2])
            y = _resize_axis(y, axis, out, scale, modes)
        return y

    @staticmethod
    def macs(attrs, inputs, outputs):
        # per output element: two (linear) or four (cubic) multiply-accumulates per axis
        taps = {"nearest": 0, "linear": 2, "cubic": 4}[attrs.mode]
        return 2 * taps * outputs[0].size


@dataclass(frozen=True)
class ConvTransposeAttrs:
    """A 2-D transposed convolution's geometry: ``pads`` (top, left, bottom, right) crop the
    full output; ``output_padding`` adds rows and columns at its end (bottom, right)."""

    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    output_padding: tuple[int, int] = (0, 0)
    groups: int = 1


def conv_transpose_size(
    size: int, kernel: int, stride: int, pads: Sequence[int], dilation: int, output_padding: int
) -> int:
    """ONNX's output length of a transposed convolution along one axis."""
    extent = (kernel - 1) * dilation + 1
    return stride * (size - 1) + output_padding + extent - pads[0] - pads[1]


class ConvTranspose(Operator):
    """2-D grouped transposed convolution (the gradient of Conv by its input): every input
    element ``x[n, c, i, j]`` adds ``x[n, c, i, j] * w[c, m, ki, kj]`` at
    ``(i * stride + ki * dilation, j * stride + kj * dilation)`` of output channel ``m`` of its
    group; then the pads are cropped and the bias added. Weights are ``[C, M/group, kh, kw]``,
    the optional bias ``[M]``."""

    name = "ConvTranspose"
    member = "CONV_TRANSPOSE"
    Attrs = ConvTransposeAttrs
    arity = (2, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        dtype = same_dtype(inputs, "float32")
        x, w = inputs[0].shape, inputs[1].shape
        need(len(x) == 4 and len(w) == 4, "needs a 4-D input and 4-D weights (NCHW, CMHW)")
        groups = attrs.groups
        need(groups >= 1 and x[1] % groups == 0, f"{x[1]} input channels in {groups} groups")
        need(w[0] == x[1], f"weights for {w[0]} input channels, the input has {x[1]}")
        need(len(attrs.strides) == 2 and min(attrs.strides) >= 1, "needs 2 positive strides")
        need(len(attrs.dilations) == 2 and min(attrs.dilations) >= 1, "needs 2 positive dilations")
        need(len(attrs.pads) == 4 and min(attrs.pads) >= 0, "needs 4 non-negative pads")
        need(
            len(attrs.output_padding) == 2 and min(attrs.output_padding) >= 0,
            "needs 2 non-negative output paddings",
        )
        m = w[1] * groups
        if len(inputs) == 3:
            need(inputs[2].shape == (m,), f"the bias must have shape [{m}]")
        s, p, d, o = attrs.strides, attrs.pads, attrs.dilations, attrs.output_padding
        oh = conv_transpose_size(x[2], w[2], s[0], (p[0], p[2]), d[0], o[0])
        ow = conv_transpose_size(x[3], w[3], s[1], (p[1], p[3]), d[1], o[1])
        need(oh >= 1 and ow >= 1, f"the pads {list(p)} crop the whole output")
        return [TensorType((x[0], m, oh, ow), dtype)]

    @staticmethod
    def kernel(x, w, b=None, *, strides, pads, dilations, output_padding, groups):
        """A scatter-add per kernel position of one batched product over the channels."""
        x, w = np.asarray(x, _F32), np.asarray(w, _F32)
        n, c, h, wd = x.shape
        mg, kh, kw = w.shape[1:]
        sh, sw = strides
        dh, dw = dilations
        full_h = sh * (h - 1) + (kh - 1) * dh + 1 + output_padding[0]
        full_w = sw * (wd - 1) + (kw - 1) * dw + 1 + output_padding[1]
        y = np.zeros((n, groups, mg, full_h, full_w), _F32)
        xg = x.reshape(n, groups, c // groups, h, wd)
        wg = w.reshape(groups, c // groups, mg, kh, kw)
        for ki in range(kh):
            for kj in range(kw):
                part = np.einsum("ngchw,gcm->ngmhw", xg, wg[:, :, :, ki, kj], optimize=True)
                rows = slice(ki * dh, ki * dh + sh * (h - 1) + 1, sh)
                cols = slice(kj * dw, kj * dw + sw * (wd - 1) + 1, sw)
                y[:, :, :, rows, cols] += part
        y = y.reshape(n, groups * mg, full_h, full_w)
        y = y[:, :, pads[0] : full_h - pads[2], pads[1] : full_w - pads[3]]
        if b is not None:
            y = y + np.asarray(b, _F32).reshape(1, -1, 1, 1)
        return np.ascontiguousarray(y, _F32)

    @staticmethod
    def macs(attrs, inputs, outputs):
        mg, kh, kw = inputs[1].shape[1:]
        return inputs[0].size * mg * kh * kw
