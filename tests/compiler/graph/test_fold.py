"""The folding passes: each folded graph computes what the original computes (run with numpy
by ``run_graph``), keeps the input and output names, leaves the original graph unchanged and
has nothing left to fold."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph.interpret import run_graph
from compiler.graph.ir import (
    BatchNormAttrs,
    ConvAttrs,
    Graph,
    GraphBuilder,
    Op,
    QuantAttrs,
    ReshapeAttrs,
    TransposeAttrs,
)
from compiler.graph.passes import fold_batch_norm, fold_constants

TOL = {"rtol": 1e-5, "atol": 1e-5}


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _same_outputs(before: Graph, after: Graph, seed: int = 9) -> None:
    feeds = {name: _rand(*before.types[name].shape, seed=seed) for name in before.inputs}
    assert after.inputs == before.inputs and after.outputs == before.outputs
    for want, got in zip(run_graph(before, feeds), run_graph(after, feeds), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, **TOL)


def _bn_params(b: GraphBuilder, stem: str, channels: int) -> list[str]:
    rng = np.random.default_rng(len(stem))
    return [
        b.param(f"{stem}_scale", _rand(channels, seed=1)),
        b.param(f"{stem}_beta", _rand(channels, seed=2)),
        b.param(f"{stem}_mean", _rand(channels, seed=3)),
        b.param(f"{stem}_var", rng.uniform(0.5, 2.0, channels).astype(np.float32)),
    ]


def _conv_bn(b: GraphBuilder, x: str, stem: str, *, bias: bool = True, groups: int = 1) -> str:
    channels = b.type_of(x).shape[1]
    inputs = [x, b.param(f"{stem}_w", _rand(6, channels // groups, 3, 3, seed=len(stem)))]
    if bias:
        inputs.append(b.param(f"{stem}_b", _rand(6, seed=5)))
    conv = b.add1(Op.CONV, inputs, ConvAttrs(pads=(1, 1, 1, 1), groups=groups), name=stem)
    return b.add1(
        Op.BATCH_NORM, [conv, *_bn_params(b, stem, 6)], BatchNormAttrs(1e-3), name=f"{stem}_bn"
    )


# ----------------------------------------------------------------------------- batch norm
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("groups", [1, 2])
def test_batch_norm_after_a_conv_is_folded(bias, groups):
    b = GraphBuilder("net")
    x = b.input("x", (2, 4, 7, 7))
    y = b.add1(Op.RELU, [_conv_bn(b, x, "c1", bias=bias, groups=groups)], name="out")
    before = b.build([y])
    after = fold_batch_norm(before)
    assert [n.op for n in before.nodes] == [Op.CONV, Op.BATCH_NORM, Op.RELU]
    assert [n.op for n in after.nodes] == [Op.CONV, Op.RELU]
    assert after.nodes[0].name == "c1" and after.nodes[0].outputs == ("c1_bn",)
    assert len(after.nodes[0].inputs) == 3
    _same_outputs(before, after)


def test_a_batch_norm_output_that_is_a_graph_output_keeps_its_name():
    b = GraphBuilder()
    y = _conv_bn(b, b.input("x", (1, 3, 5, 5)), "c")
    before = b.build([y])
    after = fold_batch_norm(before)
    assert after.outputs == (y,) and [n.op for n in after.nodes] == [Op.CONV]
    _same_outputs(before, after)


def test_batch_norms_that_cannot_be_folded_stay():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    w_input = b.input("w", (6, 4, 3, 3))
    # the conv's output is read twice
    shared = b.add1(Op.CONV, [x, b.param("w1", _rand(6, 4, 3, 3))], ConvAttrs(), name="shared")
    bn1 = b.add1(Op.BATCH_NORM, [shared, *_bn_params(b, "bn1", 6)], BatchNormAttrs())
    also = b.add1(Op.RELU, [shared])
    # no conv before it
    relu = b.add1(Op.RELU, [x])
    bn2 = b.add1(Op.BATCH_NORM, [relu, *_bn_params(b, "bn2", 4)], BatchNormAttrs())
    # the weights are a graph input
    conv = b.add1(Op.CONV, [x, w_input], ConvAttrs(), name="dynamic")
    bn3 = b.add1(Op.BATCH_NORM, [conv, *_bn_params(b, "bn3", 6)], BatchNormAttrs())
    # and one that can be folded, beside them
    bn4 = _conv_bn(b, x, "ok")
    before = b.build([bn1, also, bn2, bn3, bn4])
    after = fold_batch_norm(before)
    assert [n.name for n in after.nodes if n.op is Op.BATCH_NORM] == [
        "batchnormalization",
        "batchnormalization_1",
        "batchnormalization_2",
    ]
    assert len(after.nodes) == len(before.nodes) - 1
    _same_outputs(before, after)


def test_a_conv_output_that_is_a_graph_output_is_not_folded():
    b = GraphBuilder()
    conv = b.add1(
        Op.CONV, [b.input("x", (1, 2, 4, 4)), b.param("w", _rand(3, 2, 1, 1))], ConvAttrs()
    )
    bn = b.add1(Op.BATCH_NORM, [conv, *_bn_params(b, "bn", 3)], BatchNormAttrs())
    before = b.build([conv, bn])
    assert [n.op for n in fold_batch_norm(before).nodes] == [Op.CONV, Op.BATCH_NORM]


def test_folded_parameters_get_fresh_names():
    b = GraphBuilder()
    y = _conv_bn(b, b.input("x", (1, 3, 5, 5)), "c")
    # a later value already named as the folded weights would be
    z = b.add1(Op.RELU, [y], name="c_w_bn")
    before = b.build([z])
    after = fold_batch_norm(before)
    assert "c_w_bn_1" in after.params
    _same_outputs(before, after)


def test_the_passes_leave_their_input_graph_unchanged():
    b = GraphBuilder()
    x = b.input("x", (1, 3, 5, 5))
    t = b.add1(Op.TRANSPOSE, [b.param("p", _rand(5, 5))], TransposeAttrs((1, 0)))
    y = b.add1(Op.ADD, [_conv_bn(b, x, "c"), t])
    graph = b.build([y])
    nodes, params = graph.nodes, dict(graph.params)
    fold_constants(fold_batch_norm(graph))
    assert graph.nodes == nodes and dict(graph.params) == params


# ----------------------------------------------------------------------------- constants
def test_constant_subgraphs_become_parameters():
    b = GraphBuilder("net")
    x = b.input("x", (2, 4))
    w = b.add1(Op.TRANSPOSE, [b.param("w", _rand(3, 4))], TransposeAttrs((1, 0)), name="wt")
    w2 = b.add1(Op.MUL, [w, b.param("two", np.float32(2))], name="w2")
    shift = b.add1(Op.ADD, [b.param("s1", _rand(3, seed=1)), b.param("s2", _rand(3, seed=2))])
    y = b.add1(Op.ADD, [b.add1(Op.MATMUL, [x, w2]), shift], name="y")
    before = b.build([y])
    after = fold_constants(before)
    assert [n.op for n in after.nodes] == [Op.MATMUL, Op.ADD]
    assert set(after.params) == {"w2", "add"}
    _same_outputs(before, after)
    assert not _foldable(after)


def test_identity_nodes_are_removed_and_outputs_keep_their_names():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    i1 = b.add1(Op.IDENTITY, [x], name="i1")
    r = b.add1(Op.RELU, [i1], name="r")
    i2 = b.add1(Op.IDENTITY, [r], name="i2")
    out = b.add1(Op.IDENTITY, [i2], name="out")  # writes a graph output: kept
    const = b.add1(Op.IDENTITY, [b.param("c", _rand(2, 3))], name="const")
    before = b.build([out, r, const])
    after = fold_constants(before)
    assert [(n.name, n.op, n.inputs) for n in after.nodes] == [
        ("r", Op.RELU, ("x",)),
        ("out", Op.IDENTITY, ("r",)),
    ]
    assert after.outputs == ("out", "r", "const") and "const" in after.params
    _same_outputs(before, after)


def test_folding_quantization_and_reshapes_of_parameters():
    b = GraphBuilder()
    x = b.input("x", (2, 6))
    q = b.add1(Op.QUANTIZE, [b.param("w", _rand(3, 2))], QuantAttrs(0.05))
    w = b.add1(Op.DEQUANTIZE, [q], QuantAttrs(0.05))
    flat = b.add1(Op.RESHAPE, [w], ReshapeAttrs((6,)))
    y = b.add1(Op.MUL, [x, flat])
    before = b.build([y, q])
    after = fold_constants(before)
    assert [n.op for n in after.nodes] == [Op.MUL]
    assert after.params[q].dtype == np.int8
    _same_outputs(before, after)


def test_a_graph_without_constants_is_rebuilt_unchanged():
    b = GraphBuilder()
    y = b.add1(Op.SIGMOID, [b.add1(Op.RELU, [b.input("x", (3,))])])
    before = b.build([y])
    after = fold_constants(before)
    assert after.nodes == before.nodes and after.types == before.types


def _foldable(graph: Graph) -> list[str]:
    return [
        n.name
        for n in graph.nodes
        if n.op is Op.IDENTITY or all(v in graph.params for v in n.inputs)
    ]
