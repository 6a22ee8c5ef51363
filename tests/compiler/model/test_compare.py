"""``compare_model`` and ``vtaforge compare``: a small ONNX CNN (built with ``onnx.helper``)
compiled to int8 and compared with its float original layer by layer. Every figure is checked
against numpy computed here: the float values by ``run_graph``, the int8 values by the quantized
graph's oracle (bit-exact with the accelerator) dequantized by scales worked out from the
quantized graph's own shifts and the float weights, and the final output against onnxruntime
and ``runtime.load_model(...).run``. The slots' ``value``/``scale`` records in the file are
checked by the loader like every other field."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import onnx
import pytest

from compiler import Comparison, compare_model
from compiler.errors import GraphError
from compiler.frontend import from_onnx
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Op
from compiler.model import compile_model
from compiler.model.compare import LayerError
from runtime.cli import main
from runtime.model import ModelFormatError, ModelImage, load_model
from tests.runtime.vtaf_files import tiny_model

helper, numpy_helper = onnx.helper, onnx.numpy_helper

#: The values of the float model that the compiled one materialises, in order (the Conv before
#: a Relu and the Add before one are fused away; the Flatten is a view of the pooled buffer).
LAYERS = ["r1", "p1", "c2", "r2", "g", "f", "logits", "y"]
PNG = b"\x89PNG\r\n\x1a\n"


def _cnn(seed: int = 0, *, input_name: str = "x", prefix: str = "") -> bytes:
    """conv3x3 + relu, maxpool 2x2, conv3x3, add the skip, relu, global average pool,
    flatten, gemm, softmax on ``[1, 3, 16, 16]``, seeded; ``prefix`` renames every value."""
    rng = np.random.default_rng(seed)

    def weights(*shape: int, scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    v = {k: prefix + k for k in ("c1", "r1", "p1", "c2", "s", "r2", "g", "f", "logits", "y")}
    params = {
        "w1": weights(16, 3, 3, 3, scale=0.3),
        "b1": weights(16, scale=0.1),
        "w2": weights(16, 16, 3, 3, scale=0.12),
        "b2": weights(16, scale=0.1),
        "wfc": weights(10, 16, scale=0.25),
        "bfc": weights(10, scale=0.1),
    }
    same = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    nodes = [
        helper.make_node("Conv", [input_name, "w1", "b1"], [v["c1"]], "conv1", **same),
        helper.make_node("Relu", [v["c1"]], [v["r1"]], "relu1"),
        helper.make_node(
            "MaxPool", [v["r1"]], [v["p1"]], "pool", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("Conv", [v["p1"], "w2", "b2"], [v["c2"]], "conv2", **same),
        helper.make_node("Add", [v["c2"], v["p1"]], [v["s"]], "add"),
        helper.make_node("Relu", [v["s"]], [v["r2"]], "relu2"),
        helper.make_node("GlobalAveragePool", [v["r2"]], [v["g"]], "gap"),
        helper.make_node("Flatten", [v["g"]], [v["f"]], "flatten"),
        helper.make_node("Gemm", [v["f"], "wfc", "bfc"], [v["logits"]], "fc", transB=1),
        helper.make_node("Softmax", [v["logits"]], [v["y"]], "softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info(input_name, onnx.TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info(v["y"], onnx.TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(a, k) for k, a in params.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """The CNN's ONNX file, its int8 compilation (object and ``.vtaf``), its compilation with
    every node kept in float, and one test input (also as ``x.npy``)."""
    folder = tmp_path_factory.mktemp("compare")
    path = folder / "cnn.onnx"
    path.write_bytes(_cnn())
    rng = np.random.default_rng(1)
    calibration = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(8)]
    compiled = compile_model(path, "default", calibration=calibration, name="cnn")
    compiled.save(folder / "cnn.vtaf")
    every = [node.name for node in from_onnx(path).nodes]
    floating = compile_model(path, "default", calibration=calibration, keep_float=every)
    floating.save(folder / "float.vtaf")
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(folder / "x.npy", x)
    return folder, compiled, x


def _scales(compiled) -> dict[str, float]:
    """The scale of every int8 value of the quantized graph, worked out from its integer
    arithmetic alone: the input's quantization scale, each requantising node's shift and its
    weights' exponent (from the float weights: the largest ``e`` with ``max|w| 2^e <= 127``),
    a QAdd's shifts; pools and the flatten keep their input's."""
    graph, float_graph = compiled.graph, compiled.float_graph
    weights = {
        n.name: float_graph.params[n.inputs[1]]
        for n in float_graph.nodes
        if n.op in (Op.CONV, Op.GEMM)
    }
    e: dict[str, int] = {}
    for node in graph.nodes:
        out = node.outputs[0]
        if node.op is Op.QUANTIZE:
            e[out] = -int(math.log2(node.attrs.scale))
        elif node.op in (Op.QCONV, Op.QDENSE):
            e_w = math.floor(math.log2(127.0 / float(np.abs(weights[node.name]).max())))
            e[out] = e[node.inputs[0]] + e_w - node.attrs.shift
        elif node.op is Op.QADD:
            a, b = (e[v] for v in node.inputs)
            assert max(a, b) - a == node.attrs.a_shift and max(a, b) - b == node.attrs.b_shift
            e[out] = max(a, b) - node.attrs.shift
        elif node.op in (Op.QMAX_POOL, Op.QGLOBAL_AVG_POOL, Op.FLATTEN):
            e[out] = e[node.inputs[0]]
        elif node.op is Op.DEQUANTIZE:  # the one scale the graph states: it must agree
            assert node.attrs.scale == 2.0 ** -e[node.inputs[0]]
    return {name: 2.0**-k for name, k in e.items()}


def _rel(ref: np.ndarray, got: np.ndarray) -> float:
    ref = ref.astype(np.float64)
    return float(np.linalg.norm(ref - got.astype(np.float64)) / np.linalg.norm(ref))


def test_each_layer_is_the_int8_value_dequantized_against_the_float_one(cnn):
    folder, compiled, x = cnn
    comparison = compare_model(folder / "cnn.onnx", folder / "cnn.vtaf", x, native_kernels=False)
    assert [layer.name for layer in comparison.layers] == LAYERS
    assert comparison.model == "cnn" and comparison.device == "fsim"
    floats = run_graph(compiled.float_graph, [x], keep=True)
    ints = run_graph(compiled.graph, [x], keep=True)  # bit-exact with every accelerator run
    scales = _scales(compiled)
    for layer in comparison.layers[:-1]:  # the int8 ones
        assert layer.scale == scales[layer.name], layer.name
        expected = _rel(floats[layer.name], ints[layer.name] * scales[layer.name])
        assert layer.rel_error == pytest.approx(expected, rel=1e-9), layer.name
        assert math.isfinite(layer.sqnr_db) and layer.sqnr_db > 20, layer
        assert layer.sqnr_db == pytest.approx(-20 * math.log10(layer.rel_error), rel=1e-9)
    ops = {layer.name: (layer.op, layer.step_op, layer.device) for layer in comparison.layers}
    assert ops["r1"] == ("Relu", "QConv", "accel") and ops["r2"] == ("Relu", "QAdd", "accel")
    assert ops["f"] == ("Flatten", "view", "accel") and ops["y"] == ("Softmax", "Softmax", "cpu")
    worst = max(comparison.layers, key=lambda layer: layer.rel_error)
    assert comparison.worst == worst
    assert worst.sqnr_db == min(layer.sqnr_db for layer in comparison.layers)
    table = comparison.table()
    assert f"worst: {worst.name} (" in table.splitlines()[-1]
    assert all(f"\n{name} " in table for name in LAYERS)


def test_the_final_output_is_the_runtimes_against_onnxruntime(cnn):
    import onnxruntime

    folder, compiled, x = cnn
    comparison = compare_model(folder / "cnn.onnx", folder / "cnn.vtaf", {"x": x})
    final = comparison.layers[-1]
    assert final.name == "y" and final.scale is None
    run = load_model(folder / "cnn.vtaf").run(x, device="fsim").output
    session = onnxruntime.InferenceSession(str(folder / "cnn.onnx"))
    (expected,) = session.run(None, {"x": x})
    assert final.rel_error == pytest.approx(_rel(expected, run), rel=1e-4)
    floats = run_graph(compiled.float_graph, [x])[0]
    assert final.rel_error == pytest.approx(_rel(floats, run), rel=1e-9)  # exactly the run's
    assert 0 < final.rel_error < 0.1


def test_a_model_run_in_float_compares_at_infinite_sqnr(cnn):
    folder, _, x = cnn
    comparison = compare_model(folder / "cnn.onnx", folder / "float.vtaf", x, native_kernels=False)
    names = [layer.name for layer in comparison.layers]
    assert names == ["c1", "r1", "p1", "c2", "s", "r2", "g", "f", "logits", "y"]
    for layer in comparison.layers:
        assert layer.sqnr_db == math.inf and layer.rel_error == 0 and layer.scale is None
        assert layer.device == "cpu"
    assert " inf " in comparison.table()
    record = json.loads(comparison.to_json(), parse_constant=pytest.fail)  # no Infinity token
    assert record["worst"]["sqnr_db"] == "inf"
    assert Comparison.from_json(comparison.to_json()) == comparison


def test_the_plots_bars_draw_exact_layers_tallest_and_silent_ones_empty():
    def layer(db: float) -> LayerError:
        return LayerError("v", "Conv", db, 0.1, None, "s", "QConv", "accel")

    sqnrs = (10.0, math.inf, -math.inf, 20.0)
    comparison = Comparison("m", "fsim", tuple(layer(db) for db in sqnrs))
    assert comparison.bar_heights() == pytest.approx([10.0, 23.0, 0.0, 20.0])
    silent = Comparison("m", "fsim", (layer(-3.0), layer(math.inf)))
    assert silent.bar_heights() == [-3.0, 10.0]


def test_json_round_trips_and_the_plot_is_a_png(cnn, tmp_path):
    folder, compiled, x = cnn
    comparison = compare_model(folder / "cnn.onnx", compiled, [x], device="sim")
    record = json.loads(comparison.to_json(), parse_constant=pytest.fail)
    assert [layer["name"] for layer in record["layers"]] == LAYERS
    assert record["worst"]["name"] == comparison.worst.name
    assert set(record["layers"][0]) == {f.name for f in dataclasses.fields(comparison.worst)}
    assert Comparison.from_json(comparison.to_json()) == comparison
    # fsim and sim run the same programs: the same bytes, the same figures
    on_fsim = compare_model(folder / "cnn.onnx", compiled, [x], native_kernels=False)
    assert on_fsim.layers == comparison.layers
    plot = tmp_path / "sqnr.png"
    comparison.plot(plot)
    assert plot.read_bytes()[:8] == PNG
    with pytest.raises(GraphError, match="not a comparison's JSON"):
        Comparison.from_json('{"model": "m", "device": "fsim", "layers": [{"name": 1}]}')
    with pytest.raises(GraphError, match="needs at least one layer"):
        Comparison.from_json('{"model": "m", "device": "fsim", "layers": []}')


def test_models_that_do_not_match_are_typed_errors(cnn, tmp_path):
    folder, compiled, x = cnn
    vtaf = folder / "cnn.vtaf"
    other = tmp_path / "other.onnx"
    other.write_bytes(_cnn(seed=3, prefix="other_"))  # the same input, no value in common
    with pytest.raises(GraphError, match="no value of the float model .* not the same model"):
        compare_model(other, vtaf, x)
    renamed = tmp_path / "renamed.onnx"
    renamed.write_bytes(_cnn(input_name="image"))
    with pytest.raises(GraphError, match=r"inputs \(image\) are not the compiled model's \(x\)"):
        compare_model(renamed, vtaf, x)
    with pytest.raises(GraphError, match=r"expects float32\[1, 3, 16, 16\], got float32\[1, 3, 8"):
        compare_model(folder / "cnn.onnx", vtaf, x[..., :8, :8])
    with pytest.raises(GraphError, match="takes 1 inputs"):
        compare_model(folder / "cnn.onnx", vtaf, [x, x])
    with pytest.raises(GraphError, match="compare runs on fsim or sim"):
        compare_model(folder / "cnn.onnx", vtaf, x, device="rtl")
    bare = {
        n: dataclasses.replace(s, value=None, scale=None) for n, s in compiled.image.tensors.items()
    }
    old = dataclasses.replace(compiled.image, tensors=bare)
    with pytest.raises(GraphError, match="records no float value .* compile it again"):
        compare_model(folder / "cnn.onnx", old, x)


def test_the_file_records_each_slots_float_value_and_the_loader_checks_it(cnn):
    _, compiled, _ = cnn
    image = ModelImage.from_bytes(compiled.image.to_bytes())
    assert image.tensors == compiled.image.tensors
    recorded = {n: (s.value, s.scale) for n, s in image.tensors.items() if s.value is not None}
    assert recorded["r1:packed"] == ("r1", _scales(compiled)["r1"])
    assert recorded["y"] == ("y", None) and recorded["x_int8"][0] == "x"
    assert all(image.tensors[n].dtype == "int8" for n, (_, s) in recorded.items() if s is not None)
    parts = tiny_model().parts()
    slot = next(t for t in parts.manifest["tensors"] if "scale" in t)
    for edit, words in (
        ({"scale": 0}, "is not positive and finite"),
        ({"scale": "1/8"}, "scale must be a number"),
        ({"value": ""}, "value is an empty name"),
        ({"value": 3}, "value must be a string"),
        ({"value": None}, "value must be a string"),
    ):
        edited = parts.copy()
        next(t for t in edited.manifest["tensors"] if t["name"] == slot["name"]).update(edit)
        with pytest.raises(ModelFormatError, match=f"tensor '{slot['name']}'.*{words}"):
            ModelImage.from_bytes(edited.to_bytes(resign=True))
    edited = parts.copy()
    floating = next(t for t in edited.manifest["tensors"] if t["dtype"] == "float32")
    floating.update(value="x", scale=0.5)
    with pytest.raises(ModelFormatError, match="a scale belongs to an int8 slot"):
        ModelImage.from_bytes(edited.to_bytes(resign=True))
    edited = parts.copy()
    for record in edited.manifest["tensors"]:  # a file from before the records still loads
        record.pop("value", None)
        record.pop("scale", None)
    assert all(
        s.value is None
        for s in ModelImage.from_bytes(edited.to_bytes(resign=True)).tensors.values()
    )


def test_vtaforge_compare_prints_the_table_the_json_and_the_plot(cnn, capsys, tmp_path):
    folder, _, x = cnn
    argv = ["compare", str(folder / "cnn.onnx"), str(folder / "cnn.vtaf")]
    x_npy = ["--input", str(folder / "x.npy")]
    plot = tmp_path / "sqnr.png"
    assert main([*argv, *x_npy, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "cnn on fsim: 8 layers against the float model"
    assert lines[1].split() == [
        "layer",
        "float",
        "op",
        "compiled",
        "as",
        "scale",
        "SQNR",
        "dB",
        "rel.",
        "error",
    ]
    assert [line.split()[0] for line in lines[2:10]] == LAYERS
    assert lines[10].startswith("worst: ") and lines[11] == f"wrote {plot}"
    assert plot.read_bytes()[:8] == PNG
    assert main([*argv, *x_npy, "--json", "--device", "sim"]) == 0
    comparison = Comparison.from_json(capsys.readouterr().out)
    expected = compare_model(folder / "cnn.onnx", folder / "cnn.vtaf", x, "sim")
    assert comparison == expected and lines[10].startswith(f"worst: {expected.worst.name} (")


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("other model", "no value of the float model"),
        ("wrong shape", "the compiled model: input 'x' expects float32[1, 3, 16, 16]"),
        ("no such file", "missing.vtaf"),
        ("not a png", "--plot"),
    ],
)
def test_vtaforge_compare_errors_are_one_line(cnn, capsys, tmp_path, case, words):
    folder, _, x = cnn
    onnx_path, vtaf, x_npy = folder / "cnn.onnx", folder / "cnn.vtaf", folder / "x.npy"
    extra = []
    if case == "other model":
        onnx_path = tmp_path / "other.onnx"
        onnx_path.write_bytes(_cnn(prefix="other_"))
    elif case == "wrong shape":
        x_npy = tmp_path / "small.npy"
        np.save(x_npy, x[..., :8, :8])
    elif case == "no such file":
        vtaf = tmp_path / "missing.vtaf"
    else:
        extra = ["--plot", str(tmp_path / "sqnr.jpg")]
    assert main(["compare", str(onnx_path), str(vtaf), "--input", str(x_npy), *extra]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("vtaforge compare: error: ") and words in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and not captured.out
