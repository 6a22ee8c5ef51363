"""Folding passes: constant subgraphs into parameters, batch normalisation into convolutions.

Both passes are pure: they return a new :class:`Graph` built with :class:`GraphBuilder` (so
every node's types are inferred again) and keep the graph's input and output names. A folded
value is computed with the same numpy kernels the interpreter runs
(:mod:`runtime.opset`), so a folded graph computes what the original computes.
"""

from __future__ import annotations

import numpy as np

from compiler.errors import GraphError
from compiler.graph.interpret import run_node
from compiler.graph.ir import Graph, GraphBuilder, Node, Op, TensorType, copy_into
from compiler.graph.patterns import find, pat

__all__ = ["BN_AFTER_CONV", "fold_batch_norm", "fold_constants"]


def fold_constants(graph: Graph) -> Graph:
    """``graph`` with every node whose inputs are all parameters evaluated into a parameter
    (named as the node's output), repeatedly through chains of such nodes, and every Identity
    node removed by reading its input instead. An Identity that writes a graph output is kept
    (unless its input is a parameter: then the output becomes that parameter's copy), so the
    outputs keep their names."""
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    alias: dict[str, str] = {}
    for node in graph.nodes:
        inputs = [alias.get(v, v) for v in node.inputs]
        arrays = [builder.param_of(v) for v in inputs]
        if all(a is not None for a in arrays):
            _define_folded(builder, graph, node, run_node(node, arrays))
        elif node.op is Op.IDENTITY and node.outputs[0] not in graph.outputs:
            alias[node.outputs[0]] = inputs[0]
        else:
            builder.add(node.op, inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)


def _define_folded(builder: GraphBuilder, graph: Graph, node: Node, array: np.ndarray) -> None:
    """Declare ``node``'s output as the parameter ``array``, which must have its type."""
    (out,) = node.outputs
    got = TensorType(array.shape, str(array.dtype))
    if got != graph.types[out]:
        raise GraphError(
            f"the kernel gives {got}, type inference {graph.types[out]}",
            node=node.name,
            op=node.op.value,
        )
    builder.param(out, array)


def fold_batch_norm(graph: Graph) -> Graph:
    """``graph`` with each BatchNormalization folded into the convolution before it, where that
    convolution's output is read by the batch normalisation only (and is no graph output) and
    the weights, the bias (if any) and the normalisation's statistics are all parameters: the
    convolution then writes the normalisation's output with weights ``w * s`` and bias
    ``(b - mean) * s + beta``, ``s = scale / sqrt(var + epsilon)`` per output channel (computed
    in float64, stored as float32). Other batch normalisations stay as they are."""
    plans = {m.nodes["conv"].name: m.root for m in find(BN_AFTER_CONV, graph)}
    folded = {bn.name for bn in plans.values()}
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    for node in graph.nodes:
        if node.name in plans:
            _add_folded_conv(builder, graph, node, plans[node.name])
        elif node.name not in folded:
            builder.add(node.op, node.inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)


def _constant_operands(graph: Graph, node: Node) -> bool:
    return all(v in graph.params for v in node.inputs[1:])


#: A batch normalisation of constant statistics that alone reads a convolution of constant
#: weights (and bias): folded into the convolution.
BN_AFTER_CONV = pat(
    Op.BATCH_NORM,
    inputs=[pat(Op.CONV, name="conv", where=_constant_operands)],
    where=_constant_operands,
)


def _add_folded_conv(builder: GraphBuilder, graph: Graph, conv: Node, bn: Node) -> None:
    weights = graph.params[conv.inputs[1]].astype(np.float64)
    channels = weights.shape[0]
    bias = (
        graph.params[conv.inputs[2]].astype(np.float64)
        if len(conv.inputs) == 3
        else np.zeros(channels)
    )
    scale, beta, mean, var = (graph.params[v].astype(np.float64) for v in bn.inputs[1:])
    factor = scale / np.sqrt(var + bn.attrs.epsilon)
    new_weights = builder.param(
        _new_name(graph, builder, f"{conv.inputs[1]}_bn"),
        (weights * factor.reshape(channels, 1, 1, 1)).astype(np.float32),
    )
    new_bias = builder.param(
        _new_name(graph, builder, f"{conv.name}_bias_bn"),
        ((bias - mean) * factor + beta).astype(np.float32),
    )
    builder.add(
        Op.CONV,
        [conv.inputs[0], new_weights, new_bias],
        conv.attrs,
        name=conv.name,
        outputs=bn.outputs,
    )


def _new_name(graph: Graph, builder: GraphBuilder, stem: str) -> str:
    """A value name that neither ``graph`` nor ``builder`` uses."""
    name, k = stem, 0
    while name in graph.types or builder.fresh(name) != name:
        k += 1
        name = f"{stem}_{k}"
    return name
