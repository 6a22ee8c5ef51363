"""The ONNX converters of Resize, Upsample and ConvTranspose against onnxruntime: each opset's
spelling (Resize 10, 11, 13, 18, 19; Upsample 7, 9), every coordinate transformation and
nearest mode, scales and sizes, ``axes``; ConvTranspose's strides, pads, dilations, groups,
output padding, ``auto_pad`` and ``output_shape``, and random geometries; cubic interpolation;
and the typed refusals (antialias, non-constant scales, ``tf_crop_and_resize``, and
``align_corners`` by scales that give a fractional output length, where onnxruntime's
coordinates differ from onnx's reference).

Tolerances: ``1e-5`` for the resizes, ``1e-4`` for the transposed convolutions' sums.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import UnsupportedOperator
from compiler.frontend import from_onnx
from tests.compiler.frontend.test_onnx import SUMS, _check, _op, _rand

EXACT = {"rtol": 1e-5, "atol": 1e-5}
_F32 = np.float32

TRANSFORMS = [
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _scales(h: float, w: float) -> np.ndarray:
    return np.array([1, 1, h, w], _F32)


def _check_resize(model, x, hw, scales, transform) -> None:
    """The resize matches onnxruntime, or is refused where ``align_corners`` meets scales
    that give a fractional output length."""
    whole = all(float(_F32(d) * _F32(s)).is_integer() for d, s in zip(hw, scales, strict=True))
    if transform == "align_corners" and not whole:
        with pytest.raises(UnsupportedOperator, match="align_corners by scales"):
            from_onnx(model)
        return
    _check(model, {"x": x}, EXACT)


def _resize(x, opset, *, scales=None, sizes=None, **attrs):
    params, inputs = {"roi": np.zeros(0, _F32)}, ["x", "roi"]
    if scales is not None:
        params["scales"] = scales
        inputs.append("scales")
    else:
        inputs.append("")
    if sizes is not None:
        params["sizes"] = np.asarray(sizes, np.int64)
        inputs.append("sizes")
    return _op("Resize", {"x": x}, params, inputs=inputs, opset=opset, **attrs)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("nearest_mode", NEAREST)
@pytest.mark.parametrize(("hw", "scales"), [((4, 5), (2.0, 3.0)), ((7, 9), (0.6, 0.5))])
def test_resize_nearest(transform, nearest_mode, hw, scales) -> None:
    x = _rand(1, 2, *hw)
    model = _resize(
        x,
        13,
        scales=_scales(*scales),
        mode="nearest",
        coordinate_transformation_mode=transform,
        nearest_mode=nearest_mode,
    )
    _check_resize(model, x, hw, scales, transform)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize(("hw", "scales"), [((4, 5), (2.0, 1.5)), ((7, 9), (0.6, 0.5))])
def test_resize_linear(transform, hw, scales) -> None:
    x = _rand(2, 2, *hw)
    model = _resize(
        x, 11, scales=_scales(*scales), mode="linear", coordinate_transformation_mode=transform
    )
    _check_resize(model, x, hw, scales, transform)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize(("a", "exclude"), [(-0.75, 0), (-0.5, 1)])
@pytest.mark.parametrize(("hw", "scales"), [((4, 6), (2.0, 1.5)), ((10, 8), (0.6, 0.5))])
def test_resize_cubic(transform, a, exclude, hw, scales) -> None:
    x = _rand(1, 2, *hw)
    model = _resize(
        x,
        13,
        scales=_scales(*scales),
        mode="cubic",
        coordinate_transformation_mode=transform,
        cubic_coeff_a=a,
        exclude_outside=exclude,
    )
    _check_resize(model, x, hw, scales, transform)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("sizes", [(1, 2, 9, 4), (1, 2, 1, 11), (1, 2, 3, 3)])
def test_resize_sizes(mode, sizes) -> None:
    x = _rand(1, 2, 5, 6)
    model = _resize(
        x, 13, sizes=sizes, mode=mode, coordinate_transformation_mode="pytorch_half_pixel"
    )
    _check(model, {"x": x}, EXACT)


@pytest.mark.parametrize("axes", [[2, 3], [3, 2], [-1]])
@pytest.mark.parametrize("by", ["scales", "sizes"])
def test_resize_axes(axes, by) -> None:
    x = _rand(1, 2, 4, 5)
    values = {"scales": np.array([2.0, 1.5][: len(axes)], _F32), "sizes": [7, 3][: len(axes)]}
    model = _resize(x, 18, **{by: values[by]}, mode="linear", axes=axes)
    _check(model, {"x": x}, EXACT)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_half_pixel_symmetric(mode) -> None:
    x = _rand(1, 2, 5, 7)
    model = _resize(
        x,
        19,
        scales=_scales(1.7, 0.7),
        mode=mode,
        coordinate_transformation_mode="half_pixel_symmetric",
    )
    _check(model, {"x": x}, EXACT)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [(2.0, 3.0), (1.6, 2.5), (0.6, 0.5)])
def test_resize_v10(mode, scales) -> None:
    x = _rand(1, 2, 6, 7)
    model = _op("Resize", {"x": x}, {"scales": _scales(*scales)}, opset=10, mode=mode)
    _check(model, {"x": x}, EXACT)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [(2.0, 3.0), (1.5, 2.5)])
def test_upsample(mode, scales) -> None:
    x = _rand(1, 2, 4, 5)
    v7 = _op("Upsample", {"x": x}, opset=7, mode=mode, scales=[1.0, 1.0, *scales])
    _check(v7, {"x": x}, EXACT)
    v9 = _op("Upsample", {"x": x}, {"scales": _scales(*scales)}, opset=9, mode=mode)
    _check(v9, {"x": x}, EXACT)


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"mode": "linear", "antialias": 1}, "antialiased linear"),
        ({"mode": "cubic", "antialias": 1}, "antialiased cubic"),
        ({"coordinate_transformation_mode": "tf_crop_and_resize"}, "tf_crop_and_resize"),
    ],
)
def test_resize_refusals(attrs, message) -> None:
    x = _rand(1, 2, 4, 4)
    with pytest.raises(UnsupportedOperator, match=message):
        from_onnx(_resize(x, 18, scales=_scales(2.0, 2.0), **attrs))


def test_resize_refuses_tf_half_pixel_for_nearest() -> None:
    x = _rand(1, 2, 4, 4)
    model = _resize(
        x, 11, scales=_scales(2.0, 2.0), coordinate_transformation_mode="tf_half_pixel_for_nearest"
    )
    with pytest.raises(UnsupportedOperator, match="tf_half_pixel_for_nearest"):
        from_onnx(model)


def test_resize_needs_constant_scales() -> None:
    x, scales = _rand(1, 2, 4, 4), _scales(2.0, 2.0)
    model = _op("Resize", {"x": x, "s": scales}, inputs=["x", "", "s"], opset=13)
    with pytest.raises(UnsupportedOperator, match="scales .* constant"):
        from_onnx(model)


def test_resize_refuses_n_or_c() -> None:
    x = _rand(1, 2, 4, 4)
    model = _resize(x, 13, scales=np.array([1, 2, 2, 2], _F32))
    with pytest.raises(UnsupportedOperator, match="H and W"):
        from_onnx(model)


# ----------------------------------------------------------------------------- ConvTranspose
@pytest.mark.parametrize(
    ("c", "m", "k", "attrs"),
    [
        (3, 4, 3, {}),
        (3, 4, 3, {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
        (3, 2, 3, {"strides": [3, 2], "pads": [0, 1, 2, 0]}),
        (2, 3, 2, {"dilations": [2, 3], "strides": [2, 1]}),
        (4, 6, 3, {"group": 2, "strides": [2, 2]}),
        (4, 4, 3, {"group": 4, "pads": [1, 1, 1, 1]}),
        (3, 4, 3, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        (3, 4, 4, {"auto_pad": "SAME_LOWER", "strides": [2, 3]}),
        (3, 4, 3, {"auto_pad": "VALID", "kernel_shape": [3, 3]}),
        (3, 4, 3, {"strides": [2, 2], "output_shape": [10, 9]}),
        (3, 4, 3, {"strides": [3, 2], "output_shape": [10, 8]}),  # past the full output
        (3, 4, 3, {"strides": [2, 2], "output_shape": [9, 9], "auto_pad": "SAME_UPPER"}),
    ],
)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose(c, m, k, attrs, bias) -> None:
    x = _rand(2, c, 4, 5)
    group = attrs.get("group", 1)
    params = {"w": _rand(c, m // group, k, k, seed=1)}
    if bias:
        params["b"] = _rand(m, seed=2)
    _check(_op("ConvTranspose", {"x": x}, params, **attrs), {"x": x}, SUMS)


@settings(max_examples=12, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.tuples(st.integers(1, 6), st.integers(1, 6)),
    st.tuples(st.integers(1, 4), st.integers(1, 4)),
    st.tuples(st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.integers(1, 2), st.integers(1, 2)),
    st.integers(0, 2),
    st.integers(1, 2),
)
def test_conv_transpose_random(cg, mg, hw, kernel, strides, dilations, pad, group) -> None:
    output_padding = [min(pad, s - 1) for s in strides]
    x = _rand(1, cg * group, *hw)
    w = _rand(cg * group, mg, *kernel, seed=1)
    full = [
        s * (d - 1) + o + (k - 1) * dl + 1
        for s, d, o, k, dl in zip(strides, hw, output_padding, kernel, dilations, strict=True)
    ]
    pads = [min(pad, (f - 1) // 2) for f in full] * 2
    model = _op(
        "ConvTranspose",
        {"x": x},
        {"w": w},
        strides=list(strides),
        dilations=list(dilations),
        pads=pads,
        output_padding=output_padding,
        group=group,
    )
    _check(model, {"x": x}, SUMS)


def test_conv_transpose_refuses_3d() -> None:
    x = _rand(1, 2, 3, 3, 3)
    model = _op("ConvTranspose", {"x": x}, {"w": _rand(2, 2, 2, 2, 2)})
    with pytest.raises(UnsupportedOperator, match="2-D"):
        from_onnx(model)
