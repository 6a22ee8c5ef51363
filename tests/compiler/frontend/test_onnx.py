"""The ONNX frontend and the float kernels against onnxruntime: every supported operator alone,
under several attribute variants and opsets, imported with ``from_onnx`` and run with
``run_graph``; random convolution and pooling geometries; and the typed errors for what is
not supported or not a model.

Tolerances: ``rtol=atol=1e-5`` for elementwise and data-movement operators, ``1e-4`` for the
reductions (convolution, Gemm, MatMul, pooling, normalisation), whose float32 sums are ordered
differently from onnxruntime's.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import GraphError, UnsupportedOperator
from compiler.frontend import from_onnx
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Graph, Op
from compiler.graph.passes import fold_batch_norm, fold_constants

OPSET = 17
EXACT = {"rtol": 1e-5, "atol": 1e-5}
SUMS = {"rtol": 1e-4, "atol": 1e-4}
FEW = settings(max_examples=25, deadline=None)

_ONNX_TYPES = {
    "float32": TensorProto.FLOAT,
    "int8": TensorProto.INT8,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "bool": TensorProto.BOOL,
}


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _model(
    nodes: list[onnx.NodeProto],
    feeds: dict[str, np.ndarray],
    params: dict[str, np.ndarray] | None = None,
    *,
    outputs: tuple[str, ...] = ("y",),
    opset: int = OPSET,
) -> onnx.ModelProto:
    """A model of ``nodes`` with inputs typed after ``feeds``, initializers ``params`` and the
    outputs' types filled in by ONNX's shape inference."""
    inputs = [
        helper.make_tensor_value_info(name, _ONNX_TYPES[str(a.dtype)], a.shape)
        for name, a in feeds.items()
    ]
    graph = helper.make_graph(
        nodes,
        "test",
        inputs,
        [helper.make_value_info(name, onnx.TypeProto()) for name in outputs],
        [numpy_helper.from_array(a, name) for name, a in (params or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def _op(
    op_type: str,
    feeds: dict[str, np.ndarray],
    params: dict[str, np.ndarray] | None = None,
    *,
    inputs: list[str] | None = None,
    opset: int = OPSET,
    **attrs,
) -> onnx.ModelProto:
    """A model of one node ``op_type`` reading ``inputs`` (default: the feeds, then the params)
    and writing ``y``."""
    names = inputs if inputs is not None else [*feeds, *(params or {})]
    node = helper.make_node(op_type, names, ["y"], name="the_node", **attrs)
    return _model([node], feeds, params, opset=opset)


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    # (before opset 22, ONNX's shape inference keeps ceil-mode pooling windows that start in the
    # padding, which the operator's definition and onnxruntime drop: silence that warning)
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tol: dict = EXACT) -> Graph:
    """Import ``model``, run it and compare every output with onnxruntime's."""
    graph = from_onnx(model)
    ours = run_graph(graph, feeds)
    for got, want in zip(ours, _ort(model, feeds), strict=True):
        assert got.dtype == want.dtype
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **tol)
    return graph


# ----------------------------------------------------------------------------- convolution
@pytest.mark.parametrize(
    ("c", "m", "k", "attrs"),
    [
        (3, 4, 3, {}),
        (3, 4, 3, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
        (3, 4, 3, {"pads": [0, 1, 2, 0], "strides": [1, 2]}),
        (3, 4, 3, {"dilations": [2, 1], "pads": [2, 1, 2, 1]}),
        (4, 6, 3, {"group": 2, "pads": [1, 1, 1, 1]}),
        (4, 4, 3, {"group": 4, "pads": [1, 1, 1, 1]}),  # depthwise
        (4, 8, 3, {"group": 4, "strides": [2, 2]}),  # depthwise, channel multiplier 2
        (3, 5, 1, {}),
        (3, 4, 3, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        (3, 4, 4, {"auto_pad": "SAME_LOWER"}),
        (3, 4, 3, {"auto_pad": "VALID", "kernel_shape": [3, 3]}),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_conv(c, m, k, attrs, bias):
    groups = attrs.get("group", 1)
    params = {"w": _rand(m, c // groups, k, k, seed=1)}
    if bias:
        params["b"] = _rand(m, seed=2)
    _check(_op("Conv", {"x": _rand(2, c, 9, 8)}, params, **attrs), {"x": _rand(2, c, 9, 8)}, SUMS)


def test_conv_with_weights_as_an_input():
    feeds = {"x": _rand(1, 2, 6, 6), "w": _rand(3, 2, 3, 3, seed=1)}
    _check(_op("Conv", feeds), feeds, SUMS)


@st.composite
def _conv_geometries(draw: st.DrawFn) -> dict:
    """Grouped convolutions over inputs the padded, dilated kernel fits in."""
    groups = draw(st.sampled_from([1, 2, 3]))
    kernel = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    dilations = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    extents = [d * (k - 1) + 1 for d, k in zip(dilations, kernel, strict=True)]
    return {
        "n": draw(st.integers(1, 2)),
        "c": groups * draw(st.integers(1, 3)),
        "m": groups * draw(st.integers(1, 3)),
        "hw": [draw(st.integers(max(1, extents[a] - pads[a] - pads[a + 2]), 10)) for a in (0, 1)],
        "kernel": kernel,
        "attrs": {
            "group": groups,
            "strides": [draw(st.integers(1, 3)), draw(st.integers(1, 3))],
            "dilations": dilations,
            "pads": pads,
        },
    }


@FEW
@given(g=_conv_geometries(), seed=st.integers(0, 2**16))
def test_conv_random_geometries(g, seed):
    x = _rand(g["n"], g["c"], *g["hw"], seed=seed)
    params = {
        "w": _rand(g["m"], g["c"] // g["attrs"]["group"], *g["kernel"], seed=seed + 1),
        "b": _rand(g["m"], seed=seed + 2),
    }
    _check(_op("Conv", {"x": x}, params, **g["attrs"]), {"x": x}, SUMS)


# ----------------------------------------------------------------------------- dense algebra
@pytest.mark.parametrize(
    ("a", "b", "c", "attrs"),
    [
        ((3, 4), (4, 5), (5,), {}),
        ((4, 3), (4, 5), (3, 5), {"transA": 1, "alpha": 0.5, "beta": 2.0}),
        ((3, 4), (5, 4), (1, 5), {"transB": 1}),
        ((4, 3), (5, 4), (3, 1), {"transA": 1, "transB": 1, "beta": -1.0}),
        ((3, 4), (4, 5), None, {"alpha": 3.0}),
    ],
)
def test_gemm(a, b, c, attrs):
    params = {"b": _rand(*b, seed=1)} | ({"c": _rand(*c, seed=2)} if c else {})
    _check(_op("Gemm", {"a": _rand(*a)}, params, **attrs), {"a": _rand(*a)}, SUMS)


@pytest.mark.parametrize(
    ("a", "b"),
    [((3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,))],
)
def test_matmul(a, b):
    feeds = {"a": _rand(*a), "b": _rand(*b, seed=1)}
    _check(_op("MatMul", feeds), feeds, SUMS)


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize(
    ("a", "b"), [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1))]
)
def test_binary(op_type, a, b):
    feeds = {"a": _rand(*a), "b": _rand(*b, seed=1)}
    _check(_op(op_type, feeds), feeds)


def test_binary_with_a_constant_operand():
    feeds = {"a": _rand(2, 3)}
    _check(_op("Sub", feeds, {"b": _rand(3, seed=1)}, inputs=["b", "a"]), feeds)


# ----------------------------------------------------------------------------- activations
@pytest.mark.parametrize(
    ("op_type", "attrs"),
    [("Relu", {}), ("Sigmoid", {}), ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.2})],
)
def test_activation(op_type, attrs):
    x = _rand(2, 3, 4) * 40  # large magnitudes: the sigmoid's tails must not overflow
    _check(_op(op_type, {"x": x}, **attrs), {"x": x})


@pytest.mark.parametrize(
    ("opset", "attrs", "params", "inputs"),
    [
        (6, {"min": -0.5, "max": 1.0}, {}, ["x"]),
        (6, {"min": 0.0}, {}, ["x"]),
        (6, {}, {}, ["x"]),
        (13, {}, {"lo": np.float32(-0.5), "hi": np.float32(0.25)}, ["x", "lo", "hi"]),
        (13, {}, {"hi": np.float32(0.25)}, ["x", "", "hi"]),
        (11, {}, {"lo": np.float32(0.0)}, ["x", "lo"]),
        (13, {}, {}, ["x"]),
    ],
)
def test_clip(opset, attrs, params, inputs):
    feeds = {"x": _rand(3, 4)}
    params = {k: np.array(v) for k, v in params.items()}
    _check(_op("Clip", feeds, params, inputs=inputs, opset=opset, **attrs), feeds)


def test_softmax_of_every_axis_in_opset_13():
    feeds = {"x": _rand(2, 3, 4) * 10}
    for axis in (0, 1, -1):
        _check(_op("Softmax", feeds, axis=axis), feeds)


@pytest.mark.parametrize(("shape", "attrs"), [((2, 5), {}), ((2, 3, 4), {"axis": -1})])
def test_softmax_before_opset_13_on_the_last_axis(shape, attrs):
    feeds = {"x": _rand(*shape)}
    _check(_op("Softmax", feeds, opset=11, **attrs), feeds)


# ----------------------------------------------------------------------------- pooling
POOLS = [
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [1, 0, 2, 1], "ceil_mode": 1},
    {"kernel_shape": [2, 3], "strides": [1, 2]},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"},
]


@pytest.mark.parametrize("attrs", POOLS)
def test_max_pool(attrs):
    feeds = {"x": _rand(2, 3, 9, 8)}
    _check(_op("MaxPool", feeds, **attrs), feeds)


@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(attrs, count_include_pad):
    feeds = {"x": _rand(2, 3, 9, 8)}
    _check(_op("AveragePool", feeds, count_include_pad=count_include_pad, **attrs), feeds, SUMS)


@st.composite
def _pool_geometries(draw: st.DrawFn) -> dict:
    """Windows, strides and pads (each smaller than the window) over inputs the padded window
    fits in."""
    kernel = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    pads = [draw(st.integers(0, kernel[a % 2] - 1)) for a in range(4)]
    return {
        "hw": [draw(st.integers(max(1, kernel[a] - pads[a] - pads[a + 2]), 9)) for a in (0, 1)],
        "kernel_shape": kernel,
        "pads": pads,
        "strides": [draw(st.integers(1, 3)), draw(st.integers(1, 3))],
        "ceil_mode": int(draw(st.booleans())),
    }


@FEW
@given(
    op_type=st.sampled_from(["MaxPool", "AveragePool"]),
    geometry=_pool_geometries(),
    count_include_pad=st.booleans(),
)
def test_pool_random_geometries(op_type, geometry, count_include_pad):
    attrs = dict(geometry)
    feeds = {"x": _rand(1, 2, *attrs.pop("hw"))}
    if op_type == "AveragePool":
        attrs["count_include_pad"] = int(count_include_pad)
    _check(_op(op_type, feeds, **attrs), feeds, SUMS)


def test_global_average_pool():
    feeds = {"x": _rand(2, 3, 5, 7)}
    _check(_op("GlobalAveragePool", feeds), feeds, SUMS)


@pytest.mark.parametrize("opset", [9, 15])
def test_batch_normalization(opset):
    c = 4
    rng = np.random.default_rng(3)
    params = {
        "scale": _rand(c, seed=1),
        "bias": _rand(c, seed=2),
        "mean": _rand(c, seed=3),
        "var": rng.uniform(0.5, 2.0, c).astype(np.float32),
    }
    feeds = {"x": _rand(2, c, 3, 5)}
    _check(_op("BatchNormalization", feeds, params, opset=opset, epsilon=1e-3), feeds, SUMS)


# ----------------------------------------------------------------------------- data movement
@pytest.mark.parametrize("axis", [0, 1, 2, 4, -1, -4])
def test_flatten(axis):
    feeds = {"x": _rand(2, 3, 4, 5)}
    graph = _check(_op("Flatten", feeds, axis=axis), feeds)
    assert graph.nodes[0].attrs.axis >= 0


@pytest.mark.parametrize(
    ("shape", "opset", "allowzero"),
    [
        ([-1], OPSET, 0),
        ([0, -1], OPSET, 0),
        ([2, 0, 2, -1], OPSET, 0),
        ([6, 4, 1], 14, 1),
        ([4, 6], 5, 0),
    ],
)
def test_reshape(shape, opset, allowzero):
    attrs = {"allowzero": allowzero} if allowzero else {}
    feeds = {"x": _rand(2, 3, 4)}
    params = {"shape": np.array(shape, np.int64)}
    graph = _check(_op("Reshape", feeds, params, opset=opset, **attrs), feeds)
    assert -1 not in graph.nodes[0].attrs.shape and 0 not in graph.nodes[0].attrs.shape


@pytest.mark.parametrize("perm", [None, [0, 2, 3, 1], [3, 1, 0, 2]])
def test_transpose(perm):
    feeds = {"x": _rand(2, 3, 4, 5)}
    _check(_op("Transpose", feeds, **({"perm": perm} if perm else {})), feeds)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_concat(axis):
    feeds = {"a": _rand(2, 3, 4), "b": _rand(2, 3, 4, seed=1)}
    params = {"c": _rand(2, 3, 4, seed=2)}
    _check(_op("Concat", feeds, params, inputs=["a", "c", "b"], axis=axis), feeds)


@pytest.mark.parametrize(
    ("opset", "mode", "pads", "value", "axes"),
    [
        (2, "constant", [0, 1, 2, 0, 2, 1], 1.5, None),
        (2, "edge", [1, 1, 0, 0, 2, 1], None, None),
        (11, "constant", [0, 1, 2, 0, 2, 1], -2.0, None),
        (11, "constant", [0, 0, 0, 0, 0, 0], None, None),
        (13, "reflect", [1, 2, 0, 1, 1, 2], None, None),
        (13, "edge", [0, 2, 1, 0, 0, 3], None, None),
        (13, "constant", [0, -1, 1, 0, 2, -2], 0.5, None),
        (18, "constant", [1, 2, 3, 0], 3.0, [1, -1]),
    ],
)
def test_pad(opset, mode, pads, value, axes):
    feeds = {"x": _rand(2, 3, 4)}
    if opset < 11:
        attrs = {"pads": pads} | ({"value": value} if value is not None else {})
        model = _op("Pad", feeds, opset=opset, mode=mode, **attrs)
    else:
        params = {"pads": np.array(pads, np.int64)}
        inputs = ["x", "pads"]
        if value is not None or axes is not None:
            inputs.append("value" if value is not None else "")
            if value is not None:
                params["value"] = np.array(value, np.float32)
        if axes is not None:
            inputs.append("axes")
            params["axes"] = np.array(axes, np.int64)
        model = _op("Pad", feeds, params, inputs=inputs, opset=opset, mode=mode)
    _check(model, feeds)


# ----------------------------------------------------------------------------- aliases, constants
def test_identity_and_dropout_become_aliases():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Identity", ["r"], ["i"]),
        helper.make_node("Dropout", ["i"], ["d"], ratio=0.3),
        helper.make_node("Sigmoid", ["d"], ["y"]),
    ]
    feeds = {"x": _rand(2, 3)}
    graph = _check(_model(nodes, feeds, opset=10), feeds)
    assert [n.op for n in graph.nodes] == [Op.RELU, Op.SIGMOID]
    assert graph.nodes[1].inputs == ("r",)


def test_an_identity_writing_a_graph_output_keeps_its_name():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Identity", ["r"], ["y"]),
        helper.make_node("Dropout", ["x"], ["z"]),
    ]
    feeds = {"x": _rand(2, 3)}
    graph = _check(_model(nodes, feeds, outputs=("y", "z", "r")), feeds)
    assert graph.outputs == ("y", "z", "r")


def test_constant_nodes_become_parameters():
    nodes = [
        helper.make_node(
            "Constant", [], ["c"], value=numpy_helper.from_array(_rand(3, seed=1), "c")
        ),
        helper.make_node("Constant", [], ["s"], value_ints=[3, 2]),
        helper.make_node("Constant", [], ["f"], value_float=2.5),
        helper.make_node("Add", ["x", "c"], ["a"]),
        helper.make_node("Mul", ["a", "f"], ["m"]),
        helper.make_node("Reshape", ["m", "s"], ["y"]),
    ]
    feeds = {"x": _rand(2, 3)}
    graph = _check(_model(nodes, feeds), feeds)
    assert set(graph.params) == {"c", "f"}
    assert [n.op for n in graph.nodes] == [Op.ADD, Op.MUL, Op.RESHAPE]


def test_names_are_kept_and_unnamed_nodes_named_after_their_operator():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="first"),
        helper.make_node("Sigmoid", ["r"], ["y"]),
    ]
    graph = from_onnx(_model(nodes, {"x": _rand(2, 3)}))
    assert [n.name for n in graph.nodes] == ["first", "sigmoid"]
    assert graph.inputs == ("x",) and graph.outputs == ("y",)


# ----------------------------------------------------------------------------- quantization
@pytest.mark.parametrize("opset", [13, 21])
def test_quantize_and_dequantize(opset):
    # halves (round to even), values past the int8 range (saturation), a non-zero zero point
    x = np.array([[-300.0, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, 250.0]], np.float32) * 0.1
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s2", "z2"], ["y"]),
    ]
    params = {
        "s": np.array(0.1, np.float32),
        "z": np.array(3, np.int8),
        "s2": np.array(0.05, np.float32),
        "z2": np.array(-2, np.int8),
    }
    _check(_model(nodes, {"x": x}, params, outputs=("q", "y"), opset=opset), {"x": x})


def test_dequantize_without_a_zero_point():
    feeds = {"q": np.arange(-128, 128, dtype=np.int8).reshape(16, 16)}
    _check(_op("DequantizeLinear", feeds, {"s": np.array(0.25, np.float32)}), feeds)


# ----------------------------------------------------------------------------- model sources
def test_a_path_and_bytes_give_the_graph_of_the_model(tmp_path):
    model = _op("Relu", {"x": _rand(2, 3)})
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    for source in (path, str(path), model.SerializeToString()):
        graph = from_onnx(source)
        assert [n.op for n in graph.nodes] == [Op.RELU]


def test_input_shapes_fix_a_dynamic_dimension():
    model = _op("Relu", {"x": _rand(2, 3)})
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    graph = from_onnx(model, input_shapes={"x": (5, 3)})
    assert graph.types["x"].shape == (5, 3)
    assert graph.types["y"].shape == (5, 3)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_mean_over_h_and_w_is_a_global_average_pool(keepdims, opset):
    """How torch.onnx.export (dynamo) writes adaptive average pooling to 1x1."""
    feeds = {"x": _rand(2, 3, 5, 7)}
    axes = np.array([-2, -1], np.int64)
    if opset >= 18:
        model = _op("ReduceMean", feeds, {"axes": axes}, opset=opset, keepdims=keepdims)
    else:
        model = _op("ReduceMean", feeds, opset=opset, axes=[-2, -1], keepdims=keepdims)
    graph = _check(model, feeds, SUMS)
    assert graph.nodes[0].op is Op.GLOBAL_AVERAGE_POOL


def _unsupported(model: onnx.ModelProto, *words: str) -> UnsupportedOperator:
    with pytest.raises(UnsupportedOperator) as info:
        from_onnx(model)
    for word in words:
        assert word in str(info.value)
    return info.value


def test_an_unsupported_operator_names_its_type_node_and_opset():
    w = _rand(4, 12, 5, seed=1)
    r = _rand(4, 12, 3, seed=2)
    model = _op("LSTM", {"x": _rand(2, 1, 5)}, {"w": w, "r": r}, hidden_size=3)
    err = _unsupported(model, "LSTM", "'the_node'", "opset 17", "not supported")
    assert (err.op, err.node, err.opset) == ("LSTM", "the_node", 17)


def test_an_unnamed_unsupported_node_is_named_after_its_operator():
    model = _op("Sin", {"x": _rand(2, 3)}, opset=13)
    model.graph.node[0].name = ""
    _unsupported(model, "Sin is not supported", "'sin'", "opset 13")


@pytest.mark.parametrize(
    ("op_type", "feeds", "params", "inputs", "opset", "attrs", "words"),
    [
        ("Conv", {"x": _rand(1, 2, 8)}, {"w": _rand(3, 2, 3)}, None, OPSET, {}, ["2-D"]),
        ("Clip", {"x": _rand(2, 3), "lo": np.array(0, np.float32)}, {}, None, 13, {}, ["min"]),
        (
            "Reshape",
            {"x": _rand(2, 3), "s": np.array([6], np.int64)},
            {},
            None,
            OPSET,
            {},
            ["constant"],
        ),
        ("Softmax", {"x": _rand(2, 3, 4)}, {}, None, 11, {"axis": 1}, ["opset 13"]),
        (
            "Gemm",
            {"a": _rand(2, 3), "b": _rand(3, 2)},
            {"c": _rand(2)},
            None,
            6,
            {"broadcast": 1},
            ["'broadcast'"],
        ),
        (
            "QuantizeLinear",
            {"x": _rand(2, 3)},
            {"s": np.full(3, 0.1, np.float32), "z": np.zeros(3, np.int8)},
            None,
            13,
            {"axis": 1},
            ["per-axis"],
        ),
        (
            "QuantizeLinear",
            {"x": _rand(2, 3)},
            {"s": np.array(0.1, np.float32), "z": np.array(0, np.int32)},
            None,
            13,
            {},
            ["not int32"],
        ),
    ],
)
def test_unsupported_attribute_values(op_type, feeds, params, inputs, opset, attrs, words):
    model = _op(op_type, feeds, params, inputs=inputs, opset=opset, **attrs)
    _unsupported(model, op_type, "'the_node'", f"opset {opset}", *words)


def test_a_dynamic_input_dimension_asks_for_a_fixed_shape():
    model = _op("Relu", {"x": _rand(2, 3)})
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(GraphError, match="fixed input shape") as info:
        from_onnx(model)
    assert info.value.tensor == "x" and info.value.axis == "0" and "'batch'" in str(info.value)


@pytest.mark.parametrize(
    ("shapes", "words"),
    [({"x": (2, 4)}, "input_shapes gives [2, 4]"), ({"w": (1,)}, "'w', which is not an input")],
)
def test_input_shapes_that_do_not_fit(shapes, words):
    with pytest.raises(GraphError, match=words.replace("[", r"\[").replace("]", r"\]")):
        from_onnx(_op("Relu", {"x": _rand(2, 3)}), input_shapes=shapes)


@pytest.mark.parametrize(
    "data",
    [
        lambda model: model[: len(model) // 2],
        lambda model: model[:-3],
        lambda _model: np.random.default_rng(5).bytes(200),
        lambda _model: b"",
    ],
    ids=["half", "truncated", "random", "empty"],
)
def test_bytes_that_are_not_a_model(data):
    model = _op("Conv", {"x": _rand(1, 2, 5, 5)}, {"w": _rand(3, 2, 3, 3)}).SerializeToString()
    with pytest.raises(GraphError, match="not (a valid ONNX|an ONNX) model"):
        from_onnx(data(model))


def test_files_that_are_not_models(tmp_path):
    text = tmp_path / "notes.onnx"
    text.write_text("not a model at all\n" * 10)
    with pytest.raises(GraphError, match="not an ONNX model|not a valid ONNX model"):
        from_onnx(text)
    with pytest.raises(GraphError, match="cannot read"):
        from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(GraphError, match="needs an onnx.ModelProto"):
        from_onnx(42)


def test_shapes_that_do_not_fit_an_operator_name_the_node():
    # (built by hand: ONNX's shape inference would refuse the model)
    inputs = [
        helper.make_tensor_value_info(v, TensorProto.FLOAT, (2, 3 + k)) for k, v in enumerate("ab")
    ]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 3))
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add1")
    model = helper.make_model(helper.make_graph([node], "bad", inputs, [output]))
    with pytest.raises(GraphError, match="do not broadcast") as info:
        from_onnx(model)
    assert info.value.node == "add1" and info.value.op == "Add"


@pytest.mark.parametrize(
    ("feed", "words"),
    [(_rand(2, 4), r"expects float32\[2, 3\]"), (np.zeros((2, 3), np.float64), "float64")],
)
def test_run_graph_names_an_input_of_the_wrong_shape_or_dtype(feed, words):
    graph = from_onnx(_op("Relu", {"x": _rand(2, 3)}))
    with pytest.raises(GraphError, match=words) as info:
        run_graph(graph, {"x": feed})
    assert info.value.tensor == "x"


def test_dequantize_int32_values():
    feeds = {"q": np.arange(-50000, 50000, 1000, dtype=np.int32)}
    params = {"s": np.array(0.001, np.float32), "z": np.array(7, np.int32)}
    _check(_op("DequantizeLinear", feeds, params), feeds)


def test_a_small_network_before_and_after_folding():
    c = 4
    rng = np.random.default_rng(7)
    params = {
        "w": _rand(c, 3, 3, 3, seed=1),
        "scale": _rand(c, seed=2),
        "beta": _rand(c, seed=3),
        "mean": _rand(c, seed=4),
        "var": rng.uniform(0.5, 2.0, c).astype(np.float32),
        "fc": _rand(5, c, seed=5),
        "fc_b": _rand(5, seed=6),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv", "scale", "beta", "mean", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["relu"]),
        helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["pool"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"]),
    ]
    feeds = {"x": _rand(2, 3, 8, 8)}
    model = _model(nodes, feeds, params)
    graph = _check(model, feeds, SUMS)
    folded = fold_constants(fold_batch_norm(graph))
    assert Op.BATCH_NORM not in {n.op for n in folded.nodes}
    np.testing.assert_allclose(run_graph(folded, feeds)[0], _ort(model, feeds)[0], **SUMS)


def test_initializers_stored_outside_the_model(tmp_path):
    model = _op("Add", {"x": _rand(4, 4)}, {"w": _rand(4, 4, seed=1)})
    path = tmp_path / "external.onnx"
    onnx.save(model, path, save_as_external_data=True, size_threshold=0, location="w.bin")
    assert [n.op for n in from_onnx(path).nodes] == [Op.ADD]
    with pytest.raises(GraphError, match="'w' is stored outside the model"):
        from_onnx(path.read_bytes())


def test_every_unsupported_operator_is_named_at_once():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="fine"),
        helper.make_node("Sin", ["a"], ["b"], name="first"),
        helper.make_node("Cos", ["b"], ["c"], name="second"),
        helper.make_node("Sin", ["c"], ["y"], name="third"),
    ]
    model = _model(nodes, {"x": _rand(2, 3)})
    err = _unsupported(model, "Sin is not supported", "Cos ('second')", "Sin ('third')")
    assert (err.op, err.node) == ("Sin", "first")


def test_an_operator_of_another_domain_is_unsupported():
    node = helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft", name="act")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    _unsupported(helper.make_model(graph, opset_imports=opsets), "com.microsoft.Gelu", "'act'")


def test_an_input_of_an_unsupported_dtype_is_named():
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [2, 3])],
    )
    with pytest.raises(GraphError, match="input 'x' has dtype complex64"):
        from_onnx(helper.make_model(graph))


def test_malformed_window_attributes_name_the_node():
    feeds = {"x": _rand(1, 2, 5, 5)}
    model = _op("Conv", feeds, {"w": _rand(3, 2, 3, 3)}, strides=[1, 1])
    model.graph.node[0].attribute[0].ints.append(1)
    with pytest.raises(GraphError, match=r"needs 2 integers >= 1 as strides") as info:
        from_onnx(model)
    assert info.value.node == "the_node"


def test_training_only_features_are_unsupported():
    stats = {k: np.ones(3, np.float32) for k in ("scale", "b", "mean", "var")}
    node = helper.make_node(
        "BatchNormalization", ["x", *stats], ["y", "m", "v"], name="bn", training_mode=1
    )
    model = _model([node], {"x": _rand(2, 3, 4, 4)}, stats, opset=15)
    _unsupported(model, "BatchNormalization", "'bn'", "inference-mode")
    params = {"ratio": np.array(0.5, np.float32), "training": np.array(True)}
    _unsupported(_op("Dropout", {"x": _rand(2, 3)}, params, opset=13), "Dropout", "training_mode")
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p", "idx"], kernel_shape=[2, 2], name="pool"),
        helper.make_node("Identity", ["idx"], ["y"]),
    ]
    _unsupported(_model(nodes, {"x": _rand(1, 1, 4, 4)}), "'idx'", "'pool'")


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ([-1, -1], "more than one -1"),
        ([5, -1], r"cannot reshape \[2, 3, 4\]"),
        ([2, 3, 4, 0], "copies a missing input dim"),
        ([4, 5], "cannot reshape 24 elements"),
    ],
)
def test_reshapes_that_do_not_fit_name_the_node(shape, words):
    model = _op("Reshape", {"x": _rand(2, 3, 4)}, {"s": np.array([24], np.int64)})
    # (ONNX's shape inference refuses these shapes: they are put in after it)
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(shape, np.int64), "s"))
    with pytest.raises(GraphError, match=words) as info:
        from_onnx(model)
    assert info.value.node == "the_node" and info.value.op == "Reshape"


def test_dequantize_needs_an_integer_input_and_a_matching_zero_point():
    params = {"s": np.array(0.5, np.float32), "z": np.array(0, np.int32)}
    feeds = {"q": np.zeros((2, 3), np.int8)}
    with pytest.raises(GraphError, match="the zero point is int32, the quantized values int8"):
        from_onnx(_op("DequantizeLinear", feeds, params))
