"""Graph patterns and rewrites: what a pattern matches (exclusively or not, in either operand
order, with captures), and the simplification rules against the interpreter on random chains
of movement operators."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.graph import AxisAttrs, GraphBuilder, Op
from compiler.graph.interpret import run_graph
from compiler.graph.passes.quantize import ACTIVATION, BIAS
from compiler.graph.passes.simplify import merge_repeated, simplify
from compiler.graph.patterns import const, find, match, pat
from runtime.opset import ReshapeAttrs, TransposeAttrs


def _linear(readers: int = 1, bias_first: bool = False):
    b = GraphBuilder("linear")
    x = b.input("x", (2, 3, 4))
    w = b.param("w", np.ones((4, 5), np.float32))
    c = b.param("c", np.ones(5, np.float32))
    product = b.add1(Op.MATMUL, [x, w], name="mm")
    added = b.add1(Op.ADD, [c, product] if bias_first else [product, c], name="add")
    outputs = [b.add1(Op.RELU, [added], name="relu")]
    if readers > 1:
        outputs.append(b.add1(Op.SIGMOID, [product], name="other"))
    return b.build(outputs)


@pytest.mark.parametrize("bias_first", [False, True])
def test_a_commutative_pattern_matches_either_operand_order_and_captures(bias_first):
    graph = _linear(bias_first=bias_first)
    (found,) = find(BIAS, graph)
    assert found.root.name == "add"
    assert found.nodes["product"].name == "mm" and found.values["bias"] == "c"
    (act,) = find(ACTIVATION, graph)
    assert (act.root.name, act.nodes["producer"].name) == ("relu", "add")


def test_an_exclusive_match_needs_the_absorbed_node_read_by_its_consumer_alone():
    graph = _linear(readers=2)
    assert find(BIAS, graph) == []
    found = match(BIAS, graph, graph.node("add"), exclusive=False)
    assert found is not None and found.nodes["product"].name == "mm"


def test_excluded_nodes_are_never_part_of_a_match():
    graph = _linear()
    assert find(BIAS, graph, exclude={"mm"}) == []
    assert find(ACTIVATION, graph, exclude={"relu"}) == []
    assert len(find(ACTIVATION, graph, exclude={"mm"})) == 1  # mm is not in that pattern


def test_a_pattern_of_operators_conditions_and_constants():
    graph = _linear()
    wide = pat(Op.ADD, inputs=[pat(Op.MATMUL), const(where=lambda g, v: g.types[v].shape == (5,))])
    narrow = pat(Op.ADD, inputs=[pat(Op.MATMUL), const(where=lambda g, v: False)])
    assert [m.root.name for m in find(wide, graph)] == ["add"]
    assert find(narrow, graph) == []
    assert find(pat(Op.ADD, inputs=[pat(Op.CONV)]), graph) == []
    assert find(pat(Op.RELU, where=lambda g, n: n.name == "relu"), graph)[0].root.name == "relu"


_SHAPES = st.lists(st.integers(1, 3), min_size=1, max_size=4)


@st.composite
def _movement_chains(draw):
    """A graph of random reshapes, transposes and ReLUs (some values read twice), with its
    input's shape."""
    shape = tuple(draw(_SHAPES))
    size = int(np.prod(shape))
    b = GraphBuilder("chain")
    values = [b.input("x", shape)]
    for k in range(draw(st.integers(1, 8))):
        source = draw(st.sampled_from(values))
        current = b.type_of(source).shape
        kind = draw(st.sampled_from(["reshape", "flatten", "transpose", "relu", "same"]))
        if kind == "reshape":
            dims = draw(st.permutations(_factors(size)))
            value = b.add1(Op.RESHAPE, [source], ReshapeAttrs(tuple(dims)), name=f"n{k}")
        elif kind == "flatten":
            value = b.add1(Op.FLATTEN, [source], AxisAttrs(len(current) // 2), name=f"n{k}")
        elif kind == "transpose":
            perm = tuple(draw(st.permutations(range(len(current)))))
            value = b.add1(Op.TRANSPOSE, [source], TransposeAttrs(perm), name=f"n{k}")
        elif kind == "same":
            value = b.add1(Op.RESHAPE, [source], ReshapeAttrs(current), name=f"n{k}")
        else:
            value = b.add1(Op.RELU, [source], name=f"n{k}")
        values.append(value)
    outputs = draw(st.lists(st.sampled_from(values[1:]), min_size=1, max_size=2, unique=True))
    return b.build(outputs), shape


def _factors(size: int) -> list[int]:
    factors, n, p = [], size, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors or [1]


@settings(max_examples=60, deadline=None)
@given(chain=_movement_chains(), seed=st.integers(0, 2**16))
def test_simplify_computes_what_the_graph_computes_with_no_movement_chains_left(chain, seed):
    graph, shape = chain
    simple = simplify(graph)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    for got, want in zip(run_graph(simple, [x]), run_graph(graph, [x]), strict=True):
        np.testing.assert_array_equal(got, want)
    assert simple.outputs == graph.outputs and len(simple.nodes) <= len(graph.nodes)
    movement = (Op.RESHAPE, Op.FLATTEN)
    for node in simple.nodes:
        producer = simple.producer(node.inputs[0])
        if node.op in movement and node.outputs[0] not in graph.outputs:
            assert simple.types[node.inputs[0]].shape != simple.types[node.outputs[0]].shape
        if node.op in movement and producer is not None:
            assert producer.op not in movement
        if node.op is Op.TRANSPOSE and producer is not None:
            assert producer.op is not Op.TRANSPOSE


def test_repeated_nodes_merge_unless_kept_or_writing_an_output():
    b = GraphBuilder("twice")
    x = b.input("x", (2, 3))
    first = b.add1(Op.RELU, [x], name="first")
    second = b.add1(Op.RELU, [x], name="second")
    third = b.add1(Op.RELU, [x], name="third")
    graph = b.build([b.add1(Op.ADD, [first, second], name="sum"), third])
    merged = merge_repeated(graph)
    assert [n.name for n in merged.nodes] == ["first", "third", "sum"]
    assert merged.node("sum").inputs == ("first", "first")
    kept = merge_repeated(graph, keep={"second"})
    assert [n.name for n in kept.nodes] == ["first", "second", "third", "sum"]
