"""The ONNX frontend's arithmetic, math, comparison, logic and composite operators against
onnxruntime: each alone, on floats and on integers where ONNX defines them, broadcast, with
the typed errors for what the operator set refuses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

from compiler.errors import GraphError, UnsupportedOperator
from compiler.frontend import from_onnx
from compiler.graph.ir import Op
from tests.compiler.frontend.test_onnx import EXACT, FEW, _check, _model, _op, _rand

MATH = {"rtol": 1e-6, "atol": 1e-6}


def _ints(*shape: int, dtype=np.int64, seed: int = 0, low: int = -20, high: int = 20):
    return np.random.default_rng(seed).integers(low, high, shape).astype(dtype)


@pytest.mark.parametrize(
    "op_type", ["Tanh", "Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Sigmoid", "Relu"]
)
def test_unary_math_of_floats(op_type):
    x = _rand(3, 4, 5) * 3
    _check(_op(op_type, {"x": x}), {"x": x}, MATH)


@pytest.mark.parametrize("op_type", ["Log", "Sqrt", "Reciprocal"])
def test_unary_math_of_positive_floats(op_type):
    x = np.abs(_rand(3, 4, 5)) + 0.1
    _check(_op(op_type, {"x": x}), {"x": x}, MATH)


@given(seed=st.integers(0, 2**16), scale=st.sampled_from([0.01, 1.0, 4.0]))
@FEW
def test_erf_over_its_range_equals_onnxruntime(seed, scale):
    x = _rand(256, seed=seed) * scale
    _check(_op("Erf", {"x": x}), {"x": x}, {"rtol": 2e-6, "atol": 1e-7})


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
@pytest.mark.parametrize(("a", "b"), [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5))])
def test_binary_arithmetic_of_floats_broadcast(op_type, a, b):
    x, y = _rand(*a, seed=1), _rand(*b, seed=2)
    if op_type == "Pow":
        x = np.abs(x) + 0.5
    _check(_op(op_type, {"a": x, "b": y}), {"a": x, "b": y}, MATH)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Neg", "Abs"])
def test_integer_arithmetic_keeps_the_dtype_and_truncates_division(op_type, dtype):
    x = _ints(4, 5, dtype=dtype, seed=3)
    y = _ints(4, 5, dtype=dtype, seed=4)
    y[y == 0] = 7
    feeds = {"x": x} if op_type in ("Neg", "Abs") else {"a": x, "b": y}
    _check(_op(op_type, feeds), feeds, EXACT)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_mod_follows_the_divisor_or_the_dividend(fmod, dtype):
    if dtype is np.float32 and not fmod:
        return  # onnxruntime refuses fmod=0 on floats; our refusal is tested below
    x = _ints(4, 6, dtype=dtype, seed=5)
    y = _ints(4, 6, dtype=dtype, seed=6)
    y[y == 0] = -3
    _check(_op("Mod", {"a": x, "b": y}, fmod=fmod), {"a": x, "b": y}, EXACT)


def test_variadic_max_and_min_of_three_operands():
    feeds = {"a": _rand(2, 3, seed=1), "b": _rand(3, seed=2), "c": _rand(1, 1, seed=3)}
    for op_type in ("Max", "Min"):
        _check(_op(op_type, feeds), feeds, EXACT)


@pytest.mark.parametrize("op_type", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_comparisons_give_bool(op_type, dtype):
    x, y = _ints(3, 4, dtype=dtype, seed=7, low=-2, high=2), _ints(4, dtype=dtype, seed=8)
    graph = _check(_op(op_type, {"a": x, "b": y}), {"a": x, "b": y}, EXACT)
    assert graph.types[graph.outputs[0]].dtype == "bool"


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logic_of_bools(op_type):
    x, y = _ints(3, 4, low=0, high=2) > 0, _ints(3, 4, seed=9, low=0, high=2) > 0
    _check(_op(op_type, {"a": x, "b": y}), {"a": x, "b": y}, EXACT)
    _check(_op("Not", {"x": x}), {"x": x}, EXACT)


def test_where_broadcasts_its_three_operands():
    c = _ints(3, 1, low=0, high=2) > 0
    feeds = {"c": c, "a": _rand(3, 4), "b": _rand(4, seed=2)}
    _check(_op("Where", feeds), feeds, EXACT)


@pytest.mark.parametrize(
    ("source", "to"),
    [
        (np.float32, TensorProto.INT64),
        (np.float32, TensorProto.INT32),
        (np.int64, TensorProto.FLOAT),
        (np.int64, TensorProto.INT32),
        (np.float32, TensorProto.BOOL),
        (np.bool_, TensorProto.FLOAT),
    ],
)
def test_cast(source, to):
    x = (_rand(3, 4) * 10).astype(source)
    _check(_op("Cast", {"x": x}, to=to), {"x": x}, EXACT)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_decomposed_and_equals_onnxruntime(approximate):
    x = _rand(4, 16) * 3
    graph = _check(_op("Gelu", {"x": x}, opset=20, approximate=approximate), {"x": x}, MATH)
    ops = {node.op for node in graph.nodes}
    assert ops <= {Op.MUL, Op.ADD, Op.ERF, Op.TANH}
    assert (Op.ERF in ops) is (approximate == "none")


@pytest.mark.parametrize(
    ("op_type", "attrs"), [("HardSigmoid", {}), ("HardSigmoid", {"alpha": 0.3}), ("HardSwish", {})]
)
def test_hard_sigmoid_and_hard_swish_are_decomposed(op_type, attrs):
    x = _rand(3, 20) * 5
    graph = _check(_op(op_type, {"x": x}, **attrs), {"x": x}, MATH)
    assert {node.op for node in graph.nodes} <= {Op.MUL, Op.ADD, Op.CLIP}


@pytest.mark.parametrize(("shape", "axis"), [((2, 5, 8), -1), ((2, 3, 4, 5), 2), ((4, 6), 0)])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_normalization(shape, axis, bias):
    x = _rand(*shape) * 2 + 1
    normalised = shape[axis:]
    params = {"scale": _rand(*normalised, seed=3)}
    if bias:
        params["bias"] = _rand(*normalised, seed=4)
    model = _op("LayerNormalization", {"x": x}, params, axis=axis, epsilon=1e-5)
    _check(model, {"x": x}, {"rtol": 1e-5, "atol": 1e-5})


def test_refusals_are_typed_and_name_the_node():
    x = _ints(3, dtype=np.int64)
    with pytest.raises(GraphError, match="the_node.*divides integers by zero"):
        from_onnx(_op("Div", {"x": x}, {"z": np.zeros(3, np.int64)}))
    with pytest.raises(GraphError, match="takes integers modulo zero"):
        from_onnx(_op("Mod", {"x": x}, {"z": np.zeros(3, np.int64)}))
    with pytest.raises(UnsupportedOperator, match="casts to complex64"):
        from_onnx(_op("Cast", {"x": _rand(3)}, to=TensorProto.COMPLEX64))
    with pytest.raises(GraphError, match="needs bool operands"):
        from_onnx(_op("And", {"a": _rand(3), "b": _rand(3, seed=1)}))
    with pytest.raises(GraphError, match="mixes operand dtypes"):
        from_onnx(_op("Add", {"a": _rand(3), "b": x}))


def test_layer_normalization_with_its_mean_and_inverse_deviation_outputs():
    x = _rand(2, 3, 5) * 2 + 1
    params = {"scale": _rand(3, 5, seed=3), "bias": _rand(3, 5, seed=4)}
    node = helper.make_node(
        "LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv"], axis=1, epsilon=1e-3
    )
    model = _model([node], {"x": x}, params, outputs=("y", "mean", "inv"))
    graph = _check(model, {"x": x}, {"rtol": 1e-5, "atol": 1e-5})
    assert [graph.types[v].shape for v in graph.outputs] == [(2, 3, 5), (2, 1, 1), (2, 1, 1)]


def test_an_operator_without_a_converter_on_constants_is_computed_at_import():
    """ScatterND into a constant (as exported Swin builds its mask): onnx's reference
    implementation computes it as the model is read; on a graph input it stays unsupported."""
    data = np.zeros((4, 4), np.float32)
    indices = np.array([[1, 2], [3, 0]], np.int64)
    updates = np.array([5.0, 7.0], np.float32)
    x = _rand(4, 4)
    nodes = [
        helper.make_node("ScatterND", ["data", "indices", "updates"], ["mask"]),
        helper.make_node("Add", ["x", "mask"], ["y"]),
    ]
    params = {"data": data, "indices": indices, "updates": updates}
    graph = _check(_model(nodes, {"x": x}, params), {"x": x}, EXACT)
    assert [node.op for node in graph.nodes] == [Op.ADD]
    with pytest.raises(UnsupportedOperator, match="ScatterND is not supported"):
        from_onnx(_op("ScatterND", {"x": x}, {"indices": indices, "updates": updates}))
