"""Type inference: each node's output types, by its operator's type rule.

:func:`infer_types` is called by :class:`~compiler.graph.ir.GraphBuilder` for every node added,
so each node's outputs carry static shapes and dtypes, and an operator applied to operands it
cannot take fails there with a :class:`GraphError` naming the node and the operator. The rules
themselves belong to the operators (:mod:`runtime.opset`); this module locates their
complaints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.errors import GraphError
from runtime.opset import OPERATORS, OperandError, TensorType, broadcast

__all__ = ["broadcast", "infer_types"]


def infer_types(
    op: str,
    attrs: Any,
    inputs: Sequence[TensorType],
    consts: Sequence[np.ndarray | None],
    *,
    node: str = "",
) -> list[TensorType]:
    """The output types of operator ``op`` (an ``Op`` or its name) applied to values of types
    ``inputs`` (``consts`` holds the arrays of inputs that are parameters, None elsewhere)."""
    name = str(op)
    if name not in OPERATORS:
        raise GraphError("is not an operator of the operator set", node=node, op=name)
    try:
        return OPERATORS[name].output_types(attrs, inputs, consts)
    except OperandError as err:
        shapes = ", ".join(str(t) for t in inputs)
        raise GraphError(f"{err} (inputs {shapes})", node=node, op=name) from None
