"""2-D convolution in the NCHW layout and the blocked NCHWc layout (stride, symmetric padding).

NCHW: ``out[n, o, y, x] = sum(pad[n, c, y*s + kh, x*s + kw] * w[o, c, kh, kw])``.
NCHWc: data ``(N, C/ic, H, W, ic)``, kernel ``(O/oc, C/ic, KH, KW, ic, oc)``, output
``(N, O/oc, OH, OW, oc)``; the ``oc`` block is the vector, and a row of ``tile_ow`` output
pixels times one ``oc`` block is the accumulator tile (TVM's x86 schedule).

Defaults come from the target (``target``: None for the host): :func:`nchwc_block` is the
channel block a graph should lay NCHWc tensors out in (two vectors), and the register tiles
(``tile_ow`` x block, ``tile_oc`` x ``tile_ow``) take as many accumulators as the target's
register file holds.
"""

from __future__ import annotations

from compiler import te
from compiler.codegen.machine import MachineModel
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates._util import (
    TargetSpec,
    pad_nchw,
    register_rows,
    schedule_nchwc_rows,
    target_model,
    vector_choices,
)
from compiler.templates.knobs import Config, Knob, KnobSpace, Template
from runtime.opset.windows import window_count

__all__ = [
    "CONV2D_NCHW",
    "CONV2D_NCHWC",
    "conv2d_nchw_compute",
    "nchwc_block",
    "out_size",
    "row_tile_knob",
]


def out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output extent of a convolution or pooling window along one axis (``padding`` on both
    sides)."""
    return window_count(size, kernel, stride, (padding, padding))


def _check(data: Tensor, kernel: Tensor, ndim: int, stride: int, padding: int) -> None:
    kernel_ndim = 4 if ndim == 4 else 6
    for tensor, want in ((data, ndim), (kernel, kernel_ndim)):
        if tensor.ndim != want:
            raise CompileError(
                f"needs {want} dimensions, has {tensor.ndim}", tensor=tensor.name, op="conv2d"
            )
    if stride < 1 or padding < 0:
        raise CompileError(f"stride {stride} / padding {padding} invalid", op="conv2d")


def tile_choices(default: int, extent: int, options: tuple[int, ...]) -> tuple[int, ...]:
    """``default`` first, then the ``options`` that fit ``extent``."""
    return (default, *(t for t in options if t <= extent and t != default))


def nchwc_block(channels: int, target: TargetSpec = None, out_width: int | None = None) -> int:
    """The channel block of the NCHWc layout for ``channels`` on ``target``: two vectors (one
    broadcast input feeds two accumulators), or four where the register tile of two would end
    a row of ``out_width`` output pixels with a partial tile and that of four would not (on
    znver, 14-pixel rows: 0.81x PyTorch with two vectors, 0.99x with four); one vector where
    ``channels`` is not a multiple of two vectors; else the largest power of two dividing it."""
    model = target_model(target)
    lanes = model.lanes
    blocks = [b for b in (2 * lanes, 4 * lanes) if channels % b == 0]
    if not blocks:
        return lanes if channels % lanes == 0 else channels & -channels
    if out_width is None:
        return blocks[0]
    return min(blocks, key=lambda b: -out_width % row_tile(model, out_width, b // lanes))


def row_tile_knob(width: int, block: int, target: TargetSpec, options: tuple[int, ...]) -> Knob:
    """The ``tile_ow`` knob of an NCHWc template whose output rows are ``width`` pixels of
    ``block`` channels: the register tile :func:`row_tile` fits on ``target`` first, then the
    ``options`` that fit the row."""
    model = target_model(target)
    return Knob(
        "tile_ow", tile_choices(row_tile(model, width, -(-block // model.lanes)), width, options)
    )


def row_tile(model: MachineModel, width: int, vectors: int) -> int:
    """Output pixels per register tile of ``vectors`` vectors each (NCHWc ``tile_ow``)."""
    return register_rows(model, width, vectors, range(model.accumulators, 1, -1), exact=False)


# ---------------------------------------------------------------------------------- NCHW
def _nchw_shapes(data: Tensor, kernel: Tensor, stride: int, padding: int) -> tuple[int, ...]:
    _check(data, kernel, 4, stride, padding)
    n, c, h, w = data.shape
    o, kc, kh, kw = kernel.shape
    if kc != c:
        raise CompileError(
            f"kernel has {kc} input channels, data {c}", tensor=kernel.name, axis="1"
        )
    return n, c, h, w, o, kh, kw, out_size(h, kh, stride, padding), out_size(w, kw, stride, padding)


def _nchw_space(
    data: Tensor, kernel: Tensor, stride: int = 1, padding: int = 0, target: TargetSpec = None
) -> KnobSpace:
    *_, o, _, _, _, ow = _nchw_shapes(data, kernel, stride, padding)
    model = target_model(target)
    widths = vector_choices(ow, model.lanes)
    tile_oc = register_rows(model, o, -(-widths[0] // model.lanes), (8, 4, 2), exact=False)
    return KnobSpace(
        (
            Knob("tile_ow", widths),
            Knob("tile_oc", tile_choices(tile_oc, o, (4, 8, 2, 1))),
            Knob("vectorize", (True, False)),
            Knob("unroll", (True, False)),
            Knob("parallel", (True, False)),
        )
    )


def conv2d_nchw_compute(
    data: Tensor, kernel: Tensor, stride: int = 1, padding: int = 0
) -> tuple[Tensor, Tensor]:
    """The NCHW convolution's declaration (unscheduled): ``(out, padded data)`` (the padded
    data is ``data`` itself when ``padding`` is 0)."""
    n, c, _, _, o, kh, kw, oh, ow = _nchw_shapes(data, kernel, stride, padding)
    padded = pad_nchw(data, padding)
    rc = te.reduce_axis(c, "rc")
    ry = te.reduce_axis(kh, "ry")
    rx = te.reduce_axis(kw, "rx")
    out = te.compute(
        (n, o, oh, ow),
        lambda b, f, y, x: te.sum(
            padded[b, rc, y * stride + ry, x * stride + rx] * kernel[f, rc, ry, rx],
            axis=[rc, ry, rx],
        ),
        name="conv2d",
    )
    return out, padded


def _nchw_declare(
    data: Tensor,
    kernel: Tensor,
    cfg: Config,
    stride: int = 1,
    padding: int = 0,
    target: TargetSpec = None,
) -> tuple[Schedule, Tensor]:
    del target  # the space's: ``cfg`` carries what it chose
    out, padded = conv2d_nchw_compute(data, kernel, stride, padding)
    rc, ry, rx = out.op.reduce_axis
    s = create_schedule(out)
    acc = s.cache_write(out, "local")
    b, f, y, x = out.op.axis
    fo, fi = s[out].split(f, cfg["tile_oc"])
    xo, xi = s[out].split(x, cfg["tile_ow"])
    s[out].reorder(b, fo, y, xo, fi, xi)
    s[acc].compute_at(s[out], xo)
    ab, af, ay, ax = acc.op.axis
    s[acc].reorder(ab, ay, rc, ry, rx, af, ax)
    if cfg["vectorize"]:
        s[acc].vectorize(ax)
        s[out].vectorize(xi)
    if cfg["unroll"]:
        s[acc].unroll(af)
    if cfg["parallel"]:
        s[out].parallel(s[out].fuse(b, fo))
    if padded is not data:
        pb, pc, *_ = padded.op.axis
        if cfg["parallel"]:
            s[padded].parallel(s[padded].fuse(pb, pc))
    return s, out


CONV2D_NCHW = Template("conv2d_nchw", _nchw_space, _nchw_declare)


# --------------------------------------------------------------------------------- NCHWc
def _nchwc_shapes(data: Tensor, kernel: Tensor, stride: int, padding: int) -> tuple[int, ...]:
    _check(data, kernel, 5, stride, padding)
    n, c_outer, h, w, ic = data.shape
    o_outer, kc_outer, kh, kw, kic, oc = kernel.shape
    if (kc_outer, kic) != (c_outer, ic):
        raise CompileError(
            f"kernel input blocks {kc_outer}x{kic} differ from data {c_outer}x{ic}",
            tensor=kernel.name,
            op="conv2d",
        )
    oh, ow = out_size(h, kh, stride, padding), out_size(w, kw, stride, padding)
    return n, c_outer, ic, o_outer, oc, kh, kw, oh, ow


def _nchwc_space(
    data: Tensor, kernel: Tensor, stride: int = 1, padding: int = 0, target: TargetSpec = None
) -> KnobSpace:
    *_, oc, _, _, _, ow = _nchwc_shapes(data, kernel, stride, padding)
    return KnobSpace(
        (
            row_tile_knob(ow, oc, target, (14, 7, 28, 8, 16, 4, 2, 1)),
            Knob("unroll_kw", (True, False)),
            Knob("vectorize", (True, False)),
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
    n, c_outer, ic, o_outer, oc, kh, kw, oh, ow = _nchwc_shapes(data, kernel, stride, padding)
    padded = pad_nchw(data, padding)
    ico = te.reduce_axis(c_outer, "ic.outer")
    ici = te.reduce_axis(ic, "ic.inner")
    ry = te.reduce_axis(kh, "ry")
    rx = te.reduce_axis(kw, "rx")
    out = te.compute(
        (n, o_outer, oh, ow, oc),
        lambda b, f, y, x, v: te.sum(
            padded[b, ico, y * stride + ry, x * stride + rx, ici] * kernel[f, ico, ry, rx, ici, v],
            axis=[ico, ry, rx, ici],
        ),
        name="conv2d_NCHWc",
    )
    s = create_schedule(out)
    schedule_nchwc_rows(s, out, data, padded, (ico, ry, rx, ici), rx, cfg)
    return s, out


CONV2D_NCHWC = Template("conv2d_nchwc", _nchwc_space, _nchwc_declare)
