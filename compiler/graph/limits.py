"""How large a float graph may be, checked from its static types before anything runs.

:func:`check_graph_size` sums the bytes of every tensor of a graph (inputs, parameters and the
values its nodes compute, from their static shapes and dtypes, in exact integers) and refuses a
graph over :data:`MAX_GRAPH_BYTES` with a :class:`GraphError` naming its largest tensor. The
default, 1 GiB (``2**28`` float32 values), is what a compiled model can hold: every value costs
at least one byte of its DRAM image as int8 (before channel padding), and that image is at most
1 GiB (``MAX_MODEL_BYTES`` of ``runtime.model.archive``); calibration holds the float graph's
tensors on the host, and compile time grows with their number. So a ``1x3x100000x100000`` input
or a batch of ``2**20`` fails at once, before any array is allocated, rather than after minutes
or with a MemoryError.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import Graph

__all__ = ["MAX_GRAPH_BYTES", "check_graph_size"]

#: The most bytes a graph's tensors may hold together: 1 GiB (module docstring).
MAX_GRAPH_BYTES = 1 << 30


def check_graph_size(graph: Graph, limit_bytes: int = MAX_GRAPH_BYTES) -> None:
    """Raise :class:`GraphError` when ``graph``'s tensors hold more than ``limit_bytes`` bytes
    together, naming the largest tensor (its type, bytes and elements)."""
    sizes = {name: _nbytes(ty.shape, ty.dtype) for name, ty in graph.types.items()}
    total = sum(sizes.values())
    if total <= limit_bytes:
        return
    largest = max(sizes, key=sizes.__getitem__)
    ty = graph.types[largest]
    raise GraphError(
        f"the graph's tensors hold {total:,} bytes, more than the {limit_bytes:,} a model may "
        f"(the largest: {ty}, {sizes[largest]:,} bytes, {math.prod(ty.shape):,} elements)",
        tensor=largest,
    )


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    """The bytes of a tensor of ``shape`` and ``dtype`` (exact: no product overflows)."""
    return math.prod(shape) * np.dtype(dtype).itemsize
