"""What PyTorch converters are made of: the import in progress that they add nodes to, the
helpers that read aten arguments, and the registry of converters.

A converter reads one FX node that calls an aten operator (its arguments by their schema names,
defaults filled in) and returns the IR value of its result. It is registered with
:func:`converts` for one or more aten overloads (in-place variants next to their functional
ones), with the graph operators it may add (``emits``; the importer checks every conversion
against it, so the support matrix read from the registry is true).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import fx

from compiler.errors import GraphError, UnsupportedOperator
from compiler.graph.ir import GraphBuilder, Op

__all__ = [
    "CHECKS",
    "CONVERTERS",
    "Converter",
    "TorchConverter",
    "TorchImport",
    "arguments",
    "converts",
    "f32",
    "meta_type",
    "norm_axis",
    "pair",
    "target_name",
    "unsupported",
]

#: torch dtypes that graph values may have, by their IR names.
DTYPES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.float64: "float64",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.uint16: "uint16",
    torch.uint32: "uint32",
    torch.uint64: "uint64",
    torch.bool: "bool",
}


class TorchImport:
    """An import in progress: the graph being built, the IR value of every FX node imported so
    far, and the parameters, buffers and constants by placeholder name (state-dict name,
    tensor)."""

    def __init__(self, name: str) -> None:
        self.builder = GraphBuilder(name)
        self.values: dict[fx.Node, str] = {}
        self.lifted: dict[str, tuple[str, torch.Tensor]] = {}

    def value(self, arg: Any) -> str:
        """The IR value of an FX node argument (a parameter is declared on first use)."""
        if not isinstance(arg, fx.Node):
            raise GraphError(f"expected a tensor argument, got {arg!r}")
        if arg not in self.values:
            if arg.name not in self.lifted:
                raise GraphError(f"reads FX node {arg.name!r}, which is not imported")
            name, tensor = self.lifted[arg.name]
            self.values[arg] = self.builder.param(name, tensor.detach().cpu().numpy())
        return self.values[arg]

    def operand(self, arg: Any, node: fx.Node, role: str, like: str | None = None) -> str:
        """A tensor operand's value, or a Python scalar as a 0-d parameter named after the
        node and the operand's ``role``, of the dtype of the value ``like`` where given (a
        comparison's scalar is compared in its tensor's dtype, the result being bool), else
        of ``node``'s."""
        if isinstance(arg, fx.Node):
            return self.value(arg)
        dtype = meta_type(node)[1] if like is None else self.builder.type_of(like).dtype
        return self.builder.param(self.builder.fresh(f"{node.name}.{role}"), np.array(arg, dtype))

    def add(self, node: fx.Node, op: Op, inputs: Sequence[str], attrs: Any = None) -> str:
        """Add the IR node of ``node`` (named after it)."""
        return self.builder.add1(op, inputs, attrs, name=node.name)

    def rank(self, arg: Any) -> int:
        return len(self.builder.type_of(self.value(arg)).shape)


#: A converter: the import, the FX node, its arguments by name -> the IR value of its result.
Converter = Callable[[TorchImport, fx.Node, dict[str, Any]], str]


@dataclass(frozen=True)
class TorchConverter:
    """How the aten overloads ``overloads`` are read."""

    overloads: tuple[str, ...]
    convert: Converter
    emits: frozenset[Op]


#: Each supported aten overload's converter.
CONVERTERS: dict[Any, TorchConverter] = {}

#: Operators that ``torch.export`` inserts to assert metadata at run time; they compute no
#: value, and the importer checks every node's static type against torch's anyway.
CHECKS = frozenset({torch.ops.aten._assert_tensor_metadata.default})


def converts(*overloads: str, emits: Iterable[Op] = ()) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of the aten ``overloads`` (named
    ``"op.overload"``), adding nodes of the operators ``emits`` only."""

    def register(convert: Converter) -> Converter:
        entry = TorchConverter(overloads, convert, frozenset(emits))
        for name in overloads:
            packet, overload = name.split(".")
            target = getattr(getattr(torch.ops.aten, packet), overload)
            if target in CONVERTERS:
                raise TypeError(f"aten.{name} has two converters")
            CONVERTERS[target] = entry
        return convert

    return register


def arguments(node: fx.Node) -> dict[str, Any]:
    """``node``'s arguments by their schema names, defaults filled in."""
    schema = node.target._schema
    bound = dict(zip((a.name for a in schema.arguments), node.args, strict=False))
    bound.update(node.kwargs)
    for arg in schema.arguments:
        if arg.name not in bound and arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def meta_type(node: fx.Node) -> tuple[tuple[int, ...], str]:
    """The static shape and IR dtype torch recorded for ``node``'s value."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise GraphError(f"FX node {node.name!r} has no single tensor value")
    if val.dtype not in DTYPES:
        raise GraphError(f"FX node {node.name!r} has dtype {val.dtype}, not one the IR has")
    return tuple(int(d) for d in val.shape), DTYPES[val.dtype]


def target_name(node: fx.Node) -> str:
    """What ``node`` calls: ``aten.<op>.<overload>`` for aten operators."""
    target = node.target
    return str(target) if isinstance(target, torch._ops.OpOverload) else target.__name__


def unsupported(node: fx.Node, what: str) -> UnsupportedOperator:
    return UnsupportedOperator(what, op=str(node.target), node=node.name)


def f32(value: float) -> float:
    """A float attribute as float32 holds it (as ONNX stores it, as the kernels use it)."""
    return float(np.float32(value))


def pair(values: int | Sequence[int]) -> tuple[int, int]:
    """An int or a one- or two-element list of ints as a pair (aten's ``int[2]``)."""
    if isinstance(values, int):
        return values, values
    values = tuple(int(v) for v in values)
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def norm_axis(axis: int, rank: int) -> int:
    """``axis`` resolved against ``rank`` (non-negative)."""
    return axis % rank if rank else axis
