"""Calibration as data (issue 30): each method's threshold against an independent numpy
computation, ``mse`` exactly as it was, the entropy method's divergences recomputed by hand, a
compiled model per method close to float, the per-value records, the warnings on constant or
collapsing data (and none on normal data), and ``vtaforge compile --calibration-method
--quant-report``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import GraphError, QuantizationWarning
from compiler.frontend import from_onnx
from compiler.graph import AxisAttrs, ConvAttrs, Graph, GraphBuilder, Op, QuantAttrs
from compiler.graph.passes import (
    CALIBRATION_METHODS,
    calibrate,
    calibration_method,
    exponent,
    quantization_table,
    quantize,
    quantize_with_records,
)
from compiler.graph.passes.calibrate import EntropyCalibration, divergences
from compiler.model import compile_model, reference
from compiler.zoo import onnx_bytes
from compiler.zoo.digits import load_digits_split, train_digits_cnn
from runtime.cli import main
from tests.compiler.model.graphs import residual_cnn, samples

METHODS = ("max", "percentile", "percentile:99.9", "mse", "entropy")


# ------------------------------------------------------------------- data for the methods
@st.composite
def observations(draw, *, tiny: bool = False) -> np.ndarray:
    """Elements as calibration keeps them (float64): a seeded distribution of some scale,
    sometimes with a few outliers, sometimes through a ReLU."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = draw(st.integers(1, 3000))
    kind = draw(st.sampled_from(["normal", "laplace", "uniform", "relu"]))
    scale = 10.0 ** draw(st.floats(-12 if tiny else -3, 3))
    x = {
        "normal": lambda: rng.standard_normal(size),
        "laplace": lambda: rng.laplace(size=size),
        "uniform": lambda: rng.uniform(-1, 1, size),
        "relu": lambda: np.maximum(rng.standard_normal(size), 0),
    }[kind]() * scale
    if draw(st.booleans()):
        x[rng.choice(size, min(size, 3), replace=False)] *= 100
    return x.astype(np.float32).astype(np.float64)


def _feeds(graph: Graph, count: int) -> list[list[np.ndarray]]:
    """``count`` seeded samples of a single-input graph, each a list of its inputs."""
    return [[x] for x in samples(graph, count)]


def _max_abs(x: np.ndarray) -> float:
    return float(np.max(np.abs(x)))


def _exponent_by_hand(t: float) -> int:
    """The largest e with t * 2**e <= 127, by counting (clamped to [-16, 24])."""
    if t <= 0:
        return 24
    e = -16
    while e < 24 and t * 2.0 ** (e + 1) <= 127:
        e += 1
    return e


# the "mse" formula as quantize.py wrote it before issue 30, copied verbatim
def _old_exponent(max_abs: float) -> int:
    if max_abs <= 0:
        return 24
    return int(min(24, max(-16, math.floor(math.log2(127.0 / max_abs)))))


def _old_to_int8(array: np.ndarray, e: int) -> np.ndarray:
    return np.clip(np.round(array.astype(np.float64) * 2.0**e), -128, 127).astype(np.int8)


def _old_mse(max_abs: float, x: np.ndarray) -> int:
    e = _old_exponent(max_abs)
    errors = [float(np.mean((x - _old_to_int8(x, k) * 2.0**-k) ** 2)) for k in range(e, e + 4)]
    return e + int(np.argmin(errors))


# ---------------------------------------------------------------------------- the methods
@settings(max_examples=60, deadline=None)
@given(observations(tiny=True))
def test_max_is_the_largest_magnitude(x):
    t, e = calibration_method("max").choose(_max_abs(x), x)
    assert t == np.max(np.abs(x))
    assert e == exponent(t) == _exponent_by_hand(t)


@settings(max_examples=60, deadline=None)
@given(observations(), st.sampled_from([50.0, 90.0, 99.0, 99.9, 99.99, 100.0]))
def test_percentile_is_numpys_percentile_of_the_magnitudes(x, percent):
    method = calibration_method(f"percentile:{percent}")
    expected = float(np.percentile(np.abs(x), percent))
    t, e = method.choose(_max_abs(x), x)
    assert t == (expected if expected > 0 else np.max(np.abs(x)))
    assert e == _exponent_by_hand(t)
    assert calibration_method("percentile") == calibration_method("percentile:99.99")


@settings(max_examples=80, deadline=None)
@given(observations(tiny=True))
def test_mse_is_the_least_squared_error_exponent_exactly_as_before(x):
    top = _max_abs(x)
    t, e = calibration_method("mse").choose(top, x)
    assert e == _old_mse(top, x)
    # brute force over the four exponents from the one that keeps every element in range
    first = _exponent_by_hand(top)
    errors = {}
    for k in range(first, first + 4):
        q = np.clip(np.round(x * 2.0**k), -128, 127) * 2.0**-k
        errors[k] = float(np.mean((x - q) ** 2))
    assert errors[e] == min(errors.values())
    assert e == min(k for k, err in errors.items() if err == errors[e])
    assert t == 127 * 2.0**-e


def test_mse_gives_every_value_of_a_model_the_exponent_it_had():
    graph = residual_cnn(0)
    cal = calibrate(graph, _feeds(graph, 3))
    for value, top in cal.max_abs.items():
        assert cal.exponent(value) == _old_mse(top, cal.elements[value]), value
        assert cal.exponent(value, "max") == _old_exponent(top), value


def _kl_by_hand(hist: np.ndarray, kept: int) -> float:
    """The entropy method's divergence for ``kept`` bins, written out bin by bin."""
    counts = [float(c) for c in hist]
    reference = counts[:kept]
    reference[-1] += sum(counts[kept:])
    candidate = [0.0] * kept
    for level in range(128):
        lo, hi = level * kept // 128, (level + 1) * kept // 128
        filled = [b for b in range(lo, hi) if counts[b] > 0]
        for b in filled:
            candidate[b] = sum(counts[lo:hi]) / len(filled)
    p = np.array([c if c > 0 else 1e-4 for c in reference])
    q = np.array([c if c > 0 else 1e-4 for c in candidate])
    return float(scipy.stats.entropy(p, q))  # normalises both, sum p log(p / q)


@settings(max_examples=15, deadline=None)
@given(observations())
def test_entropy_chooses_the_candidate_of_least_divergence(x):
    bins = 256
    top = _max_abs(x)
    t, e = EntropyCalibration(bins).choose(top, x)
    if top == 0:
        assert t == 0
        return
    hist, _ = np.histogram(np.abs(x), bins=bins, range=(0.0, top))
    by_hand = [_kl_by_hand(hist, kept) for kept in range(128, bins + 1)]
    np.testing.assert_allclose(divergences(hist), by_hand, rtol=1e-9, atol=1e-12)
    chosen = round(t / top * bins)
    assert t == top * chosen / bins
    assert by_hand[chosen - 128] <= min(by_hand) + 1e-12
    assert e == _exponent_by_hand(t)


@settings(max_examples=40, deadline=None)
@given(observations())
def test_entropy_threshold_lies_between_the_median_and_the_maximum(x):
    top = _max_abs(x)
    t = calibration_method("entropy").threshold(top, x)
    assert np.percentile(np.abs(x), 50) <= t <= top


def test_entropy_clips_a_few_huge_outliers_where_max_does_not():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(20000)
    x[:4] = [400.0, -350.0, 500.0, -450.0]
    top = _max_abs(x)
    t_max, e_max = calibration_method("max").choose(top, x)
    t, e = calibration_method("entropy").choose(top, x)
    assert t_max == top == 500.0
    assert t < top / 10 and e >= e_max + 3  # the outliers clipped: 8 times the resolution


def test_methods_are_data_and_an_unknown_one_names_the_known_ones():
    assert set(CALIBRATION_METHODS) == {"max", "percentile", "mse", "entropy"}
    for name, cls in CALIBRATION_METHODS.items():
        assert isinstance(calibration_method(name), cls) and calibration_method(name).name == name
    assert calibration_method("percentile:99.9").spec == "percentile:99.9"
    assert calibration_method("entropy:512") == EntropyCalibration(512)
    with pytest.raises(
        GraphError, match=r"unknown calibration method 'kl'.*'max'.*'mse'.*'entropy'"
    ):
        calibration_method("kl")
    for bad, message in [
        ("percentile:abc", "percent in"),
        ("percentile:0", "percent in"),
        ("percentile:101", "percent in"),
        ("entropy:64", "at least 128"),
        ("mse:3", "takes no parameter"),
    ]:
        with pytest.raises(GraphError, match=message):
            calibration_method(bad)
    graph = residual_cnn(0)
    with pytest.raises(GraphError, match="unknown calibration method 'median'"):
        compile_model(graph, calibration=samples(graph, 1), calibration_method="median")


# ------------------------------------------------------------------------- a compiled model
@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The digits CNN as a float graph and an ONNX file, its calibration images and the
    held-out images, and the files the command line reads."""
    folder = tmp_path_factory.mktemp("calibrate")
    module, x_test, _ = train_digits_cnn(seed=0)
    data = onnx_bytes(module, x_test[:1], input_names=["x"])
    (folder / "digits.onnx").write_bytes(data)
    calibration = load_digits_split(seed=0).x_train[:32, None]  # (32, 1, 1, 8, 8)
    np.savez(folder / "calib.npz", x=calibration)
    np.savez(folder / "zeros.npz", x=np.zeros_like(calibration[:4]))
    return folder, from_onnx(data), list(calibration), x_test


#: The largest relative error (Frobenius norm over 200 held-out images' logits) of the int8
#: digits CNN against float: measured 0.0098 for max, percentile, percentile:99.9 and mse (the
#: same exponents on this model) and 0.0161 for entropy.
REL_ERROR = 0.03


@pytest.mark.parametrize("method", METHODS)
def test_each_method_compiles_a_model_that_runs_close_to_float(digits, method):
    _, graph, calibration, x_test = digits
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = compile_model(graph, "default", calibration=calibration, calibration_method=method)
    assert not [w for w in caught if issubclass(w.category, QuantizationWarning)]
    run = model.run(x_test[:1], device="fsim")
    np.testing.assert_array_equal(
        run.outputs[model.image.outputs[0]], model.reference(x_test[:1])[0]
    )
    images = [x_test[k : k + 1] for k in range(200)]
    q = np.concatenate([model.reference(x)[0] for x in images])
    f = np.concatenate([reference(model.float_graph, x)[0] for x in images])
    assert np.linalg.norm(q - f) / np.linalg.norm(f) < REL_ERROR
    assert {r.method for r in model.quantization} == {calibration_method(method).spec}


def test_the_default_method_is_mse_and_its_model_is_unchanged(digits):
    _, graph, calibration, _ = digits
    default = compile_model(graph, "default", calibration=calibration)
    mse = compile_model(graph, "default", calibration=calibration, calibration_method="mse")
    assert str(default.graph) == str(mse.graph)
    assert default.quantization == mse.quantization


def test_records_hold_each_int8_values_range_threshold_scale_and_clipped_fraction():
    graph = residual_cnn(0)
    cal = calibrate(graph, _feeds(graph, 3))
    for method in METHODS:
        qgraph, records = quantize_with_records(graph, cal, method=method)
        assert str(qgraph) == str(quantize(graph, cal, method=method))
        by_value = {r.value: r for r in records}
        # every activation the quantizer made int8, the input first
        assert list(by_value) == ["x", "relu1", "pool", "conv2", "relu2", "gap", "flatten", "fc"]
        for r in records:
            x = cal.elements[r.value]
            scaled = np.round(x * 2.0**r.exponent)
            assert r.clipped == np.count_nonzero((scaled > 127) | (scaled < -128)) / x.size
            assert r.abs_max == cal.max_abs[r.value] == max(-r.minimum, r.maximum)
            assert r.threshold == cal.threshold(r.value, method)
            assert r.method == calibration_method(method).spec and r.scale == 2.0**-r.exponent
        assert by_value["x"].node == "" and by_value["relu1"].node == "relu1"
        # the input's record is the scale its QuantizeLinear applies
        (q,) = [n for n in qgraph.nodes if n.op is Op.QUANTIZE and n.inputs == ("x",)]
        assert q.attrs == QuantAttrs(by_value["x"].scale)
        assert by_value["x"].exponent == cal.exponent("x", method)
        table = quantization_table(records).splitlines()
        assert table[0].split()[:3] == ["value", "node", "method"] and len(table) == 9
        assert table[2].split()[:2] == ["relu1", "relu1"]


# ------------------------------------------------------------------------------- warnings
def _scaling(factor: float, *, inputs: float = 1.0) -> tuple[Graph, list[list[np.ndarray]]]:
    """``y = conv1x1(x, factor)``: a value ``factor`` times its input, and four samples of
    the input at scale ``inputs``."""
    b = GraphBuilder("scaling")
    x = b.input("x", (1, 1, 4, 4))
    w = b.param("w", np.full((1, 1, 1, 1), factor, np.float32))
    y = b.add1(Op.CONV, [x, w], ConvAttrs(), name="scale")
    rng = np.random.default_rng(0)
    data = [[(rng.standard_normal((1, 1, 4, 4)) * inputs).astype(np.float32)] for _ in range(4)]
    return b.build([y]), data


def _like(data: list[list[np.ndarray]], value: float) -> list[list[np.ndarray]]:
    return [[np.full_like(x, value) for x in sample] for sample in data]


def _quantization_warnings(graph: Graph, data: list[list[np.ndarray]]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quantize(graph, calibrate(graph, data))
    return [str(w.message) for w in caught if issubclass(w.category, QuantizationWarning)]


def test_all_zero_calibration_data_warns_and_names_the_input():
    graph, data = _scaling(0.5)
    zeros = _like(data, 0.0)
    with pytest.warns(QuantizationWarning, match=r"input 'x' is constant \(0\.0 .* 4 samples"):
        calibrate(graph, zeros)
    said = _quantization_warnings(graph, zeros)
    assert any("calibration input 'x' is constant" in m for m in said)
    assert any(m.startswith("value 'x' is 0 in int8 on every calibration element") for m in said)
    assert any(m.startswith("value 'scale' (node 'scale') is 0 in int8") for m in said)


def test_constant_or_identical_calibration_samples_warn():
    graph, data = _scaling(0.5)
    said = _quantization_warnings(graph, _like(data, 1.0))
    assert said == [
        "calibration input 'x' is constant (1.0 in every element of 4 samples): "
        "the scales chosen from it suit no other data"
    ]
    said = _quantization_warnings(graph, [data[0]] * 3)
    assert said == ["the 3 calibration samples are identical: calibration saw one input"]


def test_a_vanishing_value_warns_and_names_it():
    graph, data = _scaling(1e-12)  # |y| ~ 1e-12: below half of the finest scale, 2**-24
    (said,) = _quantization_warnings(graph, data)
    assert said.startswith("value 'scale' (node 'scale') is 0 in int8 on every calibration")
    graph, data = _scaling(1e-9, inputs=100.0)  # |y| ~ 3e-7: int8 holds it, barely
    cal = calibrate(graph, data)
    assert 2**-25 < cal.max_abs["scale"] < 5e-9 * cal.max_abs["x"]
    (said,) = _quantization_warnings(graph, data)
    assert said.startswith("value 'scale' (node 'scale') collapsed: its largest magnitude")


def test_a_bounded_output_of_huge_inputs_does_not_warn():
    """A softmax after an attention mask of float32's lowest: its inputs reach 3.4e38, its
    output 1, and nothing collapsed (only int8 arithmetic's outputs are held to their
    operands' range)."""
    b = GraphBuilder("masked")
    x = b.input("x", (1, 1, 4, 4))
    mask = np.zeros((1, 1, 4, 4), np.float32)
    mask[..., 2:] = np.finfo(np.float32).min
    scores = b.add1(Op.ADD, [x, b.param("mask", mask)], name="masked")
    p = b.add1(Op.SOFTMAX, [scores], AxisAttrs(3), name="softmax")
    w = b.param("w", np.full((1, 1, 1, 1), 0.5, np.float32))
    graph = b.build([b.add1(Op.CONV, [p, w], ConvAttrs(), name="mix")])
    rng = np.random.default_rng(0)
    data = [[rng.standard_normal((1, 1, 4, 4)).astype(np.float32)] for _ in range(3)]
    assert calibrate(graph, data).max_abs["masked"] > 1e38
    assert _quantization_warnings(graph, data) == []


@pytest.mark.parametrize("method", METHODS)
def test_normal_data_gives_no_warning(method):
    for graph in (residual_cnn(0), residual_cnn(1, pool=False)):
        cal = calibrate(graph, _feeds(graph, 2))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            quantize(graph, cal, method=method)
            calibrate(graph, _feeds(graph, 1))  # one sample: nothing to compare
        assert not [w for w in caught if issubclass(w.category, QuantizationWarning)]


# --------------------------------------------------------------------------- command line
def test_compile_takes_a_calibration_method_and_prints_the_quantization_table(digits, capsys):
    folder, graph, calibration, _ = digits
    argv = ["compile", str(folder / "digits.onnx"), "--calibrate", str(folder / "calib.npz")]
    out = str(folder / "m.vtaf")
    method = ["--calibration-method", "percentile:99.9"]
    assert main([*argv, *method, "--quant-report", "-o", out]) == 0
    printed, err = capsys.readouterr()
    assert "warning" not in err
    samples_by_name = [{"x": s} for s in calibration[:32]]
    expected = compile_model(
        graph, "default", calibration=samples_by_name, calibration_method="percentile:99.9"
    )
    assert quantization_table(expected.quantization) in printed
    lines = [line.split() for line in printed.splitlines()]
    assert [line[0] for line in lines if "percentile:99.9" in line] == [
        r.value for r in expected.quantization
    ]
    # without the option: mse, and no table
    assert main([*argv, "-o", out]) == 0
    assert "threshold" not in capsys.readouterr().out


def test_compile_lists_the_methods_and_refuses_an_unknown_one(digits, capsys):
    folder = digits[0]
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    usage = capsys.readouterr().out
    assert "--calibration-method" in usage and "--quant-report" in usage
    assert all(name in usage for name in CALIBRATION_METHODS)
    with pytest.raises(SystemExit):
        main(["compile", str(folder / "digits.onnx"), "--calibration-method", "kl", "-o", "m"])
    err = capsys.readouterr().err
    assert "unknown calibration method 'kl'" in err and "'entropy'" in err
    assert len(err.strip().splitlines()) == 1


def test_compile_prints_each_quantization_warning_as_one_line(digits, capsys):
    folder = digits[0]
    argv = ["compile", str(folder / "digits.onnx"), "--calibrate", str(folder / "zeros.npz")]
    assert main([*argv, "-o", str(folder / "zeros.vtaf")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all(line.startswith("vtaforge compile: warning: ") for line in err)
    assert "vtaforge compile: warning: calibration input 'x' is constant (0.0 in every " in err[0]
    assert any("value 'x' is 0 in int8" in line for line in err)
