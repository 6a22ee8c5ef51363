"""What ONNX converters are made of: the node being converted, and the registry of converters.

A converter reads one ONNX node (an :class:`OnnxNode`) and adds the graph node(s) computing
it, or returns the graph value its output is an alias of. It is registered with
:func:`converts` for an ONNX operator type from an opset on (``since``; the converter of the
newest ``since`` not above the model's opset applies, as TVM's ``_impl_vN`` and onnx's
reference ``_run`` per version do), with the attributes it understands and the graph operators
it may add (``emits``; the importer checks every conversion against it, so the support matrix
read from the registry is true).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from compiler.errors import GraphError, UnsupportedOperator
from compiler.graph.ir import GraphBuilder, Op

__all__ = [
    "CONVERTERS",
    "OnnxConverter",
    "OnnxNode",
    "converter_for",
    "converts",
]


@dataclass
class OnnxNode:
    """One ONNX node being converted: its attributes, its inputs as graph values ("" where an
    optional input is left out) and the helpers its converter needs."""

    proto: onnx.NodeProto
    name: str
    opset: int
    inputs: list[str]
    attrs: dict[str, Any]
    builder: GraphBuilder

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    def unsupported(
        self, message: str, needs_constant: tuple[str, ...] = ()
    ) -> UnsupportedOperator:
        return UnsupportedOperator(
            message,
            op=self.op_type,
            node=self.name,
            opset=self.opset,
            needs_constant=needs_constant,
        )

    def error(self, message: str) -> GraphError:
        return GraphError(message, op=self.op_type, node=self.name)

    def attr(self, key: str, default: Any = None) -> Any:
        """The attribute ``key``, ``default`` where absent (required where that is None)."""
        value = self.attrs.get(key, default)
        if value is None:
            raise self.error(f"needs the attribute {key!r}")
        return value

    def ints(self, key: str, default: Sequence[int] | None, count: int, low: int = 1) -> tuple:
        """The integer-list attribute ``key`` (``default`` where absent): ``count`` integers,
        none below ``low``."""
        values = tuple(int(v) for v in self.attr(key, default))
        if len(values) != count or min(values) < low:
            raise self.error(f"needs {count} integers >= {low} as {key}, got {list(values)}")
        return values

    def rank(self, index: int = 0) -> int:
        return len(self.builder.type_of(self.inputs[index]).shape)

    def shape(self, index: int = 0) -> tuple[int, ...]:
        return self.builder.type_of(self.inputs[index]).shape

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] != ""

    def const(self, index: int, what: str) -> np.ndarray:
        """The array of input ``index`` (``what`` it is), which must be a constant. Where it is
        a graph input, or computed from graph inputs, the refusal names them
        (``needs_constant``) and how to bind them."""
        value = self.inputs[index]
        array = self.builder.param_of(value)
        if array is not None:
            return array
        sources = self.builder.inputs_under(value)
        message = f"needs {what} (input {index}) to be a constant"
        if sources:
            names = ", ".join(repr(s) for s in sources)
            origin = (
                f"the graph input {names}"
                if sources == (value,)
                else f"computed from the graph input{'s' if len(sources) > 1 else ''} {names}"
            )
            bind = ", ".join(f"{s!r}: array" for s in sources)
            message += f"; it is {origin}: bind it with from_onnx(..., constants={{{bind}}})"
        raise self.unsupported(message, needs_constant=sources)

    def scalar(self, index: int, what: str) -> float:
        array = self.const(index, what)
        if array.size != 1:
            raise self.error(f"needs {what} to be a scalar, got shape {list(array.shape)}")
        return array.reshape(()).item()

    def axis(self, axis: int, rank: int) -> int:
        """``axis`` resolved to ``0 <= axis < rank``."""
        if not -rank <= axis < rank:
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        return axis % rank

    def emit(self, op: Op, inputs: Sequence[str], attrs: Any = None) -> None:
        """Add the graph node writing this node's (first) output."""
        self.builder.add(op, inputs, attrs, name=self.name, outputs=[self.proto.output[0]])


#: A converter adds its node's graph nodes and returns None, or returns the graph value that
#: the node's output is an alias of (Identity, inference-mode Dropout).
Converter = Callable[[OnnxNode], str | None]


@dataclass(frozen=True)
class OnnxConverter:
    """How ONNX operator ``op_type`` is read from opset ``since`` on."""

    op_type: str
    since: int
    convert: Converter
    attrs: frozenset[str]
    emits: frozenset[Op]


#: ONNX operator type (default domain) -> its converters, oldest ``since`` first.
CONVERTERS: dict[str, list[OnnxConverter]] = {}


def converts(
    op_type: str, *, emits: Iterable[Op] = (), attrs: Iterable[str] = (), since: int = 1
) -> Callable[[Converter], Converter]:
    """Register the decorated function as ``op_type``'s converter from opset ``since`` on,
    understanding the attributes ``attrs`` and adding nodes of the operators ``emits`` only."""

    def register(convert: Converter) -> Converter:
        entry = OnnxConverter(op_type, since, convert, frozenset(attrs), frozenset(emits))
        versions = CONVERTERS.setdefault(op_type, [])
        if any(v.since == since for v in versions):
            raise TypeError(f"{op_type} has two converters from opset {since}")
        bisect.insort(versions, entry, key=lambda v: v.since)
        return convert

    return register


def converter_for(op_type: str, opset: int) -> OnnxConverter | None:
    """The converter of ``op_type`` that applies at ``opset`` (None where there is none)."""
    versions = CONVERTERS.get(op_type, [])
    applicable = [v for v in versions if v.since <= opset]
    return applicable[-1] if applicable else None
