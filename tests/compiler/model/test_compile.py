"""compile_model end to end on graphs built in the test: every accelerator run equals
``compiler.reference`` of the quantized graph, bit for bit, on every level; the saved file runs
without the compiler; the memory plan never lets two live tensors share a byte."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from compiler.accel.env import Env
from compiler.errors import CompileError, GraphError
from compiler.frontend import import_model
from compiler.graph import AxisAttrs, ConvAttrs, Graph, GraphBuilder, Op, PoolAttrs, QConvAttrs
from compiler.graph.interpret import run_graph
from compiler.model import compile_model
from compiler.model.accel_lowering import dense_weights
from compiler.model.grouped import split_grouped
from compiler.model.plan import node_macs
from isa import AccelConfig
from runtime.model import ModelFormatError, ModelInputError, load_model
from runtime.opset import OPERATORS
from tests.compiler.model.graphs import residual_cnn, samples, self_attention, token_mlp
from tests.conformance.runners import rtl_device

DEFAULT = AccelConfig.resolve("default")
TINY = AccelConfig.resolve("tiny")


@pytest.fixture(scope="module")
def compiled():
    graph = residual_cnn(0)
    return compile_model(graph, DEFAULT, calibration=samples(graph, 4))


def _output(run, compiled):
    return run.outputs[compiled.image.outputs[0]]


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_accelerator_runs_equal_the_reference_bit_for_bit(compiled, device):
    x = samples(compiled.float_graph, 2, seed=9)[1]
    run = compiled.run(x, device=device)
    np.testing.assert_array_equal(_output(run, compiled), compiled.reference(x)[0])
    report = run.report
    assert [s.node for s in report.accel_steps] == ["conv1", "pool", "conv2", "add", "gap", "fc"]
    if device == "sim":
        assert report.cycles == sum(s.cycles for s in report.accel_steps) > 0
        conv = report.accel_steps[0]
        assert 0 < conv.utilisation < 1 and conv.dram_bytes > 0
        assert len(run.cycle_stats) == 6
    else:
        assert report.cycles is None


def test_the_quantized_model_stays_close_to_the_float_one(compiled):
    for x in samples(compiled.float_graph, 4, seed=5):
        expected = run_graph(compiled.float_graph, [x])[0]
        got = compiled.reference(x)[0]
        assert np.abs(got - expected).max() < 0.05  # softmax probabilities
        assert got.argmax() == expected.argmax()


def test_every_operator_of_the_quantized_graph_is_where_the_rules_say(compiled):
    report = compiled.partition.report()
    assert "6 nodes on the accelerator, 1 views, 3 on the CPU" in report
    assert {p.node: p.device for p in compiled.partition.placements}["softmax"] == "cpu"
    steps = [(s.op, s.device) for s in compiled.image.steps]
    assert steps[:2] == [("QuantizeLinear", "cpu"), ("Pack", "cpu")]
    assert ("Unpack", "cpu") in steps


def test_the_memory_plan_reuses_bytes_but_never_between_live_tensors(compiled):
    _check_memory_plan(compiled)


def _check_memory_plan(compiled) -> None:
    """No two tensors live at once share a byte, unless one is a view inside the other (a
    reshape's or a concatenation slice's bytes); some bytes are reused."""
    image = compiled.image
    slots = image.tensors
    live: dict[str, list[int]] = {}
    for name in image.inputs:
        live[name] = [-1, -1]
    for index, step in enumerate(image.steps):
        for name in (*step.inputs, *step.outputs):
            live.setdefault(name, [index, index])[1] = index
    for name in image.outputs:
        live[name][1] = len(image.steps)
    params_end = len(image.params)
    names = [n for n in live if slots[n].address >= params_end]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sa, sb = slots[a], slots[b]
            inside = _within(sa, sb) or _within(sb, sa)
            if inside and sa.layout == sb.layout == "packed":
                continue  # a view shares its source's bytes
            meets = not (live[a][1] < live[b][0] or live[b][1] < live[a][0])
            disjoint = sa.address + sa.nbytes <= sb.address or sb.address + sb.nbytes <= sa.address
            assert disjoint or not meets, (a, b)
    total = sum(slots[n].nbytes for n in names)
    arena = max(slots[n].address + slots[n].nbytes for n in names) - params_end
    assert arena < total  # something was reused


def _within(inner, outer) -> bool:
    return outer.address <= inner.address and inner.address + inner.nbytes <= (
        outer.address + outer.nbytes
    )


def test_a_saved_model_runs_without_the_compiler(compiled, tmp_path):
    path = tmp_path / "small.vtaf"
    compiled.save(path)
    x = samples(compiled.float_graph, 1, seed=3)[0]
    np.save(tmp_path / "x.npy", x)
    script = f"""
import sys, numpy as np
from runtime.model import load_model
model = load_model({str(path)!r}, native_kernels=False)  # numpy's, as on a board
run = model.run(np.load({str(tmp_path / "x.npy")!r}), device="sim")
np.save({str(tmp_path / "y.npy")!r}, run.outputs[model.image.outputs[0]])
assert not [m for m in sys.modules if m.split(".")[0] == "compiler"], "compiler was imported"
print(run.report.summary()["cycles"])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), compiled.reference(x)[0])
    assert int(done.stdout) == compiled.run(x).report.cycles


def test_bad_inputs_and_files_are_typed_errors(compiled, tmp_path):
    x = samples(compiled.float_graph, 1)[0]
    with pytest.raises(ModelInputError, match=r"input 'x' expects float32\[1, 3, 16, 16\]"):
        compiled.run(x[:, :, :8], device="fsim")
    with pytest.raises(ModelInputError, match="input 'x' expects float32"):
        compiled.run(x.astype(np.float64), device="fsim")
    with pytest.raises(ModelInputError, match="no input 'y'"):
        compiled.run({"x": x, "y": x}, device="fsim")
    data = compiled.image.to_bytes()
    for bad in (data[: len(data) // 2], b"not a model", b""):
        path = tmp_path / "bad.vtaf"
        path.write_bytes(bad)
        with pytest.raises(ModelFormatError, match="bad.vtaf"):
            load_model(path)
    with pytest.raises(ModelFormatError, match="missing.vtaf"):
        load_model(tmp_path / "missing.vtaf")
    with pytest.raises(GraphError, match="at least one calibration sample"):
        compile_model(compiled.float_graph, DEFAULT, calibration=[])
    with pytest.raises(GraphError, match="keep_float names no node 'nope'"):
        compile_model(compiled.float_graph, DEFAULT, calibration=[x], keep_float=["nope"])


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"cpu_only": True}, "cpu_only needs a list of node names, got bool True"),
        ({"cpu_only": "conv1"}, "got the string 'conv1'"),
        ({"keep_float": True}, "keep_float needs a list of node names"),
        ({"keep_float": [1]}, "keep_float needs node names (strings), got 1"),
        ({"cpu_only": ["conv"]}, "cpu_only names no node 'conv'"),
        ({"cpu_only": ["relu1"]}, "fused into its producer"),
        ({"keep_float": ["conv_1"]}, "keep_float names no node 'conv_1' (did you mean 'conv1'?)"),
    ],
)
def test_options_naming_nodes_are_checked(options, words):
    graph = residual_cnn(0, channels=4, size=8)
    with pytest.raises(CompileError, match=re.escape(words)):
        compile_model(graph, TINY, calibration=samples(graph, 1), **options)


def test_one_array_given_as_example_inputs_is_a_typed_error():
    with pytest.raises(GraphError, match="one per model input"):
        import_model(residual_cnn(0), np.zeros((1, 3, 16, 16), np.float32))


def test_nodes_kept_off_the_accelerator_still_match_the_reference():
    graph = residual_cnn(1, channels=8)
    model = compile_model(
        graph, DEFAULT, calibration=samples(graph, 2), keep_float=["conv2"], cpu_only=["pool"]
    )
    devices = {p.node: p.device for p in model.partition.placements}
    assert devices["pool"] == "cpu" and devices["conv2"] == "cpu" and devices["conv1"] == "accel"
    assert model.graph.node("conv2").op.value == "Conv"  # float
    x = samples(graph, 1, seed=4)[0]
    run = model.run(x, device="fsim")
    np.testing.assert_array_equal(_output(run, model), model.reference(x)[0])


def test_a_model_that_cannot_use_the_accelerator_runs_on_the_cpu():
    graph = residual_cnn(2, channels=4, batch=1)
    model = compile_model(graph, TINY, calibration=samples(graph, 2), cpu_only=["fc"])
    x = samples(graph, 1, seed=6)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


@pytest.mark.parametrize(("size", "gap"), [(6, "cpu"), (8, "accel")], ids=["3x3", "4x4"])
def test_without_the_alu_multiplier_an_average_that_multiplies_runs_on_the_cpu(size, gap):
    """Tiny without MUL: the global average of 3x3 pixels (after the pooling) multiplies, so it
    runs on the CPU with the reason; that of 4x4 pixels only shifts, so it stays on the
    accelerator. Every other operator stays there too, and the model is bit-exact."""
    nomul = TINY.replace(alu_mul=False)
    graph = residual_cnn(4, channels=8, size=size, in_channels=4)
    model = compile_model(graph, nomul, calibration=samples(graph, 2))
    placement = model.partition.placement("gap")
    assert (placement.op, placement.device) == ("QGlobalAvgPool", gap)
    if gap == "cpu":
        assert placement.reason == (
            "averaging 3x3 pixels multiplies by 57 (then shifts right by 9), but this "
            "configuration has no ALU multiplier (alu_mul=False)"
        )
    devices = {p.node: p.device for p in model.partition.placements}
    assert [devices[n] for n in ("conv1", "pool", "conv2", "add", "fc")] == ["accel"] * 5
    x = samples(graph, 1, seed=7)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


def test_a_node_whose_template_does_not_fit_the_buffers_runs_on_the_cpu_with_the_reason():
    """Tiny's accumulator holds 256 rows; the global average of 2 channel blocks of 12x12
    pixels needs 290, so partition (which lowers each template for the configuration) keeps it
    on the CPU instead of failing in code generation; the rest stays on the accelerator."""
    graph = residual_cnn(5, channels=8, size=12, in_channels=4, pool=False)
    model = compile_model(graph, TINY, calibration=samples(graph, 2))
    placement = model.partition.placement("gap")
    assert (placement.op, placement.device) == ("QGlobalAvgPool", "cpu")
    assert "needs 290 accumulator rows, the buffer has 256" in placement.reason
    devices = {p.node: p.device for p in model.partition.placements}
    assert [devices[n] for n in ("conv1", "conv2", "add", "fc")] == ["accel"] * 4
    x = samples(graph, 1, seed=3)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


def test_a_linear_layer_of_tokens_may_write_the_graph_output():
    """A bias-free Linear of 3-D tokens (a MatMul whose node and output share a name, as
    frontends name them) writing the graph output, as a language model's head does."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("head")
    x = b.input("x", (1, 8, 16))
    w = b.param("w", rng.standard_normal((16, 24)).astype(np.float32) / 4)
    graph = b.build([b.add1(Op.MATMUL, [x, w], name="logits")])
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    x = samples(graph, 1, seed=4)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


def test_linear_layers_of_token_sequences_run_on_the_gemm_core():
    """MatMul by constant weights of a 3-D activation plus its bias Add (as frontends write a
    Linear layer) is one QDense over the flattened rows, the ReLU fused into it, on the
    accelerator; the model is bit-exact and stays close to the float graph."""
    graph = token_mlp(0)
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 4))
    devices = {p.node: (p.op, p.device) for p in model.partition.placements}
    assert devices["fc1.matmul"] == ("QDense", "accel") == devices["fc2.matmul"]
    assert "fc1" not in devices and "relu" not in devices  # folded, fused
    ops = [step.op for step in model.image.steps]
    first = ops.index("QDense")
    assert ops[first + 1] == "QDense"  # the rows stay flat and packed between the layers
    x = samples(graph, 1, seed=2)[0]
    got = _output(model.run(x, "fsim"), model)
    np.testing.assert_array_equal(got, model.reference(x)[0])
    expected = run_graph(graph, [x])[0]
    assert np.abs(got - expected).max() < 0.1 * np.abs(expected).max()


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_attention_matmuls_run_on_the_gemm_core(device):
    """Both products of two activations (``Q @ K^T``, ``P @ V``, batched over heads) are
    QBatchMatMul nodes on the accelerator, their right operands packed into weight blocks at
    run time; the whole block is bit-exact with the reference and close to the float graph."""
    graph = self_attention(0)
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 4))
    devices = {p.node: (p.op, p.device) for p in model.partition.placements}
    assert devices["scores"] == ("QBatchMatMul", "accel") == devices["context"]
    assert sum(p.device == "accel" for p in model.partition.placements) == 6
    assert [s.op for s in model.image.steps].count("PackWeights") == 2
    # simplified: the three Linear layers read one flattened copy of the input, and no
    # reshape reads a reshape
    assert len(model.graph.consumers("x_int8")) == 1
    for node in model.graph.nodes:
        producer = model.graph.producer(node.inputs[0])
        if node.op is Op.RESHAPE and producer is not None:
            assert producer.op is not Op.RESHAPE, node
    x = samples(graph, 1, seed=2)[0]
    got = _output(model.run(x, device), model)
    np.testing.assert_array_equal(got, model.reference(x)[0])
    expected = run_graph(graph, [x])[0]
    assert np.abs(got - expected).max() < 0.1 * np.abs(expected).max()


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    tokens=st.integers(1, 9),
    heads=st.integers(1, 3),
    head=st.integers(1, 6),
    transposed_keys=st.booleans(),
)
def test_attention_of_any_shape_is_bit_exact_on_the_functional_simulator(
    seed, tokens, heads, head, transposed_keys
):
    """Batched products whose rows, depth and columns are not whole blocks (padded with
    zeros in both packings) at tiny's 4-wide blocks."""
    graph = self_attention(
        seed, tokens=tokens, width=heads * head, heads=heads, transposed_keys=transposed_keys
    )
    model = compile_model(graph, TINY, calibration=samples(graph, 2, seed=seed))
    placed = [p.device for p in model.partition.placements if p.op == "QBatchMatMul"]
    assert placed == ["accel", "accel"]
    x = samples(graph, 1, seed=seed + 1)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


@pytest.mark.parametrize(("after_relu", "ceil"), [(True, True), (False, True), (False, False)])
def test_a_ceil_mode_max_pool_runs_on_the_accelerator_after_a_relu(after_relu, ceil):
    """A ceil-mode pooling whose last windows run past the input: on the accelerator after a
    ReLU (the DMA's zero padding is then exact), on the CPU with the reason otherwise; a
    pooling whose windows stay inside the input runs on the accelerator whatever its input."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("ceil_pool")
    x = b.input("x", (1, 16, 12, 12))
    w = b.param("w", (rng.standard_normal((16, 16, 3, 3)) / 12).astype(np.float32))
    h = b.add1(Op.CONV, [x, w], ConvAttrs(pads=(1, 1, 1, 1)), name="conv")
    if after_relu:
        h = b.add1(Op.RELU, [h], name="relu")
    pool = PoolAttrs((3, 3), (2, 2), ceil_mode=True) if ceil else PoolAttrs((2, 2), (2, 2))
    graph = b.build([b.add1(Op.MAX_POOL, [h], pool, name="pool")])
    assert graph.types["pool"].shape == (1, 16, 6, 6)  # ceil((12 - 3) / 2) + 1, or 12 / 2
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    placement = model.partition.placement("pool")
    if after_relu or not ceil:
        assert placement.device == "accel"
    else:
        assert placement.device == "cpu" and "non-negative input" in placement.reason
    x = samples(graph, 1, seed=6)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


def test_a_dilated_max_pool_stays_in_float_and_the_model_compiles():
    """QMaxPool is 2-D and undilated (the accelerator's); a dilated pooling keeps float."""
    b = GraphBuilder("dilated_pool")
    x = b.input("x", (1, 16, 9, 9))
    w = b.param("w", np.full((16, 16, 1, 1), 0.05, np.float32))
    h = b.add1(Op.RELU, [b.add1(Op.CONV, [x, w], ConvAttrs(), name="conv")], name="relu")
    pool = PoolAttrs((2, 2), (1, 1), dilations=(2, 2))
    graph = b.build([b.add1(Op.MAX_POOL, [h], pool, name="pool")])
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    assert model.partition.placement("pool").op == "MaxPool"
    assert model.partition.placement("conv").device == "accel"
    x = samples(graph, 1, seed=7)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


def test_a_small_model_on_the_rtl_equals_the_reference():
    graph = residual_cnn(3, channels=8, size=8, pool=False)
    model = compile_model(graph, TINY, calibration=samples(graph, 2))
    assert model.partition.count("accel") >= 4
    x = samples(graph, 1, seed=8)[0]
    run = model.run(x, device=rtl_device(TINY, max_cycles=2_000_000))
    np.testing.assert_array_equal(_output(run, model), model.reference(x)[0])
    sim = model.run(x, device="sim")
    assert run.report.cycles > 0 and sim.report.cycles > 0


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    channels=st.sampled_from([4, 16, 24, 32]),
    size=st.integers(3, 12),
    in_channels=st.sampled_from([1, 3, 16]),
    pool=st.booleans(),
)
def test_random_models_are_bit_exact_on_the_functional_simulator(
    seed, channels, size, in_channels, pool
):
    graph = residual_cnn(seed, channels=channels, size=size, in_channels=in_channels, pool=pool)
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2, seed=seed))
    x = samples(graph, 1, seed=seed + 1)[0]
    run = model.run(x, device="fsim")
    np.testing.assert_array_equal(_output(run, model), model.reference(x)[0])


@settings(max_examples=20, deadline=None)
@given(groups=st.integers(1, 4), per_group=st.integers(1, 5), out_per_group=st.integers(1, 3))
def test_dense_weights_compute_the_grouped_convolution(groups, per_group, out_per_group):
    rng = np.random.default_rng(groups * 100 + per_group * 10 + out_per_group)
    x = rng.standard_normal((1, groups * per_group, 5, 5)).astype(np.float32)
    w = rng.standard_normal((groups * out_per_group, per_group, 3, 3)).astype(np.float32)
    conv = OPERATORS["Conv"].kernel
    geometry = dict(strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1))
    grouped = conv(x, w, groups=groups, **geometry)
    dense = conv(x, dense_weights(w, groups), groups=1, **geometry)
    np.testing.assert_allclose(dense, grouped, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("channels", "groups", "placement"),
    [
        (16, 2, "accel"),  # at most 4 groups: dense
        (16, 4, "accel"),
        (16, 8, "accel"),  # over one channel block: dense
        (64, 8, "pieces"),  # groups of 8 channels: split into blocks of 2 groups
        (48, 16, "cpu"),  # groups of 3 channels neither divide nor fill a block of 16
    ],
)
def test_grouped_convolutions_run_densely_on_the_accelerator(channels, groups, placement):
    rng = np.random.default_rng(groups)
    b = GraphBuilder("grouped")
    x = b.input("x", (1, channels, 8, 8))
    shape = (2 * channels, channels // groups, 3, 3)
    w = b.param("w", (rng.standard_normal(shape) * 0.2).astype(np.float32))
    attrs = ConvAttrs(pads=(1, 1, 1, 1), groups=groups)
    y = b.add1(Op.RELU, [b.add1(Op.CONV, [x, w], attrs, name="conv")], name="relu")
    graph = b.build([y])
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    devices = {p.node: p for p in model.partition.placements}
    if placement == "pieces":
        pieces = [p for p in devices.values() if p.op == "QConv"]
        assert len(pieces) == channels // 16 and all(p.device == "accel" for p in pieces)
        assert devices["conv"].device == "view"  # the pieces' Concat
    else:
        assert devices["conv"].device == placement
    if placement == "cpu":
        assert f"groups={groups} over more than one channel block" in devices["conv"].reason
    x = samples(graph, 1, seed=3)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


def _branches(channels: int) -> Graph:
    """Two convolution branches of ``channels`` each, concatenated, then a convolution."""
    rng = np.random.default_rng(channels)
    b = GraphBuilder(f"branches_{channels}")
    x = b.input("x", (1, 8, 8, 8))
    same = ConvAttrs(pads=(1, 1, 1, 1))
    arms = []
    for k in range(2):
        w = b.param(f"w{k}", (rng.standard_normal((channels, 8, 3, 3)) * 0.2).astype(np.float32))
        conv = b.add1(Op.CONV, [x, w], same, name=f"arm{k}")
        arms.append(b.add1(Op.RELU, [conv], name=f"relu{k}"))
    cat = b.add1(Op.CONCAT, arms, AxisAttrs(1), name="cat")
    w = b.param("w_out", (rng.standard_normal((16, 2 * channels, 1, 1)) * 0.2).astype(np.float32))
    return b.build([b.add1(Op.CONV, [cat, w], ConvAttrs(), name="out")])


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_a_concatenation_of_accelerator_outputs_is_a_layout_decision(device):
    """Both branches write their slices of one buffer, which the next convolution reads: no
    CPU step between them, and the run is bit-exact."""
    graph = _branches(16)
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    placement = model.partition.placement("cat")
    assert (placement.op, placement.device) == ("Concat", "view")
    ops = [step.op for step in model.image.steps]
    assert ops == [
        "QuantizeLinear",
        "Pack",
        "QConv",
        "QConv",
        "QConv",
        "Unpack",
        "DequantizeLinear",
    ]
    slots = model.image.tensors
    arm0, arm1 = (slots[f"relu{k}:packed"] for k in range(2))
    assert arm1.address == arm0.address + arm0.nbytes  # consecutive slices
    assert arm0.address == slots["cat:packed"].address
    _check_memory_plan(model)
    x = samples(graph, 1, seed=5)[0]
    run = model.run(x, device)
    np.testing.assert_array_equal(_output(run, model), model.reference(x)[0])


def test_a_concatenation_of_partial_channel_blocks_runs_on_the_cpu_with_the_reason():
    graph = _branches(8)
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    placement = model.partition.placement("cat")
    assert placement.device == "cpu"
    assert "has 8 channels, not whole blocks of 16" in placement.reason
    x = samples(graph, 1, seed=5)[0]
    np.testing.assert_array_equal(_output(model.run(x, "fsim"), model), model.reference(x)[0])


@settings(max_examples=20, deadline=None)
@given(
    in_per_group=st.sampled_from([1, 2, 4, 8, 16, 32]),
    groups=st.integers(5, 40),
    out_per_group=st.sampled_from([1, 2]),
    requantisation=st.sampled_from(["shift", "bias", "per-channel"]),
    seed=st.integers(0, 2**16),
)
def test_split_grouped_computes_the_whole_convolution_bit_for_bit(
    in_per_group, groups, out_per_group, requantisation, seed
):
    """Depthwise (one channel a group) and grouped convolutions of any group width dividing or
    divided by the channel block, requantised by a shift, with a bias, or per channel by a
    multiplier and shifts: the pieces compute the whole convolution, their MACs add up."""
    channels = in_per_group * groups
    assume(channels > 16 and channels <= 160)
    rng = np.random.default_rng(seed)
    b = GraphBuilder("grouped")
    x = b.input("x", (1, channels, 5, 5), "int8")
    shape = (groups * out_per_group, in_per_group, 3, 3)
    inputs = [x, b.param("w", rng.integers(-128, 128, shape, dtype=np.int8))]
    outputs = groups * out_per_group
    if requantisation != "shift":
        inputs.append(b.param("b", rng.integers(-999, 999, outputs, dtype=np.int32)))
    if requantisation == "per-channel":
        inputs.append(b.param("m", rng.integers(1, 128, outputs, dtype=np.int8)))
        inputs.append(b.param("s", rng.integers(0, 16, outputs, dtype=np.int8)))
    attrs = QConvAttrs((1, 1), (1, 1, 1, 1), (1, 1), groups, shift=7, lo=-20, hi=100)
    graph = b.build([b.add1(Op.QCONV, inputs, attrs, name="conv")])
    split = split_grouped(graph, Env(DEFAULT))
    pieces = [n for n in split.nodes if n.op is Op.QCONV]
    assert len(pieces) == -(-channels // max(16, in_per_group))
    data = rng.integers(-128, 128, (1, channels, 5, 5), dtype=np.int8)
    np.testing.assert_array_equal(run_graph(split, [data])[0], run_graph(graph, [data])[0])
    macs = sum(node_macs(split, n) for n in split.nodes)
    assert macs == node_macs(graph, graph.node("conv"))


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_depthwise_convolutions_run_on_the_gemm_core_block_by_block(device):
    """40 channels (two whole blocks and a partial one), a channel multiplier of 2: every
    piece on the accelerator, their slices and concatenation views, the model bit-exact."""
    rng = np.random.default_rng(2)
    b = GraphBuilder("depthwise")
    x = b.input("x", (1, 40, 8, 8))
    w = b.param("w", (rng.standard_normal((80, 1, 3, 3)) * 0.3).astype(np.float32))
    conv = b.add1(Op.CONV, [x, w], ConvAttrs(pads=(1, 1, 1, 1), groups=40), name="dw")
    graph = b.build([b.add1(Op.RELU, [conv], name="relu")])
    model = compile_model(graph, DEFAULT, calibration=samples(graph, 2))
    placements = model.partition.placements
    pieces = [p for p in placements if p.op == "QConv"]
    assert len(pieces) == 3 and all(p.device == "accel" for p in pieces)
    assert {p.op for p in placements if p.device == "view"} == {"Slice", "Concat"}
    x = samples(graph, 1, seed=8)[0]
    np.testing.assert_array_equal(_output(model.run(x, device), model), model.reference(x)[0])
