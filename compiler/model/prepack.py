"""Weights laid out at compile time for the CPU target's kernels.

A float32 convolution that the CPU runs as the NCHWc template
(:func:`~compiler.model.cpu_kernels_float.nchwc_conv`) reads its weights in blocks ``(O/o,
C/i, KH, KW, i, o)``. Blocking them inside the kernel costs every run a pass over the weights
(on ResNet-18 at 224x224, 47 MB: 50.6 ms a run with it, 38.6 without, one thread on a Zen 4
core); where the weights are constants, this pass blocks them once, when the model is compiled: the node
becomes a ``PackedConv`` over the blocked parameter (:func:`runtime.opset.linear.
block_conv_weights`), which the kernel reads as it is. The blocks are those the target's
template chooses (:func:`~compiler.templates.nchwc_block` of the target's vector width), so the
kernel built for the model on any host uses them; a host without the LLVM backend unblocks
them in numpy (``PackedConv``'s kernel) and computes what ``Conv`` computes.
"""

from __future__ import annotations

from compiler.codegen.target import Target
from compiler.graph.ir import Graph, GraphBuilder, Node, Op, copy_into
from compiler.model.cpu_kernels_float import nchwc_conv
from compiler.templates import nchwc_block
from runtime.opset.linear import block_conv_weights

__all__ = ["prepack_weights"]


def prepack_weights(graph: Graph, target: str | Target) -> Graph:
    """``graph`` with each float32 one-group convolution of constant 4-D weights that
    ``target``'s NCHWc template runs made a ``PackedConv`` over weights blocked for it
    (module docstring); every other node as it is."""
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    for node in graph.nodes:
        inputs = node.inputs
        if _packable(graph, node):
            weights = graph.params[inputs[1]]
            o, c = weights.shape[:2]
            out_width = graph.types[node.outputs[0]].shape[3]
            ic, oc = nchwc_block(c, target), nchwc_block(o, target, out_width=out_width)
            name = builder.fresh(f"{inputs[1]}.OIHW{ic}i{oc}o")
            packed = builder.param(name, block_conv_weights(weights, ic, oc))
            builder.add(
                Op.PACKED_CONV,
                [inputs[0], packed, *inputs[2:]],
                node.attrs,
                name=node.name,
                outputs=node.outputs,
            )
        else:
            builder.add(node.op, inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)


def _packable(graph: Graph, node: Node) -> bool:
    if node.op is not Op.CONV or node.inputs[1] not in graph.params:
        return False
    attrs = node.attrs
    types = [graph.types[v] for v in (*node.inputs, *node.outputs)]
    return (
        all(t.dtype == "float32" for t in types)
        and len(types[1].shape) == 4
        and nchwc_conv(attrs.strides, attrs.dilations, attrs.groups)
    )
