"""Partitioning a quantized graph between the accelerator and the CPU.

A node runs on the accelerator when an accelerator template computes it exactly and compiles
for the configuration, buffers included (:func:`compiler.model.accel_lowering.accel_op` decides, by
checking the template's registered conditions and then declaring and lowering it, and says why
not); an int8 ``Flatten``/``Reshape`` of an ``(N, C, 1, 1)`` value the accelerator produced is
a view there (same bytes in the blocked layout), and so is an int8 channel ``Concat`` whose
inputs the accelerator makes for it alone, in whole channel blocks (they are slices of its
buffer). Everything else runs on the CPU. The
:class:`Partition` records each node's placement with its reason and prints them as a report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from compiler.accel.env import Env
from compiler.errors import CompileError
from compiler.graph.ir import Graph, Node, Op, node_names
from compiler.model.accel_lowering import (
    ACCEL_TEMPLATES,
    COMMON,
    AccelOp,
    AccelTemplate,
    accel_op,
)
from isa import AccelConfig
from isa.errors import did_you_mean

__all__ = ["ACCEL", "CPU", "RULES", "VIEW", "Partition", "Placement", "partition"]

ACCEL, CPU, VIEW = "accel", "cpu", "view"


def _template_rule(template: AccelTemplate) -> str:
    conditions = ", ".join(r.text for r in template.requirements)
    suffix = f": {conditions}" if conditions else ""
    return f"{template.op.value} runs on the accelerator{suffix}"


#: The rules, as the report prints them: the templates' own conditions, then the common ones.
RULES = (
    *(_template_rule(t) for t in ACCEL_TEMPLATES.values()),
    *(f"every accelerator node needs {c}" for c in COMMON),
    "an int8 Flatten/Reshape of an (N, C, 1, 1) value computed on the accelerator is a view",
    "an int8 Concat along the channels of one batch block, of whole channel blocks each made "
    "on the accelerator for it alone, is a view: its producers write into slices of its buffer",
    "everything else (float operators, quantize/dequantize, layout changes) runs on the CPU",
)


@dataclass(frozen=True)
class Placement:
    """Where one node runs (:data:`ACCEL`, :data:`CPU` or :data:`VIEW`) and why; ``accel`` is
    the accelerator operator of a node placed there."""

    node: str
    op: str
    device: str
    reason: str
    accel: AccelOp | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Partition:
    """Every node's :class:`Placement`, in the graph's order."""

    placements: tuple[Placement, ...]

    def placement(self, node: str) -> Placement:
        for placement in self.placements:
            if placement.node == node:
                return placement
        raise CompileError("is not in the partition", node=node)

    def device(self, node: str) -> str:
        return self.placement(node).device

    def count(self, device: str) -> int:
        return sum(p.device == device for p in self.placements)

    def report(self) -> str:
        """The rules, then one line per node: where it runs and why."""
        lines = ["Partition rules:", *(f"  - {rule}" for rule in RULES), ""]
        width = max((len(p.node) for p in self.placements), default=4)
        for p in self.placements:
            lines.append(f"  {p.node:<{width}}  {p.op:<16} {p.device:<6} {p.reason}")
        lines.append(
            f"{self.count(ACCEL)} nodes on the accelerator, {self.count(VIEW)} views, "
            f"{self.count(CPU)} on the CPU"
        )
        return "\n".join(lines)


def partition(graph: Graph, cfg: AccelConfig, *, cpu_only: Iterable[str] = ()) -> Partition:
    """Place every node of the quantized ``graph`` (``cpu_only`` names nodes kept on the CPU;
    a name that is no node of the graph is a CompileError)."""
    env = Env(cfg)
    forced = set(node_names(cpu_only, "cpu_only"))
    known = {node.name for node in graph.nodes}
    unknown = sorted(forced - known)
    if unknown:
        raise CompileError(
            f"cpu_only names no node {unknown[0]!r} of the quantized graph"
            f"{did_you_mean(unknown[0], known)} (an activation fused into its producer is "
            "placed with it: name the producer)"
        )
    placed: dict[str, str] = {}
    placements = []
    for node in graph.nodes:
        placement = _place(env, graph, node, placed, node.name in forced)
        placed[node.name] = placement.device
        placements.append(placement)
    return Partition(tuple(placements))


def _place(env: Env, graph: Graph, node: Node, placed: dict[str, str], forced: bool) -> Placement:
    where = node.name, node.op.value
    if forced:
        return Placement(*where, CPU, "kept on the CPU by request")
    if node.op in (Op.FLATTEN, Op.RESHAPE) and _is_view(graph, node, placed):
        return Placement(*where, VIEW, "same bytes in the blocked layout")
    if node.op is Op.SLICE and _is_block_slice(env, graph, node):
        return Placement(*where, VIEW, "a slice of whole channel blocks of its input's buffer")
    if node.op is Op.CONCAT:
        problem = _concat_problem(env, graph, node, placed)
        if problem is not None:
            return Placement(*where, CPU, problem)
        return Placement(*where, VIEW, "its producers write into slices of one buffer")
    try:
        op = accel_op(env, graph, node)
    except CompileError as err:
        return Placement(*where, CPU, err.detail)
    return Placement(*where, ACCEL, "accelerator template", op)


def _concat_problem(env: Env, graph: Graph, node: Node, placed: dict[str, str]) -> str | None:
    """Why a concatenation cannot be a layout decision (None where it can): it must be int8,
    along the channels of a single batch block (so each input is a contiguous slice of the
    blocked output), each input made by an accelerator node for this concatenation alone, in
    whole channel blocks."""
    out = graph.types[node.outputs[0]]
    if out.dtype != "int8":
        return "a float concatenation (its inputs arrive at different scales)"
    if node.attrs.axis != 1 or len(out.shape) not in (2, 4) or out.shape[0] != env.BATCH:
        return f"a concatenation along axis {node.attrs.axis} of {out} is no slice of a buffer"
    if len(set(node.inputs)) != len(node.inputs):
        return "a value concatenated twice"
    for index, value in enumerate(node.inputs):
        producer = graph.producer(value)
        if producer is None or placed.get(producer.name) != ACCEL:
            return f"input {value!r} is not made on the accelerator"
        if graph.consumers(value) != (node,) or value in graph.outputs:
            return f"input {value!r} is read elsewhere too"
        channels = graph.types[value].shape[1]
        if channels % env.BLOCK_OUT and index != len(node.inputs) - 1:  # the last may be partial
            return f"input {value!r} has {channels} channels, not whole blocks of {env.BLOCK_OUT}"
    return None


def _is_block_slice(env: Env, graph: Graph, node: Node) -> bool:
    """Whether an int8 Slice takes whole channel blocks of a value of one batch block, every
    other axis whole, step 1 (a contiguous part of the blocked buffer)."""
    source = graph.types[node.inputs[0]].shape
    attrs = node.attrs
    if graph.types[node.outputs[0]].dtype != "int8" or len(source) not in (2, 4):
        return False
    if source[0] != env.BATCH or any(step != 1 for step in attrs.steps):
        return False
    others = [a for a in range(len(source)) if a != 1]
    if any((attrs.starts[a], attrs.stops[a]) != (0, source[a]) for a in others):
        return False
    start, stop = attrs.starts[1], attrs.stops[1]
    whole = (stop - start) % env.BLOCK_OUT == 0 or stop == source[1]  # or the last, partial
    return start % env.BLOCK_OUT == 0 and whole and stop > start


def _is_view(graph: Graph, node: Node, placed: dict[str, str]) -> bool:
    source = graph.producer(node.inputs[0])
    shape = graph.types[node.inputs[0]].shape
    out = graph.types[node.outputs[0]].shape
    return (
        source is not None
        and placed.get(source.name) in (ACCEL, VIEW)
        and graph.types[node.inputs[0]].dtype == "int8"
        and len(shape) == 4
        and shape[2:] == (1, 1)
        and out == shape[:2]
    )
