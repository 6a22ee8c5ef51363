"""Depthwise 2-D convolution, NCHW: ``out[n, c, y, x] = sum(pad[n, c, y*s+kh, x*s+kw] *
w[c, 0, kh, kw])`` (channel multiplier 1)."""

from __future__ import annotations

from compiler import te
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates._util import (
    TargetSpec,
    pad_nchw,
    schedule_sliding_window,
    target_model,
    vector_choices,
)
from compiler.templates.conv2d import out_size
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["DEPTHWISE_CONV2D"]


def _shapes(data: Tensor, kernel: Tensor, stride: int, padding: int) -> tuple[int, ...]:
    if data.ndim != 4 or kernel.ndim != 4:
        raise CompileError(
            "depthwise conv2d needs NCHW data and a (C, 1, KH, KW) kernel", op="depthwise_conv2d"
        )
    n, c, h, w = data.shape
    kc, multiplier, kh, kw = kernel.shape
    if kc != c or multiplier != 1:
        raise CompileError(
            f"kernel shape {kernel.shape} does not match {c} channels", tensor=kernel.name
        )
    return n, c, kh, kw, out_size(h, kh, stride, padding), out_size(w, kw, stride, padding)


def _space(
    data: Tensor, kernel: Tensor, stride: int = 1, padding: int = 0, target: TargetSpec = None
) -> KnobSpace:
    *_, ow = _shapes(data, kernel, stride, padding)
    return KnobSpace(
        (
            Knob("tile_ow", vector_choices(ow, target_model(target).lanes)),
            Knob("vectorize", (True, False)),
            Knob("unroll_kw", (True, False)),
            Knob("parallel", (True, False)),
        )
    )


def _declare(
    data: Tensor,
    kernel: Tensor,
    cfg: Config,
    stride: int = 1,
    padding: int = 0,
    target: TargetSpec = None,
) -> tuple[Schedule, Tensor]:
    del target  # the space's: ``cfg`` carries what it chose
    n, c, kh, kw, oh, ow = _shapes(data, kernel, stride, padding)
    padded = pad_nchw(data, padding)
    ry = te.reduce_axis(kh, "ry")
    rx = te.reduce_axis(kw, "rx")
    out = te.compute(
        (n, c, oh, ow),
        lambda b, f, y, x: te.sum(
            padded[b, f, y * stride + ry, x * stride + rx] * kernel[f, 0, ry, rx], axis=[ry, rx]
        ),
        name="depthwise_conv2d",
    )
    s = create_schedule(out)
    schedule_sliding_window(s, out, (ry, rx), cfg)
    if cfg["parallel"] and padded is not data:
        pb, pc, *_ = padded.op.axis
        s[padded].parallel(s[padded].fuse(pb, pc))
    return s, out


DEPTHWISE_CONV2D = Template("depthwise_conv2d", _space, _declare)
