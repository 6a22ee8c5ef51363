"""A QDQ model's fake quantization taken out before vtaforge quantizes it.

onnxruntime's QDQ format writes a quantized model as its float model with
``DequantizeLinear(QuantizeLinear(v))`` around every activation (and dequantized int8 weights,
which the frontend reads as the float constants they compute). Quantizing that float graph
again would leave each pair on the CPU between accelerator layers. :func:`strip_fake_quant`
reads each per-tensor pair over a float32 activation as the float operation it stands for, so
the quantizer sees the float model and places it whole: the weights keep the model's own int8
grid as float values, the activations get the scales calibration chooses (not the model's).

A pair rounds to its grid and saturates at the quantized type's ends. Where the low end is
zero (a zero point at the type's least value, as onnxruntime writes a ReLU it fuses into the
quantization of an asymmetric activation) and the value may be negative (it is no ReLU or
clip at zero, or pooling or data movement of one), the saturation is the model's activation,
and the pair becomes ``Clip(0, (max - zero_point) * scale)``, which the quantizer fuses into
the layer before it; otherwise only values past the model's calibrated range saturate, and the
pair becomes its input (vtaforge's own calibration decides what saturates).
"""

from __future__ import annotations

from compiler.graph.ir import ClipAttrs, Graph, GraphBuilder, Node, Op, copy_into
from runtime.opset.base import limits

__all__ = ["fake_quant_pairs", "strip_fake_quant"]


def fake_quant_pairs(graph: Graph) -> list[tuple[Node, Node]]:
    """Each ``(QuantizeLinear, DequantizeLinear)`` pair of ``graph`` that only rounds a float32
    activation to a grid: the Dequantize reads the Quantize's output with the same scale, zero
    point and type, and every reader of that output is such a Dequantize."""
    pairs = []
    for node in graph.nodes:
        if node.op is not Op.DEQUANTIZE:
            continue
        source = graph.producer(node.inputs[0])
        if source is None or source.op is not Op.QUANTIZE or source.attrs != node.attrs:
            continue
        value = source.inputs[0]
        if value in graph.params or graph.types[value].dtype != "float32":
            continue
        readers = graph.consumers(source.outputs[0])
        if source.outputs[0] in graph.outputs or any(r.op is not Op.DEQUANTIZE for r in readers):
            continue
        pairs.append((source, node))
    return pairs


def strip_fake_quant(graph: Graph) -> Graph:
    """``graph`` with every pair of :func:`fake_quant_pairs` replaced by the clip it applies
    where that is an activation, else by its float input (module docstring; an Identity where
    the Dequantize wrote a graph output, so outputs keep their names)."""
    pairs = fake_quant_pairs(graph)
    if not pairs:
        return graph
    quantizes = {q.name for q, _ in pairs}
    clips: dict[str, ClipAttrs | None] = {}
    clipped: set[str] = set()  # pairs' outputs that are never negative
    for q, dq in pairs:
        clip = _saturation(dq)
        non_negative = _non_negative(graph, q.inputs[0], clipped)
        if non_negative:
            clip = None  # clipped at zero already: only outliers would saturate
        clips[dq.name] = clip
        if clip is not None or non_negative:
            clipped.add(dq.outputs[0])
    replaced = {dq.outputs[0]: q.inputs[0] for q, dq in pairs if clips[dq.name] is None}
    sources = {dq.name: q.inputs[0] for q, dq in pairs}
    builder = GraphBuilder(graph.name)
    copy_into(builder, graph)
    for node in graph.nodes:
        if node.name in quantizes:
            continue
        if clips.get(node.name) is not None:
            source = _source(sources[node.name], replaced)
            builder.add(Op.CLIP, [source], clips[node.name], name=node.name, outputs=node.outputs)
            continue
        if node.outputs[0] in replaced:
            if node.outputs[0] in graph.outputs:
                source = _source(node.outputs[0], replaced)
                builder.add(Op.IDENTITY, [source], name=node.name, outputs=node.outputs)
            continue
        inputs = [_source(v, replaced) for v in node.inputs]
        builder.add(node.op, inputs, node.attrs, name=node.name, outputs=node.outputs)
    return builder.build(graph.outputs)


def _saturation(dequantize: Node) -> ClipAttrs | None:
    """The clip of a pair whose saturation is an activation (its low end zero), else None."""
    a = dequantize.attrs
    low, high = limits(a.dtype)
    if low - a.zero_point != 0:
        return None
    return ClipAttrs(0.0, float((high - a.zero_point) * a.scale))


#: Operators whose every output element lies between their input's least and greatest ones
#: (data movement, max pooling and averages).
_WITHIN = (
    Op.FLATTEN,
    Op.RESHAPE,
    Op.IDENTITY,
    Op.TRANSPOSE,
    Op.MAX_POOL,
    Op.GLOBAL_AVERAGE_POOL,
)


def _non_negative(graph: Graph, value: str, clipped: set[str]) -> bool:
    """Whether ``value`` is one of the ``clipped`` values (pairs' outputs known non-negative)
    or the output of a ReLU or a clip at zero, or an operator of :data:`_WITHIN` applied to
    one."""
    while value not in clipped:
        producer = graph.producer(value)
        if producer is not None and _clips_at_zero(producer):
            return True
        if producer is None or producer.op not in _WITHIN:
            return False
        value = producer.inputs[0]
    return True


def _clips_at_zero(node: Node) -> bool:
    """Whether ``node`` is a ReLU, or a clip whose low end is at least zero."""
    return node.op is Op.RELU or (node.op is Op.CLIP and node.attrs.lo >= 0)


def _source(value: str, replaced: dict[str, str]) -> str:
    """What ``value`` reads once the pairs are gone (pairs may follow each other)."""
    while value in replaced:
        value = replaced[value]
    return value
