"""TopK and 1-D pooling: ONNX models against onnxruntime, modules against torch.

TopK is one TOP_K node per output read (values, indices), at opsets 1 (``k`` an attribute), 10
and 11 (``k`` a constant input; ``largest`` and ``sorted`` from 11), ties in index order. A 1-D
pool is the 2-D pool of height 1 between RESHAPEs: :func:`compiler.frontend.onnx_pool1d.pool_1d`
is checked on its own, and through ``from_onnx`` (the MaxPool and AveragePool converters hand
it their rank-3 inputs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import helper
from torch import nn

from compiler.errors import UnsupportedOperator
from compiler.frontend import (
    from_onnx,
    from_torch,
    torch_pool1d,  # noqa: F401  (registers converters)
)
from compiler.frontend import onnx as _onnx_frontend  # noqa: F401  (registers converters)
from compiler.frontend.onnx_node import OnnxNode
from compiler.frontend.onnx_pool1d import pool_1d
from compiler.graph.interpret import run_graph
from compiler.graph.ir import GraphBuilder, Op
from runtime.opset import OPERATORS
from tests.compiler.frontend.test_onnx import _check, _model, _op, _ort, _rand
from tests.compiler.frontend.test_torch import TOL, Fn, _import_and_compare, _inputs


def _ops(graph) -> list[str]:
    return [node.op.value for node in graph.nodes]


# ----------------------------------------------------------------------------- TopK, ONNX
def _ties(*shape: int, seed: int = 0) -> np.ndarray:
    """Values with many ties (small integers as floats)."""
    rng = np.random.default_rng(seed)
    return rng.integers(-2, 3, shape).astype(np.float32)


def _topk_model(x, k, *, opset, outputs=("values", "indices"), **attrs):
    names = [name if name in outputs else f"unread_{name}" for name in ("values", "indices")]
    if opset < 10:
        node = helper.make_node("TopK", ["x"], names, name="topk", k=k, **attrs)
        return _model([node], {"x": x}, outputs=outputs, opset=opset)
    node = helper.make_node("TopK", ["x", "k"], names, name="topk", **attrs)
    params = {"k": np.array([k], np.int64)}
    return _model([node], {"x": x}, params, outputs=outputs, opset=opset)


@pytest.mark.parametrize("opset", [1, 10, 11, 17])
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("data", ["random", "ties"])
def test_topk_largest_matches_onnxruntime(opset, axis, data):
    x = _rand(4, 6, 5, seed=1) if data == "random" else _ties(4, 6, 5, seed=1)
    model = _topk_model(x, 3, opset=opset, axis=axis)
    graph = _check(model, {"x": x})
    assert _ops(graph) == ["TopK", "TopK"]
    assert [n.attrs.output for n in graph.nodes] == ["values", "indices"]


@pytest.mark.parametrize("axis", [-1, 1])
@pytest.mark.parametrize("ordered", [0, 1])
def test_topk_smallest_matches_onnxruntime(axis, ordered):
    x = _ties(3, 7, 4, seed=2)
    model = _topk_model(x, 4, opset=11, axis=axis, largest=0, sorted=ordered)
    if ordered:
        _check(model, {"x": x})
        return
    # unsorted, onnxruntime returns its own order (ONNX leaves it open; ours is sorted): the
    # same elements, in any order
    values, indices = run_graph(from_onnx(model), {"x": x})
    want_values, want_indices = _ort(model, {"x": x})
    np.testing.assert_array_equal(np.sort(values, axis), np.sort(want_values, axis))
    np.testing.assert_array_equal(np.sort(indices, axis), np.sort(want_indices, axis))
    np.testing.assert_array_equal(np.take_along_axis(x, indices, axis), values)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("largest", [0, 1])
def test_topk_of_integers_with_ties_matches_onnxruntime(dtype, largest):
    x = np.random.default_rng(3).integers(-3, 4, (5, 8)).astype(dtype)
    x[0, :] = np.iinfo(dtype).min  # negation would overflow here
    x[1, :] = np.iinfo(dtype).max
    _check(_topk_model(x, 5, opset=11, largest=largest), {"x": x})


@pytest.mark.parametrize("read", [("values",), ("indices",)])
def test_topk_adds_only_the_outputs_read(read):
    x = _ties(2, 9, seed=4)
    graph = _check(_topk_model(x, 4, opset=11, outputs=read), {"x": x})
    assert [n.attrs.output for n in graph.nodes] == list(read)
    assert graph.outputs == read


def test_topk_of_k_zero_and_of_the_whole_axis():
    x = _rand(3, 5, seed=5)
    _check(_topk_model(x, 5, opset=11), {"x": x})
    graph = from_onnx(_topk_model(x, 0, opset=11))
    values, indices = run_graph(graph, {"x": x})
    assert values.shape == indices.shape == (3, 0) and indices.dtype == np.int64


def test_topk_indices_feed_a_gather():
    x = _rand(4, 6, seed=6)
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
        helper.make_node("Gather", ["x", "i"], ["y"], axis=1),
    ]
    _check(_model(nodes, {"x": x}, {"k": np.array([2], np.int64)}), {"x": x})


def test_topk_needs_a_constant_k_that_fits():
    x = _rand(2, 5)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")
    k = np.array([2], np.int64)
    model = _model([node], {"x": x, "k": k}, outputs=("v", "i"), opset=11)
    with pytest.raises(UnsupportedOperator, match="k"):
        from_onnx(model)
    with pytest.raises(Exception, match=r"k 6 is not in \[0, 5\]"):
        from_onnx(_topk_model(x, 6, opset=1))


def test_topk_kernel_orders_ties_by_index_and_nan_first():
    kernel = OPERATORS["TopK"].kernel
    x = np.array([1.0, 3.0, np.nan, 3.0, 1.0], np.float32)
    fields = {"axis": 0, "k": 4, "sorted": False}
    big = kernel(x, largest=True, output="indices", **fields)
    small = kernel(x, largest=False, output="indices", **fields)
    np.testing.assert_array_equal(big, [2, 1, 3, 0])
    np.testing.assert_array_equal(small, [0, 4, 1, 3])


# ----------------------------------------------------------------------------- TopK, torch
@pytest.mark.parametrize(
    ("k", "dim", "largest"),
    [(3, -1, True), (2, 0, True), (4, 1, False), (1, 2, False)],
)
def test_torch_topk_matches_torch(k, dim, largest):
    module = Fn(lambda s, x: torch.topk(x, k, dim=dim, largest=largest))
    (x,) = _inputs([(3, 5, 6)], seed=7)  # distinct values: torch leaves ties' order open
    graph = from_torch(module, (torch.tensor(x),))
    values, indices = run_graph(graph, [x])
    with torch.no_grad():
        want_values, want_indices = module(torch.tensor(x))
    np.testing.assert_allclose(values, want_values.numpy(), **TOL)
    np.testing.assert_array_equal(indices, want_indices.numpy())
    assert indices.dtype == np.int64
    assert sorted(_ops(graph)) == ["TopK", "TopK"]


def test_torch_topk_values_only_keeps_one_node():
    module = Fn(lambda s, x: torch.topk(x, 2).values * 2.0)
    graph = _import_and_compare(module, _inputs([(4, 7)], seed=8))
    assert _ops(graph).count("TopK") == 1


# ----------------------------------------------------------------------------- 1-D pooling
POOLS_1D = [
    ("MaxPool", {"kernel_shape": [3]}),
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ("MaxPool", {"kernel_shape": [2], "strides": [2], "pads": [1, 0], "ceil_mode": 1}),
    ("MaxPool", {"kernel_shape": [4], "strides": [3], "ceil_mode": 1}),
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "auto_pad": "SAME_UPPER"}),
    ("AveragePool", {"kernel_shape": [3], "strides": [1], "pads": [1, 1]}),
    ("AveragePool", {"kernel_shape": [3], "pads": [1, 2], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2], "strides": [2], "ceil_mode": 1}),
    ("AveragePool", {"kernel_shape": [4], "strides": [2], "auto_pad": "SAME_LOWER"}),
    ("AveragePool", {"kernel_shape": [3], "strides": [2], "auto_pad": "VALID"}),
    ("MaxPool", {"kernel_shape": [3], "dilations": [2], "pads": [1, 2]}),
    ("MaxPool", {"kernel_shape": [2], "strides": [2], "dilations": [3], "ceil_mode": 1}),
]
_OPS = {"MaxPool": Op.MAX_POOL, "AveragePool": Op.AVERAGE_POOL}


def _attrs(node) -> dict:
    """A node's attributes as the importer reads them (strings decoded)."""
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in values.items()}


@pytest.mark.parametrize(("op_type", "attrs"), POOLS_1D)
def test_pool_1d_matches_onnxruntime(op_type, attrs):
    """pool_1d called as the pool converters call it."""
    x = _rand(2, 3, 11, seed=9)
    model = _op(op_type, {"x": x}, opset=17, **attrs)
    builder = GraphBuilder()
    builder.input("x", x.shape)
    proto = model.graph.node[0]
    pool_1d(OnnxNode(proto, "the_node", 17, ["x"], _attrs(proto), builder), _OPS[op_type])
    graph = builder.build(["y"])
    assert _ops(graph) == ["Reshape", op_type, "Reshape"]
    (got,) = run_graph(graph, {"x": x})
    (want,) = _ort(model, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_pool_1d_refuses_other_ranks():
    x = _rand(1, 2, 8)
    model = _op("MaxPool", {"x": x}, kernel_shape=[2])
    builder = GraphBuilder()
    proto = model.graph.node[0]
    builder.input("x4", (1, 2, 8, 8))
    with pytest.raises(UnsupportedOperator, match="3-D"):
        pool_1d(OnnxNode(proto, "p", 17, ["x4"], {"kernel_shape": [2]}, builder), Op.MAX_POOL)


@pytest.mark.parametrize(("op_type", "attrs"), POOLS_1D)
def test_onnx_1d_pools_match_onnxruntime(op_type, attrs):
    x = _rand(2, 3, 11, seed=10)
    graph = _check(_op(op_type, {"x": x}, **attrs), {"x": x})
    assert _ops(graph) == ["Reshape", op_type, "Reshape"]


@pytest.mark.parametrize(
    "pool",
    [
        lambda: nn.MaxPool1d(3),
        lambda: nn.MaxPool1d(3, stride=2, padding=1),
        lambda: nn.MaxPool1d(2, stride=2, padding=1, ceil_mode=True),
        lambda: nn.MaxPool1d(4, stride=3, ceil_mode=True),
        lambda: nn.AvgPool1d(3),
        lambda: nn.AvgPool1d(3, stride=2, padding=1),
        lambda: nn.AvgPool1d(3, stride=1, padding=1, count_include_pad=False),
        lambda: nn.AvgPool1d(2, stride=2, padding=1, ceil_mode=True),
    ],
)
def test_torch_1d_pools_match_torch(pool):
    module = Fn(lambda s, x: s.pool(x), pool=pool())
    graph = _import_and_compare(module, _inputs([(2, 3, 11)], seed=11))
    assert _ops(graph)[0] == "Reshape" and _ops(graph)[-1] == "Reshape"


def test_torch_1d_pool_refuses_dilation():
    module = Fn(lambda s, x: s.pool(x), pool=nn.MaxPool1d(2, dilation=2))
    with pytest.raises(UnsupportedOperator, match="dilation"):
        from_torch(module, (torch.zeros(1, 2, 9),))
