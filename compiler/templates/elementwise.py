"""Elementwise and broadcast operators: ``fn`` applied to the elements of one or more tensors
whose shapes broadcast like numpy's (aligned from the right; extent-1 axes stretch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler import te
from compiler.errors import CompileError
from compiler.expr import Expr
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates._util import TargetSpec, target_model, vector_choices
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["ELEMENTWISE", "broadcast_compute", "broadcast_shape"]


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of ``shapes``; incompatible extents raise :class:`CompileError`."""
    ndim = max(len(shape) for shape in shapes)
    result = []
    for dim in range(ndim):
        extents = {
            shape[dim - ndim + len(shape)] for shape in shapes if dim - ndim + len(shape) >= 0
        }
        extents.discard(1)
        if len(extents) > 1:
            raise CompileError(
                f"extents {sorted(extents)} do not broadcast", axis=str(dim), op="broadcast"
            )
        result.append(extents.pop() if extents else 1)
    return tuple(result)


def _space(
    *inputs: Tensor,
    fn: Callable[..., Any],
    name: str = "elementwise",
    target: TargetSpec = None,
) -> KnobSpace:
    shape = broadcast_shape(*(t.shape for t in inputs))
    lanes = target_model(target).lanes
    return KnobSpace(
        (
            Knob("vector", vector_choices(shape[-1] if shape else 1, lanes)),
            Knob("vectorize", (True, False)),
            Knob("parallel", (True, False)),
        )
    )


def broadcast_compute(*inputs: Tensor, fn: Callable[..., Any], name: str = "elementwise") -> Tensor:
    """``fn`` applied to the broadcast elements of ``inputs`` (unscheduled)."""
    shape = broadcast_shape(*(t.shape for t in inputs))

    def element(*idx: Expr) -> Expr:
        values = []
        for tensor in inputs:
            offset = len(shape) - tensor.ndim
            index = tuple(
                0 if extent == 1 else idx[offset + d] for d, extent in enumerate(tensor.shape)
            )
            values.append(tensor[index] if index else tensor[()])
        return fn(*values)

    return te.compute(shape, element, name=name)


def _declare(
    *inputs: Tensor,
    cfg: Config,
    fn: Callable[..., Any],
    name: str = "elementwise",
    target: TargetSpec = None,
) -> tuple[Schedule, Tensor]:
    del target  # the space's: ``cfg`` carries what it chose
    out = broadcast_compute(*inputs, fn=fn, name=name)
    s = create_schedule(out)
    axes = out.op.axis
    if not axes:
        return s, out
    outer, inner = s[out].split(axes[-1], cfg["vector"])
    if cfg["vectorize"]:
        s[out].vectorize(inner)
    if cfg["parallel"]:
        s[out].parallel(s[out].fuse(*axes[:-1], outer))
    return s, out


ELEMENTWISE = Template("elementwise", _space, _declare)
