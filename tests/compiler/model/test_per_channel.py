"""The ``per-channel`` quantization scheme through the whole compiler: per-channel weight
scales requantised by a fixed-point multiply and shift (``QConv``/``QDense`` with a multiplier
and shifts), run on the accelerator as MUL and SHR of accumulator rows, bit-exact with
``compiler.reference`` on both simulators, closer to the float model than VTA's power-of-two
scheme, and refused where the ALU has no multiplier."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from compiler.errors import CompileError
from compiler.frontend import import_model
from compiler.graph import Op
from compiler.graph.interpret import run_graph
from compiler.graph.passes import calibrate, fold_batch_norm, fold_constants, quantize
from compiler.model import compile_model
from compiler.zoo.digits import DIGITS_MODELS, load_digits_split, train_digits
from isa import AccelConfig, AluInsn, AluOp
from tests.compiler.model.graphs import residual_cnn, samples
from tests.compiler.model.zoo_models import CNNS, random_like


@pytest.fixture(scope="module")
def compiled():
    graph = residual_cnn(3)
    return graph, compile_model(graph, calibration=samples(graph, 4), scheme="per-channel")


def test_convolutions_and_dense_layers_take_a_multiplier_and_shifts(compiled):
    _, model = compiled
    weighted = [n for n in model.graph.nodes if n.op in (Op.QCONV, Op.QDENSE)]
    assert [n.name for n in weighted] == ["conv1", "conv2", "fc"]
    for node in weighted:
        multiplier, shifts = (model.graph.params[v] for v in node.inputs[3:])
        assert multiplier.dtype == np.int8 and shifts.dtype == np.int8
        assert np.all(multiplier >= 1) and np.all((shifts >= 0) & (shifts <= 31))
        assert len(set(multiplier.tolist())) > 1  # a scale per channel, not one per layer


def test_the_accelerator_multiplies_and_shifts_by_rows(compiled):
    _, model = compiled
    for step in (s for s in model.image.steps if s.op in ("QConv", "QDense")):
        vector_ops = {
            i.alu_opcode
            for i in step.program.instructions
            if isinstance(i, AluInsn) and not i.use_imm
        }
        assert {AluOp.MUL, AluOp.SHR, AluOp.ADD} <= vector_ops, step.node


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_a_per_channel_model_is_bit_exact_with_the_reference(compiled, device):
    graph, model = compiled
    for x in samples(graph, 2, seed=9):
        want = model.reference(x)[0]
        got = next(iter(model.run(x, device).outputs.values()))
        np.testing.assert_array_equal(got, want)


def _relative_error(graph, qgraph, inputs) -> float:
    want = np.concatenate([run_graph(graph, x)[0].ravel() for x in inputs])
    got = np.concatenate([run_graph(qgraph, x)[0].ravel() for x in inputs])
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def test_per_channel_scales_are_closer_to_the_float_model():
    """A seeded MobileNetV2 (batch norm folded into the weights: its channels differ in
    scale): the per-channel scheme's int8 weights are closer to the float weights in every
    layer, and its logits closer to float than the power-of-two scheme's."""
    module, example = CNNS["mobilenet_v2"]()
    graph = fold_batch_norm(fold_constants(import_model(module, random_like(example, 0))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calibration = calibrate(graph, [random_like(example, s) for s in range(8)])
    tests = [random_like(example, 100 + s) for s in range(8)]
    quantized = {s: quantize(graph, calibration, scheme=s) for s in ("pow2", "per-channel")}
    errors = {s: _relative_error(graph, q, tests) for s, q in quantized.items()}
    assert errors["per-channel"] < 0.8 * errors["pow2"], errors
    weights = {s: _weight_errors(graph, q) for s, q in quantized.items()}
    assert weights["pow2"].keys() == weights["per-channel"].keys() and len(weights["pow2"]) > 10
    assert all(weights["per-channel"][n] < weights["pow2"][n] for n in weights["pow2"]), weights


def _weight_errors(graph, qgraph) -> dict[str, float]:
    """Per convolution, the relative error of its int8 weights (dequantized by the scales
    the requantisation implies) against the float weights."""
    out = {}
    for node in qgraph.nodes:
        if node.op is not Op.QCONV:
            continue
        w = graph.params[graph.node(node.name).inputs[1]].astype(np.float64)
        q = qgraph.params[node.inputs[1]].astype(np.float64)
        rows = q.reshape(q.shape[0], -1)
        # the least-squares scale per channel: what any requantisation of these integers is
        target = w.reshape(w.shape[0], -1)
        scale = np.sum(rows * target, axis=1) / np.maximum(np.sum(rows * rows, axis=1), 1)
        out[node.name] = float(
            np.linalg.norm(rows * scale[:, None] - target) / np.linalg.norm(target)
        )
    return out


def test_the_per_channel_scheme_needs_the_alu_multiplier():
    graph = residual_cnn(0)
    cfg = AccelConfig.preset("default").replace(alu_mul=False)
    with pytest.raises(CompileError, match=r"lacks \(alu_mul=False\): use 'pow2'"):
        compile_model(graph, cfg, calibration=samples(graph, 1), scheme="per-channel")


def test_an_unknown_scheme_is_refused_before_anything_runs():
    with pytest.raises(CompileError, match="unknown quantization scheme 'fixed'"):
        compile_model(
            residual_cnn(0), calibration=[np.zeros((1, 3, 16, 16), np.float32)], scheme="fixed"
        )


def test_a_per_channel_mobilenet_runs_bit_exact_depthwise_pieces_included():
    """Depthwise convolutions split into channel blocks carry their slices of the multiplier
    and shifts (``compiler.model.grouped``): the small MobileNetV2 on fsim equals its
    reference."""
    module, example = CNNS["mobilenet_v2"]()
    calibration = [random_like(example, s) for s in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = compile_model(module, calibration=calibration, scheme="per-channel")
    pieces = [n for n in model.graph.nodes if n.op is Op.QCONV and ".part" in n.name]
    assert pieces and all(len(n.inputs) == 5 for n in pieces)
    x = random_like(example, 50)
    got = next(iter(model.run(x, "fsim").outputs.values()))
    np.testing.assert_array_equal(got, model.reference(x)[0])


@pytest.fixture(scope="module", params=sorted(DIGITS_MODELS))
def trained(request):
    """A digits classifier trained here, its folded float graph, calibration over 64 training
    images, and the held-out images and labels."""
    cls, epochs = DIGITS_MODELS[request.param]
    module, x_test, y_test = train_digits(cls, 0, epochs)
    graph = fold_batch_norm(fold_constants(import_model(module, [x_test[:1]])))
    training = load_digits_split(0).x_train[:64, None]
    return graph, calibrate(graph, [[x] for x in training]), x_test, y_test


@pytest.mark.parametrize("scheme", ["pow2", "per-channel"])
def test_trained_classifiers_keep_their_accuracy_in_int8(trained, scheme):
    """The CNN, the MobileNet-style network with squeeze-excite and the transformer, trained
    on the digits: int8 loses at most one point of held-out accuracy (450 images) against
    float in either scheme (measured: at most 0.44; the margin is for training's float
    arithmetic on other CPUs), and agrees with float's top-1 on 98% of the images."""
    graph, calibration, x_test, y_test = trained
    qgraph = quantize(graph, calibration, scheme=scheme)
    float_top1 = np.array([run_graph(graph, [x[None]])[0].argmax() for x in x_test])
    int8_top1 = np.array([run_graph(qgraph, [x[None]])[0].argmax() for x in x_test])
    assert np.mean(int8_top1 == y_test) >= np.mean(float_top1 == y_test) - 0.01
    assert np.mean(int8_top1 == float_top1) >= 0.98
    assert any(n.op in (Op.QCONV, Op.QDENSE) for n in qgraph.nodes)
