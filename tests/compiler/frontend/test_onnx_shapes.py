"""The ONNX frontend's indexing, shape and reduction operators against onnxruntime: Gather,
Slice, Split, Squeeze, Unsqueeze, Expand, Tile, Shape, Size, Range, ConstantOfShape,
ReduceMean/Sum/Max, ArgMax and Concat of integers, each alone in every spelling its opsets
have (attributes before constant inputs); shape arithmetic folded at import, so that a
``torch.onnx.export``-ed ``view(x.shape[0], -1)`` imports with a constant Reshape; and the
typed errors for indices, bounds and axes that do not fit."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from torch import nn

from compiler.errors import GraphError, UnsupportedOperator
from compiler.frontend import from_onnx
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Graph, Op
from runtime.opset import OperatorError
from tests.compiler.frontend.test_onnx import FEW, SUMS, _check, _model, _op, _rand

I64 = np.int64


def _i64(*values: int) -> np.ndarray:
    return np.array(values, I64)


def _ops(graph: Graph) -> list[Op]:
    return [node.op for node in graph.nodes]


def _ints(*shape: int, dtype=np.int64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-9, 9, shape).astype(dtype)


def _refused(
    op_type: str,
    feeds: dict[str, np.ndarray],
    params: dict[str, np.ndarray] | None = None,
    *,
    outputs: int = 1,
    opset: int = 13,
    **attrs,
) -> onnx.ModelProto:
    """A one-node model that ONNX's shape inference would refuse (so it is not run: the
    outputs are declared as float32 scalars, which the importer does not read)."""
    params = params or {}
    names = ["y"] if outputs == 1 else [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op_type, [*feeds, *params], names, name="the_node", **attrs)
    graph = helper.make_graph(
        [node],
        "refused",
        [
            helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for k, a in feeds.items()
        ],
        [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, []) for k in names],
        [numpy_helper.from_array(a, k) for k, a in params.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


# ----------------------------------------------------------------------------- Gather
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("indices", [_i64(0, -1, 2, 1), _i64(-2), np.array([[1, 0], [2, -3]])])
def test_gather_of_constant_indices(axis, indices):
    feeds = {"x": _rand(3, 4, 3)}
    graph = _check(_op("Gather", feeds, {"i": indices}, axis=axis), feeds)
    assert _ops(graph) == [Op.GATHER]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_gather_of_computed_indices_and_integer_data(dtype):
    feeds = {"x": _ints(5, 3, seed=1), "i": np.array([[4, -5], [0, 2]], dtype)}
    _check(_op("Gather", feeds, axis=0), feeds)


def test_gather_out_of_range_is_an_import_error_for_constant_indices():
    model = _op("Gather", {"x": _rand(3, 4)}, {"i": _i64(0, 4)}, axis=1)
    with pytest.raises(GraphError, match="index 4 is out of range for axis 1 of size 4"):
        from_onnx(model)


def test_gather_out_of_range_is_an_operator_error_at_run_time_for_computed_indices():
    feeds = {"x": _rand(3, 4), "i": _i64(0, -4)}
    graph = from_onnx(_op("Gather", feeds, axis=1))
    run_graph(graph, feeds)
    with pytest.raises(OperatorError, match="index -5 is out of range"):
        run_graph(graph, {"x": feeds["x"], "i": _i64(1, -5)})


# ----------------------------------------------------------------------------- Slice
_EDGE = [2**63 - 1, -(2**63), 2**31 - 1, -(2**31)]
_bound = st.one_of(st.integers(-7, 7), st.sampled_from(_EDGE))


@st.composite
def _slices(draw: st.DrawFn) -> tuple[tuple[int, ...], dict[str, np.ndarray]]:
    """A shape and ONNX Slice inputs for some of its axes (negative ones among them)."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    axes = draw(st.permutations(range(len(shape))))[: draw(st.integers(1, len(shape)))]
    count = len(axes)
    inputs = {
        "starts": _i64(*(draw(_bound) for _ in range(count))),
        "ends": _i64(*(draw(_bound) for _ in range(count))),
        "axes": _i64(*(a - len(shape) if draw(st.booleans()) else a for a in axes)),
        "steps": _i64(*(draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in range(count))),
    }
    return shape, inputs


@FEW
@given(case=_slices())
def test_slice_of_constant_bounds_equals_onnxruntime(case):
    """(onnxruntime reads an end of INT32_MAX or INT64_MAX under a negative step as "through
    index 0"; ONNX's definition, and its reference implementation, clamp it to the last index
    like any other end past the axis: those ends are left out here.)"""
    shape, params = case
    ort_special = (params["steps"] < 0) & np.isin(params["ends"], [2**31 - 1, 2**63 - 1])
    params["ends"][ort_special] = len(shape) + 5
    feeds = {"x": _rand(*shape)}
    graph = _check(_op("Slice", feeds, params, opset=13), feeds)
    assert _ops(graph) == [Op.SLICE]


@pytest.mark.parametrize("end", [2**31 - 1, 2**63 - 1])
def test_slice_backwards_from_an_end_past_the_axis_is_onnxs_clamping(end):
    """An end past the axis is the last index (ONNX's definition and reference
    implementation), also where it is INT_MAX under a negative step (onnxruntime's reading
    differs there)."""
    feeds = {"x": _rand(5, 3)}
    params = {"s": _i64(3), "e": _i64(end), "a": _i64(0), "k": _i64(-1)}
    model = _op("Slice", feeds, params, opset=13)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = run_graph(from_onnx(model), feeds)
    np.testing.assert_array_equal(got, want)
    assert got.shape == (0, 3)


@pytest.mark.parametrize(
    ("params", "opset"),
    [
        ({"starts": _i64(1), "ends": _i64(-1)}, 10),  # no axes, no steps
        ({"starts": _i64(0, 3), "ends": _i64(9, 0), "axes": _i64(2, 0)}, 11),
        ({"starts": _i64(-1), "ends": _i64(-(2**63)), "axes": _i64(1), "steps": _i64(-1)}, 13),
    ],
)
def test_slice_with_optional_inputs_left_out(params, opset):
    feeds = {"x": _ints(4, 5, 6, dtype=np.int32)}
    _check(_op("Slice", feeds, params, opset=opset), feeds)


def test_slice_before_opset_10_takes_attributes():
    feeds = {"x": _rand(4, 5)}
    _check(_op("Slice", feeds, opset=9, starts=[1, -3], ends=[100, -1], axes=[0, 1]), feeds)
    _check(_op("Slice", feeds, opset=9, starts=[1], ends=[3]), feeds)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"starts": _i64(0), "ends": _i64(2), "axes": _i64(0), "steps": _i64(0)}, "step is 0"),
        ({"starts": _i64(0, 0), "ends": _i64(2, 2), "axes": _i64(1, -1)}, "twice"),
        ({"starts": _i64(0), "ends": _i64(2), "axes": _i64(2)}, "out of range"),
        ({"starts": _i64(0, 1), "ends": _i64(2)}, "as many starts, ends"),
    ],
)
def test_slice_bounds_that_do_not_fit_are_graph_errors(params, words):
    model = _refused("Slice", {"x": _rand(3, 4)}, params)
    with pytest.raises(GraphError, match=words):
        from_onnx(model)


def test_slice_of_computed_bounds_is_unsupported():
    feeds = {"x": _rand(3, 4), "s": _i64(1)}
    model = _op("Slice", feeds, {"e": _i64(3)}, opset=13)
    with pytest.raises(UnsupportedOperator, match="the starts"):
        from_onnx(model)


# ----------------------------------------------------------------------------- Split
def _split(feeds: dict, params: dict, outputs: int, opset: int, **attrs) -> onnx.ModelProto:
    names = tuple(f"y{k}" for k in range(outputs))
    node = helper.make_node("Split", [*feeds, *params], list(names), name="the_split", **attrs)
    return _model([node], feeds, params, outputs=names, opset=opset)


@pytest.mark.parametrize(
    ("params", "outputs", "opset", "attrs"),
    [
        ({}, 3, 11, {"axis": 1}),
        ({}, 2, 11, {"axis": -1, "split": [1, 5]}),
        ({"s": _i64(2, 0, 4)}, 3, 13, {"axis": 2}),
        ({}, 2, 13, {}),
        ({}, 3, 18, {"axis": 1, "num_outputs": 3}),
        ({}, 4, 18, {"axis": -1, "num_outputs": 4}),  # 6 in parts of 2, 2, 2 and 0
        ({"s": _i64(3, 3)}, 2, 18, {"axis": 2}),
    ],
)
def test_split_is_one_slice_per_output(params, outputs, opset, attrs):
    feeds = {"x": _rand(4, 6, 6)}
    graph = _check(_split(feeds, params, outputs, opset, **attrs), feeds)
    assert set(_ops(graph)) == {Op.SLICE}


def test_split_of_five_in_three_leaves_the_last_part_smaller():
    feeds = {"x": _rand(2, 5)}
    graph = _check(_split(feeds, {}, 3, 18, axis=1, num_outputs=3), feeds)
    assert [graph.types[o].shape for o in graph.outputs] == [(2, 2), (2, 2), (2, 1)]


@pytest.mark.parametrize(
    ("params", "outputs", "opset", "attrs", "words"),
    [
        ({}, 4, 11, {"axis": 1}, "does not split into 4"),
        ({}, 2, 11, {"axis": 1, "split": [2, 3]}, r"split \[2, 3\]"),
        ({"s": _i64(7, -1)}, 2, 13, {"axis": 1}, r"split \[7, -1\]"),
    ],
)
def test_split_sizes_that_do_not_fit_are_graph_errors(params, outputs, opset, attrs, words):
    model = _refused("Split", {"x": _rand(2, 6)}, params, outputs=outputs, opset=opset, **attrs)
    with pytest.raises(GraphError, match=words):
        from_onnx(model)


# ----------------------------------------------------------------------------- Squeeze, Unsqueeze
@pytest.mark.parametrize(
    ("opset", "axes"), [(11, None), (11, [0, -1]), (13, None), (13, [2]), (13, [-1, 0])]
)
def test_squeeze_is_a_reshape(opset, axes):
    feeds = {"x": _rand(1, 3, 1, 4, 1)}
    if axes is None:
        model = _op("Squeeze", feeds, opset=opset)
    elif opset < 13:
        model = _op("Squeeze", feeds, opset=opset, axes=axes)
    else:
        model = _op("Squeeze", feeds, {"a": _i64(*axes)}, opset=opset)
    assert _ops(_check(model, feeds)) == [Op.RESHAPE]


@pytest.mark.parametrize(("opset", "axes"), [(11, [0]), (11, [-1, 1]), (13, [0, 3]), (13, [-3])])
def test_unsqueeze_is_a_reshape(opset, axes):
    feeds = {"x": _ints(3, 4)}
    if opset < 13:
        model = _op("Unsqueeze", feeds, opset=opset, axes=axes)
    else:
        model = _op("Unsqueeze", feeds, {"a": _i64(*axes)}, opset=opset)
    assert _ops(_check(model, feeds)) == [Op.RESHAPE]


def test_squeezing_an_axis_wider_than_one_is_a_graph_error():
    model = _refused("Squeeze", {"x": _rand(1, 3)}, {"a": _i64(1)})
    with pytest.raises(GraphError, match="cannot squeeze axis 1 of size 3"):
        from_onnx(model)


# ----------------------------------------------------------------------------- Expand, Tile
@pytest.mark.parametrize(
    ("source", "target"),
    [((3, 1), (2, 3, 4)), ((3, 1), (1, 1)), ((2, 1, 4), (3, 1)), ((4,), (2, 1, 1)), ((), (3,))],
)
def test_expand(source, target):
    feeds = {"x": _rand(*source)}
    graph = _check(_op("Expand", feeds, {"s": _i64(*target)}, opset=13), feeds)
    assert _ops(graph) == [Op.EXPAND]


def test_expand_to_a_shape_that_does_not_broadcast_is_a_graph_error():
    model = _refused("Expand", {"x": _rand(3, 2)}, {"s": _i64(3, 4)})
    with pytest.raises(GraphError, match=r"does not expand to \[3, 4\]"):
        from_onnx(model)


@pytest.mark.parametrize("repeats", [(1, 1), (2, 3), (3, 0)])
def test_tile(repeats):
    feeds = {"x": _ints(2, 3, dtype=np.int32)}
    graph = _check(_op("Tile", feeds, {"r": _i64(*repeats)}, opset=13), feeds)
    assert _ops(graph) == [Op.TILE]


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    ("opset", "attrs"),
    [(13, {}), (15, {"start": 1}), (15, {"start": -3, "end": -1}), (15, {"end": 9})],
)
def test_shape_is_a_parameter(opset, attrs):
    feeds = {"x": _rand(2, 3, 4, 5)}
    graph = _check(_op("Shape", feeds, opset=opset, **attrs), feeds)
    assert _ops(graph) == [] and graph.outputs[0] in graph.params


def test_size_is_a_parameter():
    feeds = {"x": _rand(2, 3, 4)}
    assert _ops(_check(_op("Size", feeds, opset=13), feeds)) == []


@pytest.mark.parametrize(
    ("start", "limit", "delta"),
    [
        (np.int64(2), np.int64(11), np.int64(3)),
        (np.int32(10), np.int32(-3), np.int32(-4)),
        (np.int64(5), np.int64(1), np.int64(2)),  # empty
        (np.float32(0.5), np.float32(3.2), np.float32(0.7)),
        (np.float32(1.0), np.float32(-2.0), np.float32(-0.25)),
    ],
)
def test_range_of_constants_is_a_parameter(start, limit, delta):
    params = {"start": np.array(start), "limit": np.array(limit), "delta": np.array(delta)}
    graph = _check(_op("Range", {}, params, opset=13), {})
    assert _ops(graph) == []


def test_range_of_a_zero_delta_is_a_graph_error():
    params = {k: np.array(v, I64) for k, v in (("start", 0), ("limit", 3), ("delta", 0))}
    with pytest.raises(GraphError, match="delta is 0"):
        from_onnx(_refused("Range", {}, params))


@pytest.mark.parametrize(
    "value",
    [
        None,
        helper.make_tensor("v", onnx.TensorProto.INT64, [1], [7]),
        helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [-1.5]),
    ],
)
@pytest.mark.parametrize("shape", [(2, 3), (4,), ()])
def test_constant_of_shape_is_a_parameter(value, shape):
    attrs = {} if value is None else {"value": value}
    model = _op("ConstantOfShape", {}, {"s": np.array(shape, I64)}, opset=13, **attrs)
    assert _ops(_check(model, {})) == []


# ----------------------------------------------------------------------------- reductions
_REDUCE_CASES = [
    ([1], 1, 0),
    ([0, -1], 0, 0),
    ([-2], 1, 0),
    (None, 1, 0),
    (None, 0, 0),
    ([], 1, 1),  # no axes under noop_with_empty_axes: the input itself
]


def _reduce(op_type: str, feeds: dict, axes, keepdims, noop, opset: int, by_input: bool):
    attrs = {"keepdims": keepdims}
    if noop:
        attrs["noop_with_empty_axes"] = noop
    if by_input:
        params = {} if axes is None or not axes else {"axes": _i64(*axes)}
        return _op(op_type, feeds, params, opset=opset, **attrs)
    if axes:
        attrs["axes"] = axes
    return _op(op_type, feeds, opset=opset, **attrs)


#: (operator, opset, axes as an input rather than an attribute)
_REDUCE_SPELLINGS = [
    ("ReduceMean", 13, False),
    ("ReduceMean", 18, True),
    ("ReduceSum", 11, False),
    ("ReduceSum", 13, True),
    ("ReduceMax", 13, False),
    ("ReduceMax", 18, True),
]


@pytest.mark.parametrize(
    ("op_type", "opset", "by_input", "axes", "keepdims", "noop"),
    # (noop_with_empty_axes comes with the axes as an input)
    [(*s, *c) for s in _REDUCE_SPELLINGS for c in _REDUCE_CASES if s[2] or not c[2]],
)
def test_reductions_of_floats(op_type, opset, by_input, axes, keepdims, noop):
    feeds = {"x": _rand(3, 4, 5)}
    _check(_reduce(op_type, feeds, axes, keepdims, noop, opset, by_input), feeds, SUMS)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMax"])
def test_reductions_of_integers(op_type, dtype):
    feeds = {"x": _ints(3, 4, 5, dtype=dtype)}
    _check(_reduce(op_type, feeds, [0, 2], 0, 0, 18, True), feeds)


@pytest.mark.parametrize(
    ("axes", "ops"),
    [([2, 3], [Op.GLOBAL_AVERAGE_POOL]), ([1], [Op.REDUCE_MEAN]), ([1, 2, 3], [Op.REDUCE_MEAN])],
)
def test_reduce_mean_over_h_and_w_only_is_a_global_average_pool(axes, ops):
    feeds = {"x": _rand(2, 3, 4, 5)}
    graph = _check(_op("ReduceMean", feeds, {"a": _i64(*axes)}, opset=18), feeds, SUMS)
    assert _ops(graph) == ops


def test_reduction_axes_that_do_not_fit_are_graph_errors():
    with pytest.raises(GraphError, match="out of range"):
        from_onnx(_refused("ReduceSum", {"x": _rand(3, 4)}, {"a": _i64(2)}))
    with pytest.raises(GraphError, match="twice"):
        from_onnx(_refused("ReduceMax", {"x": _rand(3, 4)}, axes=[1, -1]))
    with pytest.raises(UnsupportedOperator, match="the axes"):
        from_onnx(_refused("ReduceSum", {"x": _rand(3, 4), "a": _i64(1)}))


@pytest.mark.parametrize(
    ("opset", "axis", "keepdims", "last"),
    [(11, 0, 1, None), (11, -1, 0, None), (12, 1, 1, 1), (13, 2, 0, 1), (13, -2, 0, 0)],
)
def test_arg_max(opset, axis, keepdims, last):
    feeds = {"x": np.round(_rand(3, 4, 5) * 2)}  # (ties)
    attrs = {} if last is None else {"select_last_index": last}  # (from opset 12)
    model = _op("ArgMax", feeds, opset=opset, axis=axis, keepdims=keepdims, **attrs)
    assert _ops(_check(model, feeds)) == [Op.ARG_MAX]


# ----------------------------------------------------------------------------- shape arithmetic
def test_concat_of_int64_values():
    feeds = {"a": _ints(2, 3), "b": _ints(2, 1, seed=1)}
    _check(_op("Concat", feeds, axis=1), feeds)


def test_shape_arithmetic_folds_to_a_constant_reshape_target():
    """``x.view(x.shape[0], -1)`` as exported: Shape -> Gather -> Unsqueeze -> Concat."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    params = {"zero": np.array(0, I64), "axes": _i64(0), "minus_one": _i64(-1)}
    feeds = {"x": _rand(2, 3, 4)}
    model = _model(nodes, feeds, params, opset=13)
    # (ONNX's shape inference cannot tell the output's shape: it is declared)
    model.graph.output[0].CopyFrom(
        helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 12])
    )
    graph = _check(model, feeds)
    assert _ops(graph) == [Op.RESHAPE]
    assert graph.nodes[0].attrs.shape == (2, 12)


def test_float_arithmetic_of_constants_is_not_folded_at_import():
    feeds = {"x": _rand(2, 3)}
    nodes = [
        helper.make_node("Gather", ["table", "index"], ["row"], axis=0),
        helper.make_node("Add", ["x", "row"], ["y"]),
    ]
    params = {"table": _rand(4, 3, seed=1), "index": np.array(2, I64)}
    graph = _check(_model(nodes, feeds, params, opset=13), feeds)
    assert _ops(graph) == [Op.GATHER, Op.ADD]


class _ConvHead(nn.Module):
    """A convolution whose output is flattened by the batch size it reads at run time."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.fc(y.view(y.shape[0], -1)) + y.flatten(2).mean(-1).sum(1, keepdim=True)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_torch_export_with_shape_arithmetic_imports_with_constant_shapes(dynamic):
    torch.manual_seed(0)
    module = _ConvHead().eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (torch.randn(2, 3, 8, 8),),
            buffer,
            input_names=["x"],
            dynamo=False,
            dynamic_axes={"x": {0: "batch"}} if dynamic else None,
        )
    model = onnx.load_from_string(buffer.getvalue())
    if dynamic:
        assert "Shape" in [node.op_type for node in model.graph.node]
    x = _rand(3 if dynamic else 2, 3, 8, 8)
    graph = from_onnx(model, input_shapes={"x": x.shape} if dynamic else None)
    assert {Op.RESHAPE, Op.REDUCE_MEAN, Op.REDUCE_SUM} <= set(_ops(graph))
    assert not {Op.GATHER, Op.CONCAT, Op.SLICE} & set(_ops(graph))
    (got,) = run_graph(graph, {"x": x})
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, **SUMS)


def test_shape_arithmetic_that_cannot_run_is_a_graph_error_at_import():
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "index"], ["y"], axis=0),
    ]
    model = _model(nodes, {"x": _rand(2, 3)}, {"index": _i64(1)}, opset=13)
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(_i64(5), "index"))
    with pytest.raises(GraphError, match="index 5 is out of range"):
        from_onnx(model)
