"""Softmax over the last axis for CUDA GPUs: ``exp(x - max) / sum(exp(x - max))`` per row.

Each thread owns one row (the leading axes fused, ``threads`` rows per block): it reduces the
row's maximum and then its sum of exponentials into registers (two local reduction stages
computed at the thread), and writes the normalised row.
"""

from __future__ import annotations

from compiler import te
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.gpu._schedule import bind_threads, thread_choices
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["GPU_SOFTMAX"]


def _rows(data: Tensor) -> int:
    if data.ndim < 1 or not data.dtype.is_float:
        raise CompileError("softmax needs a float tensor with an axis", tensor=data.name)
    rows = 1
    for extent in data.shape[:-1]:
        rows *= extent
    return rows


def _space(data: Tensor) -> KnobSpace:
    return KnobSpace((Knob("threads", thread_choices(_rows(data), (128, 64, 256, 32))),))


def _declare(data: Tensor, cfg: Config) -> tuple[Schedule, Tensor]:
    _rows(data)
    *lead, width = data.shape
    k_max = te.reduce_axis(width, "k_max")
    k_sum = te.reduce_axis(width, "k_sum")
    row_max = te.compute(
        tuple(lead), lambda *i: te.max(data[(*i, k_max)], axis=k_max), name="row_max"
    )
    row_sum = te.compute(
        tuple(lead),
        lambda *i: te.sum(te.exp(data[(*i, k_sum)] - row_max[i]), axis=k_sum),
        name="row_sum",
    )
    out = te.compute(
        data.shape,
        lambda *i: te.exp(data[i] - row_max[i[:-1]]) / row_sum[i[:-1]],
        name="softmax",
    )
    s = create_schedule(out)
    *lead_axes, _ = out.op.axis
    thread = bind_threads(s, out, cfg["threads"], tuple(lead_axes))
    for stage in (row_max, row_sum):
        s[stage].set_scope("local")
        s[stage].compute_at(s[out], thread)
    return s, out


GPU_SOFTMAX = Template("gpu_softmax", _space, _declare)
