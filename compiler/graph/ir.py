"""The graph IR: what every frontend produces and every graph pass consumes and returns.

A :class:`Graph` is a topologically ordered tuple of :class:`Node`\\ s over named values. Each
value has a :class:`TensorType` (a static shape and a dtype); parameters (weights, constants)
are values with an array in ``Graph.params``. A node carries an :class:`Op`, a frozen attribute
record (one dataclass per kind of operator, never a dict) and the names of the values it reads
and writes. Graphs are immutable: passes build new ones with :class:`GraphBuilder`, which infers
every output's type as a node is added (:mod:`compiler.graph.shapes`), so a shape that does not
fit an operator fails where it is introduced, naming the node. Operators, their attribute
records and their type rules are defined once, in the operator set (:mod:`runtime.opset`);
:data:`Op` has a member for each.

Float operators keep ONNX's names and semantics (NCHW activations, OIHW weights). The quantize
pass introduces the integer operators (``Q*``), whose arithmetic is the accelerator's: int8
operands, int32 accumulation, requantisation by an arithmetic shift right and a clip. Layouts
stay NCHW here: the model compiler's plan packs values where the accelerator reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from compiler.errors import GraphError
from compiler.graph.shapes import infer_types
from runtime.opset import (
    DTYPES,
    OPERATORS,
    AxisAttrs,
    BatchNormAttrs,
    ClipAttrs,
    ConvAttrs,
    GemmAttrs,
    LeakyReluAttrs,
    NoAttrs,
    Operator,
    OperatorError,
    PadAttrs,
    PoolAttrs,
    QAddAttrs,
    QAvgPoolAttrs,
    QConvAttrs,
    QDenseAttrs,
    QuantAttrs,
    ReshapeAttrs,
    TensorType,
    TransposeAttrs,
)

__all__ = [
    "DTYPES",
    "AxisAttrs",
    "BatchNormAttrs",
    "ClipAttrs",
    "ConvAttrs",
    "GemmAttrs",
    "Graph",
    "GraphBuilder",
    "LeakyReluAttrs",
    "NoAttrs",
    "Node",
    "Op",
    "PadAttrs",
    "PoolAttrs",
    "QAddAttrs",
    "QAvgPoolAttrs",
    "QConvAttrs",
    "QDenseAttrs",
    "QuantAttrs",
    "ReshapeAttrs",
    "TensorType",
    "TransposeAttrs",
    "copy_into",
    "node_names",
]


class _OpKind(StrEnum):
    """The behaviour of :data:`Op`'s members (the members come from the operator set)."""

    @property
    def definition(self) -> type[Operator]:
        """The operator's contract: attribute record, arity, type rule, kernel, MACs."""
        return OPERATORS[self.value]


#: Operator kinds: one member per operator of :data:`runtime.opset.OPERATORS`, named by its
#: ``member`` (``Op.CONV``), valued by its name (``"Conv"``: ONNX's for ONNX operators).
Op = _OpKind(
    "Op", [(cls.member, name) for name, cls in OPERATORS.items()], module=__name__, qualname="Op"
)


@dataclass(frozen=True)
class Node:
    """One operator application: reads ``inputs`` and writes ``outputs`` (value names)."""

    name: str
    op: Op
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Any = field(default_factory=NoAttrs)

    def __str__(self) -> str:
        attrs = "" if isinstance(self.attrs, NoAttrs) else f" {self.attrs}"
        return f"{', '.join(self.outputs)} = {self.op.value}({', '.join(self.inputs)}){attrs}"


@dataclass(frozen=True, eq=False)
class Graph:
    """A model: its inputs, outputs, nodes in topological order, every value's type and the
    parameters' arrays. Construct with :class:`GraphBuilder`, which checks all of it."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: tuple[Node, ...]
    types: Mapping[str, TensorType]
    params: Mapping[str, np.ndarray]

    def producer(self, value: str) -> Node | None:
        """The node that writes ``value`` (None for inputs and parameters)."""
        return self._producers.get(value)

    def consumers(self, value: str) -> tuple[Node, ...]:
        """The nodes that read ``value``, in order."""
        return tuple(n for n in self.nodes if value in n.inputs)

    def sole_consumer(self, value: str) -> Node | None:
        """The one node that reads ``value`` (once), None where no node or more than one
        does, or ``value`` is an output of the graph (a pass may then fold it away)."""
        readers = self.consumers(value)
        if len(readers) != 1 or value in self.outputs or readers[0].inputs.count(value) != 1:
            return None
        return readers[0]

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise GraphError(f"graph {self.name!r} has no node {name!r}")

    @cached_property
    def _producers(self) -> dict[str, Node]:
        return {out: node for node in self.nodes for out in node.outputs}

    def __str__(self) -> str:
        lines = [f"graph {self.name}("]
        lines += [f"    {name}: {self.types[name]}," for name in self.inputs]
        lines.append(") {")
        for name, array in self.params.items():
            lines.append(f"  param {name}: {self.types[name]}" + _preview(array))
        for node in self.nodes:
            types = ", ".join(str(self.types[o]) for o in node.outputs)
            lines.append(f"  {node}  # {node.name}: {types}")
        lines.append(f"  return {', '.join(self.outputs)}")
        lines.append("}")
        return "\n".join(lines)


def _preview(array: np.ndarray) -> str:
    return f" = {array.ravel()[0]!r}" if array.size == 1 else ""


class GraphBuilder:
    """Builds a :class:`Graph` node by node, inferring each output's type as it is added.

    ``input`` declares a graph input, ``param`` a parameter (an array, copied and frozen),
    ``add`` a node (its outputs' names default to the node's name, suffixed ``:k`` after the
    first); ``build(outputs)`` returns the graph, keeping only what the outputs need.
    """

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self._inputs: list[str] = []
        self._nodes: list[Node] = []
        self._types: dict[str, TensorType] = {}
        self._params: dict[str, np.ndarray] = {}
        self._node_names: set[str] = set()

    def mark(self) -> int:
        """A position in the node list, for :meth:`nodes_since`."""
        return len(self._nodes)

    def nodes_since(self, mark: int) -> tuple[Node, ...]:
        """The nodes added after :meth:`mark` returned ``mark``."""
        return tuple(self._nodes[mark:])

    def type_of(self, value: str) -> TensorType:
        if value not in self._types:
            raise GraphError(f"value {value!r} is not defined")
        return self._types[value]

    def param_of(self, value: str) -> np.ndarray | None:
        """The array of a parameter, None for any other value."""
        return self._params.get(value)

    def inputs_under(self, value: str) -> tuple[str, ...]:
        """The graph inputs that ``value`` is or is computed from, in declaration order."""
        needed = {value}
        for node in reversed(self._nodes):
            if needed.intersection(node.outputs):
                needed.update(node.inputs)
        return tuple(name for name in self._inputs if name in needed)

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32") -> str:
        try:
            ty = TensorType(tuple(shape), dtype)
        except OperatorError as err:
            raise GraphError(str(err), tensor=name) from None
        self._define(name, ty)
        self._inputs.append(name)
        return name

    def param(self, name: str, array: np.ndarray | Any) -> str:
        """Define the parameter ``name`` holding a copy of ``array``; a Python number or list
        of floats (not an array) becomes float32, as the frameworks hold such constants."""
        if not isinstance(array, np.ndarray | np.generic) and np.array(array).dtype == np.float64:
            array = np.array(array, np.float32)
        array = np.array(array)
        dtype = str(array.dtype)
        if dtype not in DTYPES:
            raise GraphError(f"parameter {name!r} has dtype {dtype}, not one of {DTYPES}")
        array.flags.writeable = False
        self._define(name, TensorType(array.shape, dtype))
        self._params[name] = array
        return name

    def fresh(self, stem: str) -> str:
        """A value or node name not used yet, starting with ``stem``."""
        if stem not in self._types and stem not in self._node_names:
            return stem
        k = 1
        while f"{stem}_{k}" in self._types or f"{stem}_{k}" in self._node_names:
            k += 1
        return f"{stem}_{k}"

    def add(
        self,
        op: Op,
        inputs: Sequence[str],
        attrs: Any = None,
        *,
        name: str | None = None,
        outputs: Sequence[str] | None = None,
    ) -> tuple[str, ...]:
        """Add a node and return its outputs' names."""
        op = Op(op)
        attrs = NoAttrs() if attrs is None else attrs
        name = self.fresh(name or op.value.lower())
        if name in self._node_names:
            raise GraphError("the node name is used twice", node=name, op=op.value)
        for value in inputs:
            if value not in self._types:
                raise GraphError(f"reads {value!r}, which is not defined", node=name, op=op.value)
        in_types = [self._types[v] for v in inputs]
        consts = [self._params.get(v) for v in inputs]
        out_types = infer_types(op, attrs, in_types, consts, node=name)
        folded = self.folded(op, attrs, consts, out_types, node=name)
        if folded is not None:
            output = outputs[0] if outputs else name
            self.param(output, folded)
            return (output,)
        if outputs is None:
            outputs = [name] + [f"{name}:{k}" for k in range(1, len(out_types))]
        if len(outputs) != len(out_types):
            raise GraphError(
                f"has {len(outputs)} outputs, the operator {len(out_types)}", node=name, op=op.value
            )
        for value, ty in zip(outputs, out_types, strict=True):
            self._define(value, ty, node=name)
        node = Node(name, op, tuple(inputs), tuple(outputs), attrs)
        self._nodes.append(node)
        self._node_names.add(name)
        return node.outputs

    def folded(
        self,
        op: Op,
        attrs: Any,
        consts: Sequence[np.ndarray | None],
        types: Sequence[TensorType],
        *,
        node: str,
    ) -> np.ndarray | None:
        """The array a node would compute, where it is to become a parameter instead of a
        node (never, here: a subclass may fold what it knows to be constant)."""
        del op, attrs, consts, types, node
        return None

    def add1(self, op: Op, inputs: Sequence[str], attrs: Any = None, **kw: Any) -> str:
        """:meth:`add` for the (usual) single-output node: its output's name."""
        return self.add(op, inputs, attrs, **kw)[0]

    def build(self, outputs: Iterable[str]) -> Graph:
        outputs = tuple(outputs)
        for value in outputs:
            if value not in self._types:
                raise GraphError(f"output {value!r} is not defined")
        if not outputs:
            raise GraphError("a graph needs at least one output")
        live = set(outputs)
        kept: list[Node] = []
        for node in reversed(self._nodes):
            if live.intersection(node.outputs):
                kept.append(node)
                live.update(node.inputs)
        kept.reverse()
        params = {k: v for k, v in self._params.items() if k in live}
        used = set(self._inputs) | set(params) | {o for n in kept for o in n.outputs}
        types = {k: v for k, v in self._types.items() if k in used}
        return Graph(
            self.name,
            tuple(self._inputs),
            outputs,
            tuple(kept),
            MappingProxyType(types),
            MappingProxyType(params),
        )

    def _define(self, value: str, ty: TensorType, node: str = "") -> None:
        if not isinstance(value, str) or not value:
            raise GraphError(f"value name {value!r} must be a non-empty string", node=node)
        if value in self._types:
            raise GraphError(f"value {value!r} is defined twice", node=node)
        self._types[value] = ty


def node_names(names: object, what: str) -> list[str]:
    """``names`` (an option such as ``cpu_only``) as a list of node names: a string, a
    non-iterable or a name that is no string is a GraphError, never a silent misreading."""
    if isinstance(names, str):
        raise GraphError(f"{what} needs a list of node names, got the string {names!r}")
    try:
        listed = list(names)  # type: ignore[call-overload]
    except TypeError:
        raise GraphError(
            f"{what} needs a list of node names, got {type(names).__name__} {names!r}"
        ) from None
    for name in listed:
        if not isinstance(name, str):
            raise GraphError(f"{what} needs node names (strings), got {name!r}")
    return listed


def copy_into(builder: GraphBuilder, graph: Graph) -> None:
    """Declare ``graph``'s inputs and parameters in ``builder`` (a pass then re-adds nodes)."""
    for name in graph.inputs:
        builder.input(name, graph.types[name].shape, graph.types[name].dtype)
    for name, array in graph.params.items():
        builder.param(name, array)
