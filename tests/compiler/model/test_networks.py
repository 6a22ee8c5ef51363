"""Whole networks from PyTorch through compile_model: ResNet-18, a CNN trained here on
scikit-learn's digits (a real accuracy), and MobileNet-style depthwise blocks. Every
accelerator run equals compiler.reference of the quantized graph bit for bit on the functional
and the cycle-level simulators; the quantized models stay close to PyTorch's float ones."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.model import compile_model
from compiler.zoo import run_torch
from compiler.zoo.digits import load_digits_split, train_digits_cnn
from compiler.zoo.mobilenet import depthwise_separable, inverted_residual
from compiler.zoo.resnet import resnet18
from isa import AccelConfig

DEFAULT = AccelConfig.resolve("default")


def _images(count: int, shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _check_bit_exact(compiled, x: np.ndarray, devices=("fsim", "sim")) -> dict:
    expected = compiled.reference(x)[0]
    runs = {}
    for device in devices:
        run = compiled.run(x, device=device)
        np.testing.assert_array_equal(run.outputs[compiled.image.outputs[0]], expected)
        runs[device] = run
    return runs


def test_resnet18_runs_on_the_accelerator_bit_exact_and_close_to_pytorch():
    module = resnet18(seed=0)
    compiled = compile_model(module, DEFAULT, calibration=_images(2, (1, 3, 224, 224), 1))
    placements = {p.node: p for p in compiled.partition.placements}
    ops = {}
    for p in placements.values():
        ops.setdefault(p.op, set()).add(p.device)
    # more of the network than VTA ran: the first convolution, pooling, adds and the dense layer
    for op in ("QConv", "QMaxPool", "QAdd", "QGlobalAvgPool", "QDense"):
        assert ops[op] == {"accel"}, op
    assert ops["QuantizeLinear"] == ops["DequantizeLinear"] == {"cpu"}
    x = _images(1, (1, 3, 224, 224), 7)[0]
    runs = _check_bit_exact(compiled, x)
    report = runs["sim"].report
    assert len(report.accel_steps) == 31  # 20 convolutions, 8 adds, 2 poolings, 1 dense
    summary = report.summary()
    assert summary["macs_cpu"] == 0 and summary["macs_accel"] > 1.8e9
    assert 0.7 < summary["gemm_utilisation"] < 1
    got = runs["sim"].outputs[compiled.image.outputs[0]]
    expected = run_torch(module, x)
    assert got.argmax() == expected.argmax()
    assert np.linalg.norm(got - expected) / np.linalg.norm(expected) < 0.15


def test_the_quantized_digits_cnn_keeps_its_accuracy():
    module, x_test, y_test = train_digits_cnn(seed=0)
    split = load_digits_split(seed=0)
    calibration = [split.x_train[k : k + 1] for k in range(0, 320, 10)]
    compiled = compile_model(module, DEFAULT, calibration=calibration)
    float_right = quant_right = 0
    for image, label in zip(x_test, y_test, strict=True):
        x = image[None]
        float_right += int(run_torch(module, x).argmax() == label)
        quant_right += int(compiled.reference(x)[0].argmax() == label)
    float_acc, quant_acc = float_right / len(y_test), quant_right / len(y_test)
    assert float_acc > 0.9
    assert quant_acc >= float_acc - 0.01, (float_acc, quant_acc)
    layers = [p.device for p in compiled.partition.placements if p.op in ("QConv", "QDense")]
    assert layers == ["accel"] * 3
    for image in x_test[:3]:
        _check_bit_exact(compiled, image[None])


@pytest.mark.parametrize("make", [depthwise_separable, inverted_residual])
def test_mobilenet_blocks_run_on_the_accelerator_depthwise_convolutions_included(make):
    module = make(seed=0)
    shape = (1, 16, 16, 16)
    compiled = compile_model(module, DEFAULT, calibration=_images(4, shape, 1))
    convs = [p for p in compiled.partition.placements if p.op == "QConv"]
    depthwise = [p for p in convs if compiled.graph.node(p.node).attrs.groups > 1]
    assert depthwise and all(p.device == "accel" for p in convs)
    x = _images(1, shape, 5)[0]
    runs = _check_bit_exact(compiled, x)
    assert runs["sim"].report.summary()["macs_cpu"] == 0
    got = runs["fsim"].outputs[compiled.image.outputs[0]]
    expected = run_torch(module, x)
    assert np.linalg.norm(got - expected) / np.linalg.norm(expected) < 0.1
