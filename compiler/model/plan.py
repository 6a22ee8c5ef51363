"""From a partitioned graph to the steps of a compiled model and the DRAM they share.

Layouts (``pack_layout``): a value an accelerator node reads or writes lives in the blocked
layout ``(N/BATCH, C/BLOCK, H, W, BATCH, BLOCK)`` (channels padded with zeros); CPU nodes read
and write numpy's plain layout. Where a value crosses, a CPU ``Pack`` or ``Unpack`` step
converts it, once; constant operands of accelerator nodes are packed here, at compile time;
matrices computed at run time that an accelerator node reads as weights (a batched product's
right operand) are packed into weight blocks by a CPU ``PackWeights`` step. A
view (an int8 flatten of ``(N, C, 1, 1)``) shares its input's bytes; a concatenation view is a
layout decision: each input is a slice of the output's buffer, which its producer writes.

Memory (``plan_memory``): parameters first, from address 0; then every other tensor gets the
lowest address at which it overlaps no tensor whose lifetime (first write to last read) meets
its own, so tensors that are never live together share bytes; each address is aligned to the
largest element any accelerator buffer moves, as the DMA requires.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler.accel.env import Env
from compiler.graph.ir import Graph, Node, Op
from compiler.model.accel_lowering import AccelOp, packed_shape
from compiler.model.partition import ACCEL, VIEW, Partition
from runtime.model import TensorSlot
from runtime.model.image import alignment
from runtime.opset import OPERATORS, PackWeightsAttrs, kernel_kwargs

__all__ = ["Plan", "PlannedStep", "node_macs", "plan_model"]


@dataclass(frozen=True)
class PlannedStep:
    """A step before code generation: an accelerator operator (``accel``) to compile, or a CPU
    kernel ``op`` with its ``attrs``; ``inputs``/``outputs`` name tensor slots."""

    node: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict)
    accel: AccelOp | None = None
    macs: int = 0


@dataclass(frozen=True)
class Plan:
    """The steps, every tensor slot at its address, the parameters' bytes, the end of the
    tensors' region (where micro-op tables may start) and the alignment used."""

    steps: tuple[PlannedStep, ...]
    slots: dict[str, TensorSlot]
    params: bytes
    tensors_end: int
    align: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def node_macs(graph: Graph, node: Node) -> int:
    """Multiply-accumulates of one node, by its operator's count (0 for operators without)."""
    inputs = [graph.types[v] for v in node.inputs]
    outputs = [graph.types[v] for v in node.outputs]
    return node.op.definition.macs(node.attrs, inputs, outputs)


def _jsonable(value: object) -> object:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Layouts:
    """The slots of a graph's values in each layout, and the conversion steps between them."""

    def __init__(self, graph: Graph, env: Env) -> None:
        self.graph = graph
        self.env = env
        self.slots: dict[str, tuple[tuple[int, ...], str, str]] = {}  # name -> shape, dtype, layout
        self.plain: dict[str, str] = {}
        self.packed: dict[str, str] = {}
        self.weights: dict[str, str] = {}
        #: slot -> (the slot whose bytes it shares, its byte offset there)
        self.aliases: dict[str, tuple[str, int]] = {}
        self.steps: list[PlannedStep] = []
        self.constants: dict[str, np.ndarray] = {}
        for name in (*graph.inputs, *graph.params):
            self.slot(self.plain, name, name, graph.types[name].shape, graph.types[name].dtype)

    def slot(
        self, table: dict, value: str, name: str, shape, dtype: str, layout: str = "plain"
    ) -> str:
        """Declare slot ``name`` for ``value`` in the layout ``table`` (plain or packed)."""
        self.slots[name] = (tuple(shape), dtype, layout)
        table[value] = name
        return name

    def _pack_attrs(self, value: str) -> dict:
        channels = self.graph.types[value].shape[1]
        return {"batch": self.env.BATCH, "block": self.env.BLOCK_OUT, "channels": channels}

    def plain_of(self, value: str) -> str:
        if value not in self.plain:
            source = self.packed[value]
            ty = self.graph.types[value]
            name = self.slot(self.plain, value, f"{value}:plain", ty.shape, ty.dtype)
            attrs = self._pack_attrs(value)
            self.steps.append(PlannedStep(f"unpack_{value}", "Unpack", (source,), (name,), attrs))
        return self.plain[value]

    def packed_of(self, value: str) -> str:
        if value not in self.packed:
            source = self.plain_of(value)
            ty = self.graph.types[value]
            shape = packed_shape(self.env, ty.shape)
            name = self.slot(self.packed, value, f"{value}:packed", shape, ty.dtype, "packed")
            attrs = self._pack_attrs(value)
            self.steps.append(PlannedStep(f"pack_{value}", "Pack", (source,), (name,), attrs))
        return self.packed[value]

    def packed_output(self, value: str) -> str:
        ty = self.graph.types[value]
        shape = packed_shape(self.env, ty.shape)
        return self.slot(self.packed, value, f"{value}:packed", shape, ty.dtype, "packed")

    def weights_of(self, value: str) -> str:
        """``value`` (matrices ``[G, K, N]``) packed into weight blocks, by a CPU step."""
        if value not in self.weights:
            source = self.plain_of(value)
            ty = self.graph.types[value]
            attrs = {"block": self.env.BLOCK_OUT}
            shape = OPERATORS["PackWeights"].infer(PackWeightsAttrs(**attrs), [ty], [None])[0]
            name = self.slot(
                self.weights, value, f"{value}:weights", shape.shape, ty.dtype, "packed"
            )
            self.steps.append(
                PlannedStep(f"pack_weights_{value}", "PackWeights", (source,), (name,), attrs)
            )
        return self.weights[value]

    def operand(self, node: Node, index: int, op: AccelOp) -> str:
        """The slot from which accelerator operator ``op`` reads ``node``'s input ``index``."""
        if index in op.constants:
            return self.constant(node, index, op.constants[index])
        if index in op.runtime_weights:
            return self.weights_of(node.inputs[index])
        return self.packed_of(node.inputs[index])

    def constant(self, node: Node, index: int, array: np.ndarray) -> str:
        name = f"{node.inputs[index]}:packed"
        if name not in self.constants:
            self.slots[name] = (array.shape, str(array.dtype), "packed")
            self.constants[name] = array
        return name


def plan_model(graph: Graph, partition: Partition, env: Env) -> Plan:
    """The steps and the DRAM plan of the quantized, partitioned ``graph`` (module docstring)."""
    layouts = _Layouts(graph, env)
    for node in graph.nodes:
        placement = partition.placement(node.name)
        device = placement.device
        if device == VIEW and node.op is Op.SLICE:
            source = layouts.packed_of(node.inputs[0])
            view = layouts.packed_output(node.outputs[0])
            shape, dtype, _ = layouts.slots[source]
            block_bytes = int(np.prod(shape[2:], dtype=np.int64)) * np.dtype(dtype).itemsize
            start = node.attrs.starts[1] // env.BLOCK_OUT
            layouts.aliases[view] = (source, start * block_bytes)
            continue
        if device == VIEW and node.op is Op.CONCAT:
            # the producers write into consecutive slices of one buffer
            out = layouts.packed_output(node.outputs[0])
            offset = 0
            for value in node.inputs:
                slot = layouts.packed[value]
                layouts.aliases[slot] = (out, offset)
                offset += _slot_bytes(layouts.slots[slot])
            continue
        if device == VIEW:
            source = layouts.packed_of(node.inputs[0])
            view = layouts.packed_output(node.outputs[0])
            layouts.aliases[view] = (source, 0)
            continue
        macs = node_macs(graph, node)
        if device == ACCEL:
            op = placement.accel
            inputs = tuple(layouts.operand(node, k, op) for k in range(len(node.inputs)))
            out = layouts.packed_output(node.outputs[0])
            layouts.steps.append(
                PlannedStep(node.name, node.op.value, inputs, (out,), accel=op, macs=macs)
            )
            continue
        inputs = tuple(
            layouts.plain[v] if v in graph.params else layouts.plain_of(v) for v in node.inputs
        )
        ty = graph.types[node.outputs[0]]
        out = layouts.slot(layouts.plain, node.outputs[0], node.outputs[0], ty.shape, ty.dtype)
        attrs = {k: _jsonable(v) for k, v in kernel_kwargs(node.attrs).items()}
        layouts.steps.append(
            PlannedStep(node.name, node.op.value, inputs, (out,), attrs, macs=macs)
        )
    outputs = tuple(layouts.plain_of(v) for v in graph.outputs)
    inputs = tuple(layouts.plain[v] for v in graph.inputs)
    return _place(graph, env, layouts, inputs, outputs)


def _align(address: int, align: int) -> int:
    return -(-address // align) * align


def _place(
    graph: Graph,
    env: Env,
    layouts: _Layouts,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
) -> Plan:
    align = alignment(env.cfg)
    steps = list(layouts.steps)
    used_params = {
        v for s in steps for v in s.inputs if v in graph.params or v in layouts.constants
    }
    addresses: dict[str, int] = {}
    blob = bytearray()
    for name in [*graph.params, *layouts.constants]:
        if name not in used_params:
            continue
        array = graph.params[name] if name in graph.params else layouts.constants[name]
        blob.extend(bytes(_align(len(blob), align) - len(blob)))
        addresses[name] = len(blob)
        blob.extend(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())
    base = _align(len(blob), align)

    # lifetimes, in step indices, of each storage root (aliases extend their root's)
    located = {name: _resolve(layouts.aliases, name) for name in layouts.slots}
    root = {name: where[0] for name, where in located.items()}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for name in inputs:
        first[name] = -1
    for index, step in enumerate(steps):
        for name in step.outputs:
            first.setdefault(root[name], index)
        for name in (*step.inputs, *step.outputs):
            last[root[name]] = index
    for name in outputs:
        last[root[name]] = len(steps)
    placed: list[tuple[int, int, int, int]] = []  # (start, end, first, last)
    sized = [
        r
        for r in dict.fromkeys(root.values())
        if r not in addresses and r in first and r not in graph.params
    ]
    sized.sort(key=lambda r: -_slot_bytes(layouts.slots[r]))
    end = base
    for r in sized:
        nbytes = _slot_bytes(layouts.slots[r])
        start = base
        for s, e, f, la in sorted(placed):
            overlaps_time = not (la < first[r] or last.get(r, first[r]) < f)
            if overlaps_time and start < e and s < start + nbytes:
                start = _align(e, align)
        placed.append((start, start + nbytes, first[r], last.get(r, first[r])))
        addresses[r] = start
        end = max(end, start + nbytes)
    slots = {}
    for name, (shape, dtype, layout) in layouts.slots.items():
        if root[name] in addresses:
            address = addresses[root[name]] + located[name][1]
            slots[name] = TensorSlot(name, shape, dtype, address, layout)
    return Plan(tuple(steps), slots, bytes(blob), _align(end, align), align, inputs, outputs)


def _resolve(aliases: dict[str, tuple[str, int]], name: str) -> tuple[str, int]:
    """The storage root of slot ``name`` and the slot's byte offset in it (aliases chain: a
    view of a slice of a concatenation)."""
    offset = 0
    while name in aliases:
        name, extra = aliases[name]
        offset += extra
    return name, offset


def _slot_bytes(slot: tuple[tuple[int, ...], str, str]) -> int:
    shape, dtype, _ = slot
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
