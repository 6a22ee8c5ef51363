"""2-D pooling over NCHW: ``max`` (padding counts as -inf) and ``avg`` (float32; padding counts
as zeros and the window area divides, like PyTorch's default ``count_include_pad``)."""

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

__all__ = ["POOL2D", "pool2d_compute"]

_KINDS = ("max", "avg")


def _shapes(data: Tensor, kernel: int, stride: int, padding: int, kind: str) -> tuple[int, ...]:
    if data.ndim != 4:
        raise CompileError("pooling needs NCHW data", tensor=data.name, op="pool2d")
    if kind not in _KINDS:
        raise CompileError(f"pooling kind {kind!r} is not one of {_KINDS}", op="pool2d")
    if kind == "avg" and not data.dtype.is_float:
        raise CompileError("average pooling needs float32", tensor=data.name, op="pool2d")
    n, c, h, w = data.shape
    oh, ow = out_size(h, kernel, stride, padding), out_size(w, kernel, stride, padding)
    if oh < 1 or ow < 1:
        raise CompileError(f"a {kernel}x{kernel} window does not fit {h}x{w}", tensor=data.name)
    return n, c, oh, ow


def _space(
    data: Tensor,
    kernel: int = 2,
    stride: int = 2,
    padding: int = 0,
    kind: str = "max",
    target: TargetSpec = None,
) -> KnobSpace:
    *_, ow = _shapes(data, kernel, stride, padding, kind)
    return KnobSpace(
        (
            Knob("tile_ow", vector_choices(ow, target_model(target).lanes)),
            Knob("vectorize", (True, False)),
            Knob("parallel", (True, False)),
        )
    )


def pool2d_compute(
    data: Tensor, kernel: int = 2, stride: int = 2, padding: int = 0, kind: str = "max"
) -> tuple[Tensor, Tensor]:
    """The pooling's declaration (unscheduled): ``(out, padded data)`` (the padded data is
    ``data`` itself when ``padding`` is 0)."""
    n, c, oh, ow = _shapes(data, kernel, stride, padding, kind)
    fill = te.min_value(data.dtype) if kind == "max" else te.const(0, data.dtype)
    padded = pad_nchw(data, padding, fill.value)
    ry = te.reduce_axis(kernel, "ry")
    rx = te.reduce_axis(kernel, "rx")

    def window(b, f, y, x):
        value = padded[b, f, y * stride + ry, x * stride + rx]
        if kind == "max":
            return te.max(value, axis=[ry, rx])
        return te.sum(value * (1.0 / (kernel * kernel)), axis=[ry, rx])

    out = te.compute((n, c, oh, ow), window, name=f"{kind}_pool2d")
    return out, padded


def _declare(
    data: Tensor,
    cfg: Config,
    kernel: int = 2,
    stride: int = 2,
    padding: int = 0,
    kind: str = "max",
    target: TargetSpec = None,
) -> tuple[Schedule, Tensor]:
    del target  # the space's: ``cfg`` carries what it chose
    out, padded = pool2d_compute(data, kernel, stride, padding, kind)
    ry, rx = out.op.reduce_axis
    s = create_schedule(out)
    if padded is not data:
        s[padded].compute_inline()
    schedule_sliding_window(s, out, (ry, rx), cfg)
    return s, out


POOL2D = Template("pool2d", _space, _declare)
