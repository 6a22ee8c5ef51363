"""Elementwise and broadcast operators for CUDA GPUs (the declaration is the CPU template's):
the output's elements fused and dealt out one per thread, ``threads`` per block."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.elementwise import broadcast_compute, broadcast_shape
from compiler.templates.gpu._schedule import bind_threads, thread_choices
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["GPU_ELEMENTWISE"]


def _space(*inputs: Tensor, fn: Callable[..., Any], name: str = "elementwise") -> KnobSpace:
    elements = 1
    for extent in broadcast_shape(*(t.shape for t in inputs)):
        elements *= extent
    return KnobSpace((Knob("threads", thread_choices(elements)),))


def _declare(
    *inputs: Tensor, cfg: Config, fn: Callable[..., Any], name: str = "elementwise"
) -> tuple[Schedule, Tensor]:
    out = broadcast_compute(*inputs, fn=fn, name=name)
    s = create_schedule(out)
    bind_threads(s, out, cfg["threads"])
    return s, out


GPU_ELEMENTWISE = Template("gpu_elementwise", _space, _declare)
