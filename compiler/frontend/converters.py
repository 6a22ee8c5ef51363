"""What the frontends' converter registries share: the check that a converter added only the
graph operators it declares (the support matrix is read from the declarations)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.graph.ir import Node, Op

__all__ = ["check_emits"]


def check_emits(added: Sequence[Node], emits: frozenset[Op], converter: str) -> None:
    """Raise RuntimeError (a bug in the converter, not in the model) where ``added`` holds a
    node of an operator that is not in ``emits``."""
    stray = sorted({node.op.value for node in added} - {op.value for op in emits})
    if stray:
        raise RuntimeError(f"the converter of {converter} added {stray}, not in its emits")
