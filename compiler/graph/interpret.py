"""Running a graph in numpy, node by node, with the operators' kernels (:mod:`runtime.opset`).

:func:`run_graph` is the float graph's CPU path and, on a quantized graph, the bit-exact oracle
of every accelerator run (``compiler.reference``). Inputs are checked against the graph's types
first: a wrong shape or dtype is a :class:`GraphError` naming the input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import Graph, Node
from runtime.opset import kernel_kwargs

__all__ = ["check_feeds", "run_graph", "run_node"]


def check_feeds(graph: Graph, feeds: Mapping[str, object] | Sequence[object]) -> dict:
    """The graph's inputs by name, each checked against its declared type."""
    if not isinstance(feeds, Mapping):
        feeds = list(feeds)
        if len(feeds) != len(graph.inputs):
            raise GraphError(
                f"takes {len(graph.inputs)} inputs ({', '.join(graph.inputs)}), got {len(feeds)}"
            )
        feeds = dict(zip(graph.inputs, feeds, strict=True))
    unknown = set(feeds) - set(graph.inputs)
    if unknown:
        raise GraphError(f"has no input named {sorted(unknown)[0]!r}; its inputs: {graph.inputs}")
    checked = {}
    for name in graph.inputs:
        if name not in feeds:
            raise GraphError("is not given", tensor=name)
        array = feeds[name]
        expected = graph.types[name]
        if not isinstance(array, np.ndarray):
            raise GraphError(f"needs a numpy array, got {type(array).__name__}", tensor=name)
        if array.shape != expected.shape or str(array.dtype) != expected.dtype:
            raise GraphError(
                f"expects {expected}, got {array.dtype}[{', '.join(map(str, array.shape))}]",
                tensor=name,
            )
        checked[name] = array
    return checked


def run_node(node: Node, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """One node's output from its input arrays."""
    return node.op.definition.kernel(*arrays, **kernel_kwargs(node.attrs))


def run_graph(
    graph: Graph, feeds: Mapping[str, object] | Sequence[object], *, keep: bool = False
) -> list[np.ndarray] | dict[str, np.ndarray]:
    """The graph's outputs for ``feeds`` (by input name, or in the inputs' order); with
    ``keep``, every value by name instead (what calibration observes)."""
    values: dict[str, np.ndarray] = dict(graph.params)
    values.update(check_feeds(graph, feeds))
    for node in graph.nodes:
        out = run_node(node, [values[v] for v in node.inputs])
        values[node.outputs[0]] = out
    if keep:
        return values
    return [values[name] for name in graph.outputs]
