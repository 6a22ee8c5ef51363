"""Models quantized by onnxruntime in the QDQ format: per-axis DequantizeLinear of constants
equal to onnxruntime's, fake-quantization pairs read as the values they round
(:mod:`compiler.graph.passes.qdq`), and the digits CNN quantized by onnxruntime (per tensor and
per channel) compiled whole onto the accelerator, against onnxruntime's own quantized run."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler.errors import QuantizationWarning
from compiler.frontend import from_onnx
from compiler.graph import GraphBuilder, Op
from compiler.graph.interpret import run_graph
from compiler.graph.ir import AxisAttrs, BatchNormAttrs, ConvAttrs, QuantAttrs
from compiler.graph.passes import fake_quant_pairs, strip_fake_quant
from compiler.model import compile_model
from compiler.zoo import onnx_bytes
from compiler.zoo.digits import load_digits_split, train_digits_cnn


def _ort(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["int8", "uint8", "int32"]),
    st.integers(0, 2),
    st.booleans(),
)
def test_a_per_axis_dequantize_of_a_constant_is_onnxruntimes(seed, dtype, axis, zero_point):
    """A DequantizeLinear of an initializer with a scale (and zero point) per entry of
    ``axis`` becomes a float constant equal to what onnxruntime computes."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    shape = (3, 4, 5)
    q = rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype)
    scale = rng.uniform(1e-3, 2, shape[axis]).astype(np.float32)
    names = ["q", "s"]
    params = [numpy_helper.from_array(q, "q"), numpy_helper.from_array(scale, "s")]
    if zero_point and dtype != "int32":
        zero = rng.integers(info.min, info.max + 1, shape[axis]).astype(dtype)
        params.append(numpy_helper.from_array(zero, "z"))
        names.append("z")
    node = helper.make_node("DequantizeLinear", names, ["w"], axis=axis)
    add = helper.make_node("Add", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [node, add],
        "dq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        params,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    x = np.zeros(shape, np.float32)
    ours = run_graph(from_onnx(model), {"x": x})[0]
    np.testing.assert_array_equal(ours, _ort(model.SerializeToString(), {"x": x})[0])


def test_a_per_axis_quantize_of_an_activation_is_still_refused():
    from compiler.errors import UnsupportedOperator

    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1)
    graph = helper.make_graph(
        [node],
        "dq",
        [helper.make_tensor_value_info("x", TensorProto.INT8, (2, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 3))],
        [numpy_helper.from_array(np.ones(3, np.float32), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(UnsupportedOperator, match="per-axis DequantizeLinear of a constant"):
        from_onnx(model)


def _fake_quantized():
    """x -> Q -> DQ -> relu -> Q -> DQ (a graph output), and a pair whose int8 value is also
    read directly (which is no fake quantization: it stays)."""
    b = GraphBuilder("qdq")
    x = b.input("x", (2, 8))
    q = QuantAttrs(0.05)
    a = b.add1(Op.DEQUANTIZE, [b.add1(Op.QUANTIZE, [x], q, name="q1")], q, name="dq1")
    r = b.add1(Op.RELU, [a], name="relu")
    kept = b.add1(Op.QUANTIZE, [r], q, name="q2")
    y = b.add1(Op.DEQUANTIZE, [kept], q, name="dq2")
    z = b.add1(Op.QUANTIZE, [y], q, name="q3")
    out = b.add1(Op.DEQUANTIZE, [z], q, name="dq3")
    return b.build([out, kept])


def test_fake_quantization_pairs_are_read_as_their_values():
    graph = _fake_quantized()
    assert [(q.name, dq.name) for q, dq in fake_quant_pairs(graph)] == [
        ("q1", "dq1"),
        ("q3", "dq3"),
    ]
    stripped = strip_fake_quant(graph)
    assert stripped.outputs == graph.outputs
    assert [n.op for n in stripped.nodes] == [
        Op.RELU,
        Op.QUANTIZE,
        Op.DEQUANTIZE,
        Op.IDENTITY,
    ]
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    relu = np.maximum(x, 0)
    kept = np.clip(np.rint(relu / np.float32(0.05)), -128, 127).astype(np.int8)
    out, q2 = run_graph(stripped, [x])
    np.testing.assert_array_equal(q2, kept)
    np.testing.assert_array_equal(out, kept.astype(np.float32) * np.float32(0.05))


def test_a_pair_that_saturates_at_zero_is_the_activation_it_carries():
    """A pair whose zero point is its type's least value clips at zero: it becomes that clip
    (onnxruntime writes a ReLU so), once: a later pair over its flattened value is a rounding
    only."""
    b = GraphBuilder("relu_in_the_pair")
    x = b.input("x", (2, 3, 2, 2))
    q = QuantAttrs(0.1, -128, "int8")
    a = b.add1(Op.DEQUANTIZE, [b.add1(Op.QUANTIZE, [x], q, name="q1")], q, name="dq1")
    f = b.add1(Op.FLATTEN, [a], AxisAttrs(1), name="flatten")
    u = QuantAttrs(0.2, 0, "uint8")
    y = b.add1(Op.DEQUANTIZE, [b.add1(Op.QUANTIZE, [f], u, name="q2")], u, name="dq2")
    graph = b.build([b.add1(Op.RELU, [y], name="out")])
    stripped = strip_fake_quant(graph)
    assert [(n.op, n.name) for n in stripped.nodes] == [
        (Op.CLIP, "dq1"),
        (Op.FLATTEN, "flatten"),
        (Op.RELU, "out"),
    ]
    clip = stripped.node("dq1").attrs
    assert clip.lo == 0.0 and clip.hi == pytest.approx(25.5)
    x = np.random.default_rng(1).normal(scale=20, size=(2, 3, 2, 2)).astype(np.float32)
    want = np.clip(x, 0, np.float32(25.5)).reshape(2, 12)
    np.testing.assert_allclose(run_graph(stripped, [x])[0], want, rtol=1e-6)


@pytest.fixture(scope="module")
def digits_qdq(tmp_path_factory):
    """The digits CNN, quantized by onnxruntime's quantize_static in the QDQ format, per tensor
    and per channel: int8 activations and weights, symmetric; and onnxruntime's defaults
    (uint8 activations with zero points, which carry the ReLUs it removes)."""
    module, x_test, _ = train_digits_cnn(seed=0)
    folder = tmp_path_factory.mktemp("qdq")
    float_path = folder / "digits.onnx"
    float_path.write_bytes(onnx_bytes(module, x_test[:1], input_names=["x"]))
    calibration = load_digits_split(0).x_train[:32, None]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.samples = iter([{"x": c} for c in calibration])

        def get_next(self):
            return next(self.samples, None)

    symmetric = {
        "activation_type": QuantType.QInt8,
        "weight_type": QuantType.QInt8,
        "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True},
    }
    models = {}
    for per_channel in (False, True):
        for name, options in (("int8", symmetric), ("defaults", {})):
            path = folder / f"digits_qdq_{per_channel}_{name}.onnx"
            quantize_static(
                float_path,
                path,
                Reader(),
                quant_format=QuantFormat.QDQ,
                per_channel=per_channel,
                **options,
            )
            models[per_channel, name] = path.read_bytes()
    return models, [[c] for c in calibration], x_test[:20, None]


@pytest.mark.parametrize("types", ["int8", "defaults"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_an_onnxruntime_qdq_model_runs_whole_on_the_accelerator(digits_qdq, per_channel, types):
    """No QuantizeLinear/DequantizeLinear between accelerator layers (one pair at the model's
    edges), a warning that the model's activation scales are replaced; on fsim the output is
    bit-exact with the reference and agrees with onnxruntime's quantized run on every one of
    20 images (the activations' scales differ, so the logits differ by a few per cent:
    measured 0.024 to 0.028 relative)."""
    models, calibration, images = digits_qdq
    model = models[per_channel, types]
    assert sum(n.op_type == "QuantizeLinear" for n in onnx.load_from_string(model).graph.node) > 4
    with pytest.warns(QuantizationWarning, match="QuantizeLinear/DequantizeLinear pairs"):
        compiled = compile_model(model, calibration=calibration, scheme="per-channel")
    cpu = [s.op for s in compiled.image.steps if s.device == "cpu"]
    assert cpu.count("QuantizeLinear") == 1 and cpu.count("DequantizeLinear") == 1
    assert [s.op for s in compiled.image.steps if s.device == "accel"] == [
        "QConv",
        "QConv",
        "QDense",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = np.concatenate([_ort(model, {"x": x})[0] for x in images])
    ours = []
    for x in images:
        got = next(iter(compiled.run(x, "fsim").outputs.values()))
        np.testing.assert_array_equal(got, compiled.reference(x)[0])
        ours.append(got)
    ours = np.concatenate(ours)
    assert np.all(ours.argmax(1) == theirs.argmax(1))
    assert np.linalg.norm(ours - theirs) / np.linalg.norm(theirs) < 0.05


def test_a_pair_between_a_convolution_and_its_batch_norm_lets_it_fold():
    """onnxruntime quantizes an unfused model with a pair between each convolution and its
    batch norm: the pairs go before batch norm is folded, so the compiled model holds no
    BatchNormalization and its convolutions run on the accelerator."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("conv_qdq_bn")
    x = b.input("x", (1, 16, 6, 6))
    w = b.param("w", (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32))
    conv = b.add1(Op.CONV, [x, w], ConvAttrs(pads=(1, 1, 1, 1)), name="conv")
    q = QuantAttrs(0.02)
    rounded = b.add1(Op.DEQUANTIZE, [b.add1(Op.QUANTIZE, [conv], q, name="q")], q, name="dq")
    stats = [
        b.param(name, value.astype(np.float32))
        for name, value in (
            ("gamma", rng.uniform(0.5, 1.5, 16)),
            ("beta", rng.normal(size=16)),
            ("mean", rng.normal(size=16)),
            ("var", rng.uniform(0.5, 2, 16)),
        )
    ]
    bn = b.add1(Op.BATCH_NORM, [rounded, *stats], BatchNormAttrs(), name="bn")
    graph = b.build([b.add1(Op.RELU, [bn], name="relu")])
    samples = [[rng.standard_normal((1, 16, 6, 6)).astype(np.float32)] for _ in range(2)]
    with pytest.warns(QuantizationWarning, match="1 QuantizeLinear/DequantizeLinear pair on"):
        compiled = compile_model(graph, calibration=samples)
    assert [(s.op, s.device) for s in compiled.image.steps if s.op == "QConv"] == [
        ("QConv", "accel")
    ]
    assert not any(s.op == "BatchNormalization" for s in compiled.image.steps)


def test_a_pair_after_a_relu_or_its_average_clips_nothing_more():
    """A pair saturating at zero over a value that is never negative (a ReLU's output, its
    average pool, a pair's output over either) becomes its input: no clip is added."""
    b = GraphBuilder("relu_pairs")
    x = b.input("x", (1, 4, 3, 3))
    q = QuantAttrs(0.1, -128, "int8")
    r = b.add1(Op.RELU, [x], name="relu")
    a = b.add1(Op.DEQUANTIZE, [b.add1(Op.QUANTIZE, [r], q, name="q1")], q, name="dq1")
    g = b.add1(Op.GLOBAL_AVERAGE_POOL, [a], name="gap")
    y = b.add1(Op.DEQUANTIZE, [b.add1(Op.QUANTIZE, [g], q, name="q2")], q, name="dq2")
    graph = b.build([y])
    assert [n.op for n in strip_fake_quant(graph).nodes] == [
        Op.RELU,
        Op.GLOBAL_AVERAGE_POOL,
        Op.IDENTITY,
    ]
