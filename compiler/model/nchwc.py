"""The CPU target's layouts: convolutions and the elementwise chains between them run on
values blocked by channel (NCHWc), their weights blocked once at compile time, with layout
changes only where the blocked region meets a value that stays plain.

TVM's x86 schedules lay a network out so (its ``AlterOpLayout``): a convolution whose inner
loop reads a vector of input channels and writes a vector of output channels needs its data
``(N, C/c, H, W, c)`` and its weights ``(O/o, C/i, KH, KW, i, o)``. Blocking both inside each
kernel costs every run a pass over every activation and every weight (on ResNet-18 at
224x224, 47 MB of weights); this pass does it once:

- a float32 convolution of constant 4-D weights, no dilation and equal strides
  (:func:`~compiler.model.cpu_kernels_float.template_windows`) becomes, for one group,
  ``ConvNCHWc`` over weights blocked at compile time, and for a depthwise one (a group per
  channel, multiplier 1), ``DepthwiseNCHWc``;
- a ``Relu`` or ``Clip`` that is the only reader of such a convolution's output is fused into
  it (the blocked convolution clips its output: one pass over memory fewer);
- ``Relu``, ``Clip`` and the four arithmetic operators whose operands are values of the
  output's 4-D shape, one of them blocked, run on the blocked values (elementwise, the layout
  does not matter to them), and a 2-D ``MaxPool`` of a blocked float32 value, ``MaxPoolNCHWc``;
- every other reader of a blocked value, and the graph's outputs, read it unblocked
  (``FromNCHWc``, once per value, under the value's own name); a plain value that a blocked
  operator reads is blocked once per block (``ToNCHWc``).

A value's block is its producer's choice: a convolution's output block is the target
template's for its channels and output width (:func:`~compiler.templates.nchwc_block`), a
depthwise convolution's and an elementwise operator's that of their (first blocked) input; a
plain value blocked for a convolution gets the template's block for its channels. The
blocks derive from ``target`` (the CPU the model is compiled for), and the kernels of any host
read them as they are.
"""

from __future__ import annotations

import math

from compiler.codegen.target import Target
from compiler.graph.ir import Graph, GraphBuilder, Node, Op, copy_into
from compiler.model.cpu_kernels_float import template_windows
from compiler.templates import nchwc_block
from runtime.opset.blocked import (
    BlockAttrs,
    BlockedConvAttrs,
    block_conv_weights,
    block_depthwise_weights,
)

__all__ = ["nchwc_layout"]

#: Operators that compute each output element from the same element of each operand.
_ELEMENTWISE = frozenset({Op.RELU, Op.CLIP, Op.ADD, Op.SUB, Op.MUL, Op.DIV})


def nchwc_layout(graph: Graph, target: str | Target) -> Graph:
    """``graph`` with its convolutions and their elementwise chains on NCHWc values blocked
    for ``target`` (module docstring); the outputs, and every value an unblocked operator
    reads, as they were."""
    return _Layout(graph, target).run()


class _Layout:
    def __init__(self, graph: Graph, target: str | Target) -> None:
        self.graph = graph
        self.target = target
        self.builder = GraphBuilder(graph.name)
        copy_into(self.builder, graph)
        #: plain value -> (its blocked value, the block)
        self.blocked: dict[str, tuple[str, int]] = {}
        #: (plain value, block) -> its ToNCHWc
        self.to_blocked: dict[tuple[str, int], str] = {}
        #: plain values defined in the new graph (FromNCHWc of a blocked one)
        self.unblocked: set[str] = set()
        #: activations fused into the convolution before them
        self.fused: set[str] = set()

    def run(self) -> Graph:
        for node in self.graph.nodes:
            if node.name in self.fused:
                continue
            if not (self._convolution(node) or self._elementwise(node) or self._pool(node)):
                inputs = [self._plain(v) for v in node.inputs]
                self.builder.add(node.op, inputs, node.attrs, name=node.name, outputs=node.outputs)
        return self.builder.build([self._plain(v) for v in self.graph.outputs])

    # ------------------------------------------------------------------ values
    def _plain(self, value: str) -> str:
        """``value`` unblocked: itself, or once per value a ``FromNCHWc`` under its name."""
        if value in self.blocked and value not in self.unblocked:
            source = self.blocked[value][0]
            self.builder.add(Op.FROM_NCHWC, [source], name=f"{value}.NCHW", outputs=[value])
            self.unblocked.add(value)
        return value

    def _in_blocks(self, value: str, block: int) -> str:
        """``value`` blocked by ``block``: its blocked form, or once a ``ToNCHWc``."""
        found = self.blocked.get(value)
        if found is not None and found[1] == block:
            return found[0]
        key = (value, block)
        if key not in self.to_blocked:
            plain = self._plain(value)
            name = self.builder.fresh(f"{value}.NCHW{block}c")
            self.to_blocked[key] = self.builder.add1(
                Op.TO_NCHWC, [plain], BlockAttrs(block), name=name, outputs=[name]
            )
        return self.to_blocked[key]

    def _define_blocked(
        self, node: Node, op: Op, inputs: list[str], block: int, attrs: object, value: str
    ) -> None:
        """Add ``node`` as ``op`` over ``inputs`` defining ``value`` blocked by ``block``."""
        name = self.builder.fresh(f"{value}.NCHW{block}c")
        self.builder.add(op, inputs, attrs, name=node.name, outputs=[name])
        self.blocked[value] = (name, block)

    # ---------------------------------------------------------------- operators
    def _convolution(self, node: Node) -> bool:
        graph = self.graph
        if node.op is not Op.CONV or node.inputs[1] not in graph.params:
            return False
        attrs = node.attrs
        types = [graph.types[v] for v in (*node.inputs, *node.outputs)]
        x, w = types[0].shape, types[1].shape
        plain_float = all(t.dtype == "float32" for t in types) and len(x) == len(w) == 4
        if not plain_float or not template_windows(attrs.strides, attrs.dilations):
            return False
        weights = graph.params[node.inputs[1]]
        data, bias = node.inputs[0], list(node.inputs[2:])
        found = self.blocked.get(data)
        block = found[1] if found is not None else nchwc_block(x[1], self.target)
        if attrs.groups == 1:
            out_block = nchwc_block(w[0], self.target, out_width=types[-1].shape[3])
            packed = block_conv_weights(weights, block, out_block)
            op = Op.CONV_NCHWC
        elif attrs.groups == x[1] == w[0] and w[1] == 1:
            out_block, op = block, Op.DEPTHWISE_NCHWC
            packed = block_depthwise_weights(weights, block)
        else:
            return False
        param = self.builder.fresh(f"{node.inputs[1]}.blocked")
        self.builder.param(param, packed)
        inputs = [self._in_blocks(data, block), param, *bias]
        lo, hi, value = -math.inf, math.inf, node.outputs[0]
        activation = self._fusable_activation(value)
        if activation is not None:
            self.fused.add(activation.name)
            is_relu = activation.op is Op.RELU
            lo, hi = (0.0, math.inf) if is_relu else (activation.attrs.lo, activation.attrs.hi)
            value = activation.outputs[0]
        geometry = (attrs.strides, attrs.pads, attrs.dilations, attrs.groups)
        fused = BlockedConvAttrs(*geometry, lo=lo, hi=hi)
        self._define_blocked(node, op, inputs, out_block, fused, value)
        return True

    def _fusable_activation(self, value: str) -> Node | None:
        """The ``Relu`` or ``Clip`` (of bounds given as attributes) that alone reads
        ``value``, if one does."""
        reader = self.graph.sole_consumer(value)
        if reader is None or reader.op not in (Op.RELU, Op.CLIP) or len(reader.inputs) != 1:
            return None
        return reader

    def _elementwise(self, node: Node) -> bool:
        if node.op not in _ELEMENTWISE:
            return False
        graph = self.graph
        shape = graph.types[node.outputs[0]].shape
        values = [v for v in node.inputs if v not in graph.params]
        first = next((self.blocked[v] for v in values if v in self.blocked), None)
        same = all(graph.types[v].shape == shape for v in values)
        if first is None or not same or len(values) != len(node.inputs) or len(shape) != 4:
            return False
        block = first[1]
        inputs = [self._in_blocks(v, block) for v in values]
        self._define_blocked(node, node.op, inputs, block, node.attrs, node.outputs[0])
        return True

    def _pool(self, node: Node) -> bool:
        found = self.blocked.get(node.inputs[0])
        if node.op is not Op.MAX_POOL or found is None or len(node.attrs.kernel) != 2:
            return False
        if self.graph.types[node.inputs[0]].dtype != "float32":
            return False
        self._define_blocked(
            node, Op.MAX_POOL_NCHWC, [found[0]], found[1], node.attrs, node.outputs[0]
        )
        return True
