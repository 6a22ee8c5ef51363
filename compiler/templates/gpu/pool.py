"""2-D pooling over NCHW for CUDA GPUs (the declaration is the CPU template's): one output
element per thread, its window reduced in a register, the padding inlined into the reads."""

from __future__ import annotations

from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.gpu._schedule import bind_threads, thread_choices
from compiler.templates.knobs import Config, Knob, KnobSpace, Template
from compiler.templates.pool import pool2d_compute

__all__ = ["GPU_POOL2D"]


def _space(
    data: Tensor, kernel: int = 2, stride: int = 2, padding: int = 0, kind: str = "max"
) -> KnobSpace:
    out, _ = pool2d_compute(data, kernel, stride, padding, kind)
    n, c, oh, ow = out.shape
    return KnobSpace((Knob("threads", thread_choices(n * c * oh * ow)),))


def _declare(
    data: Tensor, cfg: Config, kernel: int = 2, stride: int = 2, padding: int = 0, kind: str = "max"
) -> tuple[Schedule, Tensor]:
    out, padded = pool2d_compute(data, kernel, stride, padding, kind)
    s = create_schedule(out)
    if padded is not data:
        s[padded].compute_inline()
    acc = s.cache_write(out, "local")
    thread = bind_threads(s, out, cfg["threads"])
    s[acc].compute_at(s[out], thread)
    return s, out


GPU_POOL2D = Template("gpu_pool2d", _space, _declare)
