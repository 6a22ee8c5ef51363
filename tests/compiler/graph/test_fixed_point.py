"""Per-channel fixed-point requantisation (:mod:`compiler.graph.passes.fixed_point`) and the
integer operators that run it (``QConv`` and ``QDense`` with a multiplier and shifts), against
float arithmetic and against Python's own integers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import GraphError
from compiler.graph.passes.fixed_point import fixed_point
from runtime.opset import OPERATORS, QConvAttrs, QDenseAttrs, TensorType
from runtime.opset.base import OperandError


@st.composite
def layers(draw):
    """Float weights [C, K] with channel magnitudes spread over 2**-12..2**4, a bias, and the
    input and output exponents."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    channels, depth = draw(st.integers(1, 12)), draw(st.integers(1, 600))
    w = rng.normal(size=(channels, depth)) * 2.0 ** rng.uniform(-12, 4, size=(channels, 1))
    if draw(st.booleans()):
        w[rng.integers(channels)] = 0.0  # a dead channel
    bias = rng.normal(size=channels) * draw(st.sampled_from([0.0, 0.1, 10.0]))
    return w, bias, draw(st.integers(-4, 12)), draw(st.integers(-4, 12))


def _on_a_grid(w: np.ndarray) -> np.ndarray:
    """Per channel, whether its weights are integers times its (or the tensor's) largest
    magnitude over 127: an int8 grid that fixed_point keeps."""
    magnitude = np.max(np.abs(w), axis=1)
    out = np.zeros(len(w), bool)
    for scale in (magnitude, np.full(len(w), magnitude.max())):
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = w / (scale[:, None] / 127)
        out |= (magnitude > 0) & np.all(np.abs(steps - np.round(steps)) < 1e-3, axis=1)
    return out


def _int32_python(values) -> list[int]:
    """Python integers wrapped to int32 (two's complement)."""
    return [((int(v) + 2**31) % 2**32) - 2**31 for v in values]


@settings(max_examples=80, deadline=None)
@given(layers())
def test_the_integers_fit_the_alu_and_clip_no_weight(layer):
    w, bias, e_x, e_y = layer
    fp = fixed_point(w, bias, e_x, e_y)
    assert fp.e_y <= e_y
    assert np.all((fp.multiplier >= 1) & (fp.multiplier <= 127))
    assert np.all((fp.shifts >= 0) & (fp.shifts <= 31)) and 0 <= fp.shift <= 31
    magnitude = np.max(np.abs(w), axis=1)
    assert np.all(fp.scales * 127 >= magnitude * (1 - 1e-12))  # no weight is clipped
    assert np.all(np.abs(fp.weights) <= 127)
    # the int8 weights use at least 64/65 of their range wherever the multiplier is 64..127
    full = (fp.multiplier >= 64) & (magnitude > 0)
    assert np.all(np.max(np.abs(fp.weights), axis=1)[full] >= 125)
    # the requantisation is the weight scale exactly: m * 2**-(shift + shifts) = s * 2**(e_y-e_x)
    # (the nearest multiplier on a channel whose weights were on an int8 grid already, which
    # it keeps)
    total = 2.0 ** (fp.shift + fp.shifts.astype(np.int64))
    wanted = fp.scales * 2.0 ** (fp.e_y - e_x)
    grid = _on_a_grid(w)
    np.testing.assert_allclose(fp.multiplier[~grid] / total[~grid], wanted[~grid], rtol=1e-12)
    nearest = np.abs(fp.multiplier - wanted * total) <= 0.5 + 1e-9
    assert np.all((nearest | (fp.multiplier == 1))[grid])
    # no product leaves 32 bits for any int8 input: the worst |acc| times the multiplier
    worst = 128 * np.sum(np.abs(fp.weights.astype(np.int64)), axis=1)
    assert np.all(-(-worst // 2**fp.shift) * fp.multiplier + np.abs(fp.bias) < 2**31)


@settings(max_examples=60, deadline=None)
@given(layers(), st.integers(0, 2**32 - 1))
def test_the_requantised_output_is_the_float_layer_within_one_step(layer, seed):
    """On int8 inputs, the integer pipeline (Python integers) equals the float layer of the
    quantized weights, rounded, within one unit (the pre-shift's and the bias's roundings)."""
    w, bias, e_x, e_y = layer
    fp = fixed_point(w, bias, e_x, e_y)
    x = np.random.default_rng(seed).integers(-128, 128, size=w.shape[1])
    acc = fp.weights.astype(np.int64) @ x
    got = []
    for c, a in enumerate(acc):
        v = (int(a) >> fp.shift) * int(fp.multiplier[c]) + int(fp.bias[c])
        got.append(v >> int(fp.shifts[c]))
    exact = (fp.weights * fp.scales[:, None]) @ (x * 2.0**-e_x) + bias
    want = exact * 2.0**fp.e_y
    # the final shift rounds (half a unit, and half a unit of the bias at the product's
    # scale); a pre-shift truncates the accumulator, which the multiplier scales
    step = fp.multiplier * 2.0 ** -fp.shifts.astype(np.float64)
    tolerance = 0.5 + 2.0 ** -(fp.shifts.astype(np.float64) + 1) + step * (fp.shift > 0)
    rounded = _on_a_grid(w) * 0.5 / fp.multiplier  # the multiplier's rounding, on a grid
    tolerance += rounded * np.abs(want - bias * 2.0**fp.e_y)
    fits = np.abs(bias * 2.0 ** (fp.e_y + fp.shifts.astype(np.float64))) < 2**29
    assert np.all((np.abs(np.array(got) - want) <= tolerance + 1e-9)[fits])
    assert np.all(np.sign(np.array(got)[~fits]) == np.sign(bias[~fits]))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.integers(-2, 10), st.integers(-2, 10))
def test_weights_on_an_int8_grid_keep_it(seed, per_channel, e_x, e_y):
    """Weights a model quantized already (``q * s`` in float32, as a QDQ model's dequantized
    weights are; the scale per channel or per tensor) come back as ``q`` exactly."""
    rng = np.random.default_rng(seed)
    q = rng.integers(-127, 128, size=(6, 40))
    q[:, 0] = 127  # the largest magnitude of each channel spans the range
    scales = rng.uniform(1e-4, 1e-1, size=(6, 1)) if per_channel else np.full((6, 1), 0.01)
    w = (q * scales).astype(np.float32)
    fp = fixed_point(w, None, e_x, e_y)
    np.testing.assert_array_equal(fp.weights, q)
    np.testing.assert_allclose(fp.scales, scales.ravel(), rtol=1e-6)


def test_a_scale_too_fine_for_the_inputs_is_made_coarser():
    """A ratio above 127 (the output's scale far finer than the accumulator's) lowers the
    output exponent until the per-channel shifts are non-negative."""
    fp = fixed_point(np.full((2, 3), 100.0), None, 0, 8)
    assert fp.e_y < 8 and np.all(fp.shifts >= 0)


def _conv(x, w, shift_pre, m, bias, shifts, lo, hi) -> np.ndarray:
    """The fixed-point convolution in Python integers (1x1 kernel, stride 1)."""
    n, _, h, wd = x.shape
    out = np.empty((n, w.shape[0], h, wd), np.int64)
    for b in range(n):
        for o in range(w.shape[0]):
            for i in range(h):
                for j in range(wd):
                    acc = _int32_python(
                        [int(np.dot(x[b, :, i, j].astype(np.int64), w[o, :, 0, 0]))]
                    )[0]
                    v = _int32_python([(acc >> shift_pre) * int(m[o])])[0]
                    v = _int32_python([v + int(bias[o])])[0]
                    out[b, o, i, j] = min(hi, max(lo, v >> int(shifts[o])))
    return out.astype(np.int8)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 6))
def test_qconv_with_a_multiplier_is_the_integer_pipeline(seed, shift):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(1, 5, 3, 2), dtype=np.int8)
    w = rng.integers(-128, 128, size=(4, 5, 1, 1), dtype=np.int8)
    bias = rng.integers(-(2**31), 2**31, size=4, dtype=np.int64).astype(np.int32)
    m = rng.integers(-128, 128, size=4, dtype=np.int8)
    shifts = rng.integers(0, 32, size=4, dtype=np.int8)
    attrs = QConvAttrs((1, 1), (0, 0, 0, 0), (1, 1), 1, shift, -100, 90)
    got = OPERATORS["QConv"].kernel(x, w, bias, m, shifts, **attrs.__dict__)
    np.testing.assert_array_equal(got, _conv(x, w, shift, m, bias, shifts, -100, 90))


def test_qdense_with_a_multiplier_is_qconv_with_a_1x1_kernel():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(3, 20), dtype=np.int8)
    w = rng.integers(-128, 128, size=(6, 20), dtype=np.int8)
    bias = rng.integers(-5000, 5000, size=6).astype(np.int32)
    m = rng.integers(1, 128, size=6).astype(np.int8)
    shifts = rng.integers(0, 16, size=6).astype(np.int8)
    dense = OPERATORS["QDense"].kernel(x, w, bias, m, shifts, shift=1)
    conv = OPERATORS["QConv"].kernel(
        x.reshape(3, 20, 1, 1),
        w.reshape(6, 20, 1, 1),
        bias,
        m,
        shifts,
        **QConvAttrs((1, 1), (0, 0, 0, 0), (1, 1), 1, 1).__dict__,
    )
    np.testing.assert_array_equal(dense, conv.reshape(3, 6))


def _types(*shapes_dtypes):
    return [TensorType(shape, dtype) for shape, dtype in shapes_dtypes]


_X_W_BIAS = (((2, 4), "int8"), ((3, 4), "int8"), ((3,), "int32"))


@pytest.mark.parametrize(
    ("operands", "consts", "fragment"),
    [
        (
            _types(*_X_W_BIAS, ((3,), "int8")),
            [None] * 4,
            "a multiplier and its shifts together",
        ),
        (
            _types(
                ((2, 4), "int8"), ((3, 4), "int8"), ((3,), "int32"), ((3,), "int32"), ((3,), "int8")
            ),
            [None, None, None, None, np.zeros(3, np.int8)],
            "needs an int8 multiplier",
        ),
        (
            _types(
                ((2, 4), "int8"), ((3, 4), "int8"), ((3,), "int32"), ((3,), "int8"), ((2,), "int8")
            ),
            [None, None, None, None, np.zeros(2, np.int8)],
            "the shifts must have shape [3]",
        ),
        (
            _types(
                ((2, 4), "int8"), ((3, 4), "int8"), ((3,), "int32"), ((3,), "int8"), ((3,), "int8")
            ),
            [None] * 5,
            "the shifts must be a constant",
        ),
        (
            _types(
                ((2, 4), "int8"), ((3, 4), "int8"), ((3,), "int32"), ((3,), "int8"), ((3,), "int8")
            ),
            [None, None, None, None, np.array([0, 32, 1], np.int8)],
            "the shifts must be in 0..31",
        ),
    ],
)
def test_qdense_refuses_a_malformed_requantisation(operands, consts, fragment):
    with pytest.raises(OperandError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        OPERATORS["QDense"].output_types(QDenseAttrs(0), operands, consts)


def test_an_unknown_scheme_names_the_known_ones():
    from compiler.graph import GraphBuilder
    from compiler.graph.passes import calibrate, quantize

    b = GraphBuilder("g")
    x = b.input("x", (1, 4))
    graph = b.build([x])
    cal = calibrate(graph, [[np.arange(4, dtype=np.float32).reshape(1, 4)]])
    with pytest.raises(GraphError, match="'per-channel'"):
        quantize(graph, cal, scheme="per_channel")
