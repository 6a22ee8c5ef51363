"""``from_onnx(..., constants=...)``: graph inputs bound as parameters at import (as TVM's
``bind_params_by_name``), so that what a converter needs as a constant may be fed as an input;
a refusal for such an input names it (``UnsupportedOperator.needs_constant``); a binding that
names no graph input or disagrees with the input's declaration is a typed GraphError. Outputs
are compared with onnx's reference implementation."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.errors import GraphError, UnsupportedOperator
from compiler.frontend import from_onnx
from compiler.graph.interpret import run_graph


def _reshape_model(shape_dims: list[int | str] = (2,)) -> onnx.ModelProto:
    """``y = Reshape(x, shape)`` with the target shape a graph input (int64)."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "reshape",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, shape_dims),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _computed_axes_model() -> onnx.ModelProto:
    """``y = ReduceSum(x, axes + one)``: the axes computed from a graph input."""
    one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["axes", "one"], ["shifted"]),
            helper.make_node("ReduceSum", ["x", "shifted"], ["y"], keepdims=0),
        ],
        "reduce",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        initializer=[one],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return ReferenceEvaluator(model).run(None, feeds)[0]


_X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_a_shape_fed_as_an_input_is_refused_naming_it_and_the_remedy() -> None:
    with pytest.raises(UnsupportedOperator) as info:
        from_onnx(_reshape_model())
    assert info.value.needs_constant == ("shape",)
    assert "the graph input 'shape'" in str(info.value)
    assert "constants={'shape': array}" in str(info.value)


def test_a_bound_input_is_a_parameter_and_the_rest_stay_inputs() -> None:
    shape = np.array([4, -1], np.int64)
    model = _reshape_model()
    graph = from_onnx(model, constants={"shape": shape})
    assert graph.inputs == ("x",)
    assert graph.types["y"].shape == (4, 6)
    (got,) = run_graph(graph, {"x": _X})
    np.testing.assert_array_equal(got, _reference(model, {"x": _X, "shape": shape}))


def test_a_refusal_names_the_inputs_an_operand_is_computed_from() -> None:
    model = _computed_axes_model()
    with pytest.raises(UnsupportedOperator) as info:
        from_onnx(model)
    assert info.value.needs_constant == ("axes",)
    assert "computed from the graph input 'axes'" in str(info.value)
    axes = np.array([0], np.int64)
    (got,) = run_graph(from_onnx(model, constants={"axes": axes}), {"x": _X})
    np.testing.assert_allclose(got, _reference(model, {"x": _X, "axes": axes}))


def test_a_refusal_for_a_non_constant_that_no_binding_helps_names_none() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Resize", ["x", "", "f"], ["y"]),
        ],
        "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOperator, match=r"needs scales \(input 2\)") as info:
        from_onnx(model)
    assert info.value.needs_constant == ()


def test_a_bound_input_of_a_dynamic_shape_takes_the_arrays() -> None:
    shape = np.array([6, 4], np.int64)
    graph = from_onnx(_reshape_model(["n"]), constants={"shape": shape})
    assert graph.types["y"].shape == (6, 4)


@pytest.mark.parametrize(
    ("constants", "shapes", "words"),
    [
        ({"nope": np.zeros(2, np.int64)}, {}, "constants names 'nope', which is not an input"),
        ({"shape": np.array([4, 6], np.int32)}, {}, "int32 array for a int64 input"),
        ({"shape": np.array([4, 3, 2], np.int64)}, {}, r"shape \[3\] for the input shape \[2\]"),
        ({"shape": [4, 6]}, {}, "needs a numpy array, got list"),
        (
            {"shape": np.array([4, 6], np.int64)},
            {"shape": (3,)},
            r"for the input_shapes shape \[3\]",
        ),
    ],
)
def test_a_binding_that_disagrees_with_the_model_is_a_graph_error(
    constants: dict, shapes: dict, words: str
) -> None:
    with pytest.raises(GraphError, match=words) as info:
        from_onnx(_reshape_model(), input_shapes=shapes, constants=constants)
    if "nope" not in constants:
        assert info.value.tensor == "shape"
