"""Graphs compared modulo value and node names: :func:`canonical` and
:func:`assert_same_graph`, what the frontends' "same graph" tests use."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from compiler.graph.ir import Graph, TensorType

__all__ = ["Canonical", "assert_same_graph", "canonical"]


class Canonical(NamedTuple):
    """A graph with its values renamed by role and position: inputs ``in0, in1, ...``,
    parameters ``p0, p1, ...`` in the order nodes first read them, node outputs ``n0, n1,
    ...`` in node order. ``nodes`` holds (op, attrs, inputs, output types) per node."""

    inputs: tuple[TensorType, ...]
    nodes: tuple[tuple[Any, ...], ...]
    params: tuple[np.ndarray, ...]
    outputs: tuple[str, ...]


def canonical(graph: Graph) -> Canonical:
    """``graph`` with every name replaced by its role and position (see :class:`Canonical`)."""
    names = {name: f"in{k}" for k, name in enumerate(graph.inputs)}
    params: list[np.ndarray] = []
    nodes = []
    for k, node in enumerate(graph.nodes):
        for value in node.inputs:
            if value not in names:
                names[value] = f"p{len(params)}"
                params.append(graph.params[value])
        inputs = tuple(names[v] for v in node.inputs)
        for j, value in enumerate(node.outputs):
            names[value] = f"n{k}" if j == 0 else f"n{k}:{j}"
        types = tuple(graph.types[v] for v in node.outputs)
        nodes.append((node.op, node.attrs, inputs, types))
    for value in graph.outputs:  # an output may be an input or a parameter
        if value not in names:
            names[value] = f"p{len(params)}"
            params.append(graph.params[value])
    return Canonical(
        tuple(graph.types[v] for v in graph.inputs),
        tuple(nodes),
        tuple(params),
        tuple(names[v] for v in graph.outputs),
    )


def assert_same_graph(a: Graph, b: Graph) -> None:
    """Assert ``a`` and ``b`` are one graph modulo names: the same input types, operators in
    the same order with equal attribute records, wiring and output types, equal parameter
    arrays (dtype, shape and every element) and the same outputs. The message names the first
    difference."""
    ca, cb = canonical(a), canonical(b)
    assert ca.inputs == cb.inputs, f"input types differ: {ca.inputs} vs {cb.inputs}"
    for k, (na, nb) in enumerate(zip(ca.nodes, cb.nodes, strict=False)):
        assert na == nb, f"node {k} differs: {a.nodes[k]} vs {b.nodes[k]}"
    assert len(ca.nodes) == len(cb.nodes), f"{len(ca.nodes)} nodes vs {len(cb.nodes)}"
    for k, (pa, pb) in enumerate(zip(ca.params, cb.params, strict=True)):
        assert pa.dtype == pb.dtype and np.array_equal(pa, pb), (
            f"parameter p{k} differs: {pa.dtype}{list(pa.shape)} vs {pb.dtype}{list(pb.shape)}"
        )
    assert ca.outputs == cb.outputs, f"outputs differ: {ca.outputs} vs {cb.outputs}"
