"""Frontends: models from other frameworks as :class:`compiler.graph.ir.Graph`\\ s.

:func:`from_onnx` reads ONNX models (:mod:`compiler.frontend.onnx`), :func:`from_torch` exports
``torch.nn.Module``\\ s with ``torch.export`` (:mod:`compiler.frontend.torch`), and
:func:`import_model` picks the frontend for whatever it is given. Each frontend imports its
framework when first used (both are in the ``model`` extra), so reading an ONNX model never
pays for importing torch.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import Graph

__all__ = ["from_onnx", "from_torch", "import_model"]


def from_onnx(
    model: Any,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
) -> Graph:
    """See :func:`compiler.frontend.onnx.from_onnx`."""
    from compiler.frontend.onnx import from_onnx as read

    return read(model, input_shapes=input_shapes, constants=constants)


def from_torch(module: Any, example_inputs: tuple) -> Graph:
    """See :func:`compiler.frontend.torch.from_torch`."""
    from compiler.frontend.torch import from_torch as export

    return export(module, example_inputs)


def _is_torch_module(model: Any) -> bool:
    torch = sys.modules.get("torch")  # a module can only exist if torch was imported
    return torch is not None and isinstance(model, torch.nn.Module)


def import_model(
    model: Any,
    example_inputs: Sequence[np.ndarray] = (),
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Graph:
    """``model`` as a graph: a :class:`Graph` as it is; a ``torch.nn.Module`` exported on
    ``example_inputs`` (numpy arrays); anything else read as ONNX (a ModelProto, a path or
    bytes), with ``input_shapes`` fixing dynamic input dimensions."""
    if isinstance(example_inputs, np.ndarray):
        raise GraphError(
            "example_inputs needs a sequence of arrays (one per model input), got one array: "
            "write [array]"
        )
    if isinstance(model, Graph):
        return model
    if _is_torch_module(model):
        import torch

        if not example_inputs:
            raise GraphError("a torch module needs example inputs (its calibration samples)")
        return from_torch(model, tuple(torch.from_numpy(np.asarray(a)) for a in example_inputs))
    return from_onnx(model, input_shapes=input_shapes)
