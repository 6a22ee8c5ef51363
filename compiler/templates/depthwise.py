"""Depthwise 2-D convolution (channel multiplier 1) in the NCHW and the blocked NCHWc layouts.

NCHW: ``out[n, c, y, x] = sum(pad[n, c, y*s+kh, x*s+kw] * w[c, 0, kh, kw])``.
NCHWc: data ``(N, C/c, H, W, c)``, kernel ``(C/c, KH, KW, c)``, output ``(N, C/c, OH, OW,
c)``: the channel block is the vector, and a row of ``tile_ow`` output pixels of one block the
accumulator tile, so each loaded weight vector serves ``tile_ow`` pixels."""

from __future__ import annotations

from compiler import te
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates._util import (
    TargetSpec,
    pad_nchw,
    schedule_nchwc_rows,
    schedule_sliding_window,
    target_model,
    vector_choices,
)
from compiler.templates.conv2d import out_size, row_tile_knob
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["DEPTHWISE_CONV2D", "DEPTHWISE_CONV2D_NCHWC"]


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


# --------------------------------------------------------------------------------- NCHWc
def _nchwc_shapes(data: Tensor, kernel: Tensor, stride: int, padding: int) -> tuple[int, ...]:
    if data.ndim != 5 or kernel.ndim != 4 or stride < 1 or padding < 0:
        raise CompileError(
            "depthwise conv2d NCHWc needs (N, C/c, H, W, c) data, a (C/c, KH, KW, c) kernel, "
            "a positive stride",
            op="depthwise_conv2d_nchwc",
        )
    n, k, h, w, v = data.shape
    if (kernel.shape[0], kernel.shape[3]) != (k, v):
        raise CompileError(
            f"kernel shape {kernel.shape} does not match {k} blocks of {v}", tensor=kernel.name
        )
    kh, kw = kernel.shape[1:3]
    return n, k, v, kh, kw, out_size(h, kh, stride, padding), out_size(w, kw, stride, padding)


def _nchwc_space(
    data: Tensor, kernel: Tensor, stride: int = 1, padding: int = 0, target: TargetSpec = None
) -> KnobSpace:
    *_, v, _, _, _, ow = _nchwc_shapes(data, kernel, stride, padding)
    return KnobSpace(
        (
            row_tile_knob(ow, v, target, (8, 4, 7, 14, 2, 1)),
            Knob("unroll_kw", (True, False)),
            Knob("parallel", (True, False)),
        )
    )


def _nchwc_declare(
    data: Tensor,
    kernel: Tensor,
    cfg: Config,
    stride: int = 1,
    padding: int = 0,
    target: TargetSpec = None,
) -> tuple[Schedule, Tensor]:
    del target  # the space's: ``cfg`` carries what it chose
    n, k, v, kh, kw, oh, ow = _nchwc_shapes(data, kernel, stride, padding)
    padded = pad_nchw(data, padding)
    ry = te.reduce_axis(kh, "ry")
    rx = te.reduce_axis(kw, "rx")
    out = te.compute(
        (n, k, oh, ow, v),
        lambda b, f, y, x, c: te.sum(
            padded[b, f, y * stride + ry, x * stride + rx, c] * kernel[f, ry, rx, c],
            axis=[ry, rx],
        ),
        name="depthwise_conv2d_NCHWc",
    )
    s = create_schedule(out)
    schedule_nchwc_rows(s, out, data, padded, (ry, rx), rx, cfg)
    return s, out


DEPTHWISE_CONV2D_NCHWC = Template("depthwise_conv2d_nchwc", _nchwc_space, _nchwc_declare)
