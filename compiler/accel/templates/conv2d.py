"""2-D convolution on the accelerator, in VTA's packed layouts, with the requantising epilogue.

Data ``(N/BATCH, CI/BLOCK_IN, H, W, BATCH, BLOCK_IN)`` int8, kernel ``(CO/BLOCK_OUT,
CI/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)`` int8, bias ``(1, CO/BLOCK_OUT, 1, 1, BATCH,
BLOCK_OUT)`` int32 (optional); the output ``(N/BATCH, CO/BLOCK_OUT, OH, OW, BATCH, BLOCK_OUT)``
is ``clip((conv >> shift) + bias, lo, hi)`` as int8 (``clip((conv + bias) >> shift, lo, hi)``
with ``bias_first``, as quantized models use; with a ``multiplier`` and ``shifts`` laid out as
the bias, the per-channel fixed-point form of :func:`._common.requantize`). Any kernel size,
stride and padding (the DMA pads); channels are whole blocks (pack with
:func:`compiler.accel.layout.pack_nchw`, which pads them with zeros).

The schedule is VTA's ``schedule_conv2d_packed``: output tiles of ``tile_co`` channel blocks x
``tile_h`` rows x ``tile_w`` columns, the reduction in steps of ``tile_ci`` input blocks with the
padded input and the weights loaded per step, the epilogue on the ALU per tile, virtual threads
over row tiles (``h_threads``) and channel tiles (``oc_threads``). With ``weights_resident`` (a
one-step reduction) a channel tile's weights are loaded once and kept across its row tiles,
instead of once per tile as VTA's schedule does. The default knobs are the
configuration that fits the buffers with the fewest estimated cycles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler import te
from compiler.accel.env import Env
from compiler.accel.templates._common import (
    check_fit,
    divisors,
    ordered_space,
    requantize,
    schedule_epilogue,
)
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates import nn, out_size
from compiler.templates.knobs import Config, KnobSpace, Template
from isa import MemId

__all__ = ["CONV2D", "RESNET18_LAYERS", "VTA_RESNET18_CYCLES", "ConvGeometry", "ConvLayer"]


@dataclass(frozen=True)
class ConvLayer:
    """A convolution layer as benchmark tables give it: the input's size (square), channels in
    and out, kernel, stride and padding, and how often it occurs in ResNet-18."""

    name: str
    size: int
    cin: int
    cout: int
    kernel: int
    stride: int
    padding: int
    in_resnet18: int

    @property
    def out_size(self) -> int:
        return out_size(self.size, self.kernel, self.stride, self.padding)


#: VTA's ResNet-18 table (the TVM paper's C1..C12); C3 is not a layer of ResNet-18 itself.
RESNET18_LAYERS = (
    ConvLayer("C1", 224, 3, 64, 7, 2, 3, 1),
    ConvLayer("C2", 56, 64, 64, 3, 1, 1, 4),
    ConvLayer("C3", 56, 64, 64, 1, 1, 0, 0),
    ConvLayer("C4", 56, 64, 128, 3, 2, 1, 1),
    ConvLayer("C5", 56, 64, 128, 1, 2, 0, 1),
    ConvLayer("C6", 28, 128, 128, 3, 1, 1, 3),
    ConvLayer("C7", 28, 128, 256, 3, 2, 1, 1),
    ConvLayer("C8", 28, 128, 256, 1, 2, 0, 1),
    ConvLayer("C9", 14, 256, 256, 3, 1, 1, 3),
    ConvLayer("C10", 14, 256, 512, 3, 2, 1, 1),
    ConvLayer("C11", 14, 256, 512, 1, 2, 0, 1),
    ConvLayer("C12", 7, 512, 512, 3, 1, 1, 3),
)

#: VTA's published tsim cycles for ResNet-18 on its default configuration: C2..C12 as they
#: occur in the network (VTA ran C1, the pooling, the residual adds and the dense layer on the
#: CPU).
VTA_RESNET18_CYCLES = 7_729_601


@dataclass(frozen=True)
class ConvGeometry:
    """The shapes of one convolution, in blocks where the layout blocks them."""

    batch_blocks: int
    ci: int  # input channel blocks
    height: int
    width: int
    co: int  # output channel blocks
    kh: int
    kw: int
    stride: int
    padding: int

    @property
    def out_h(self) -> int:
        return out_size(self.height, self.kh, self.stride, self.padding)

    @property
    def out_w(self) -> int:
        return out_size(self.width, self.kw, self.stride, self.padding)

    def input_rows(self, config: Config) -> int:
        """INP rows of one thread's input tile for one reduction step."""
        h = (config["tile_h"] - 1) * self.stride + self.kh
        w = (config["tile_w"] - 1) * self.stride + self.kw
        return config["tile_ci"] * h * w

    def weight_rows(self, config: Config) -> int:
        return config["tile_co"] * config["tile_ci"] * self.kh * self.kw

    def acc_rows(self, config: Config) -> int:
        return config["tile_co"] * config["tile_h"] * config["tile_w"]


def _geometry(env: Env, data: Tensor, kernel: Tensor, stride: int, padding: int) -> ConvGeometry:
    if data.ndim != 6 or kernel.ndim != 6:
        raise CompileError("data and kernel must be 6-D packed tensors", op="conv2d")
    n, ci, h, w, b, bi = data.shape
    co, kci, kh, kw, bo, kbi = kernel.shape
    if (b, bi) != (env.BATCH, env.BLOCK_IN) or (bo, kbi) != (env.BLOCK_OUT, env.BLOCK_IN):
        raise CompileError(
            f"blocks ({b}, {bi}) / ({bo}, {kbi}) are not the accelerator's "
            f"({env.BATCH}, {env.BLOCK_IN}) / ({env.BLOCK_OUT}, {env.BLOCK_IN})",
            op="conv2d",
        )
    if kci != ci:
        raise CompileError(f"kernel has {kci} input blocks, data {ci}", op="conv2d")
    if stride < 1 or padding < 0:
        raise CompileError(f"stride {stride} and padding {padding} are invalid", op="conv2d")
    geometry = ConvGeometry(n, ci, h, w, co, kh, kw, stride, padding)
    if geometry.out_h < 1 or geometry.out_w < 1:
        raise CompileError("the kernel is larger than the padded input", op="conv2d")
    return geometry


def _threads(config: Config) -> int:
    return config["h_threads"] * config["oc_threads"]


def _check(env: Env, g: ConvGeometry, config: Config, vectors: int = 1) -> None:
    """A CompileError unless ``config`` suits the geometry and its tiles fit the buffers
    (with ``vectors`` per-channel vectors cached per channel tile: bias, multiplier, shifts)."""
    if (g.out_h // config["tile_h"]) % config["h_threads"]:
        raise CompileError(
            f"h_threads={config['h_threads']} needs an even number of row tiles "
            f"({g.out_h // config['tile_h']})",
            op="conv2d",
        )
    if (g.co // config["tile_co"]) % config["oc_threads"]:
        raise CompileError(
            f"oc_threads={config['oc_threads']} needs an even number of channel tiles "
            f"({g.co // config['tile_co']})",
            op="conv2d",
        )
    if config["weights_resident"] and config["tile_ci"] != g.ci:
        raise CompileError(
            "weights_resident keeps a channel tile's weights across the row tiles, so the "
            f"reduction must be one step (tile_ci={g.ci}, not {config['tile_ci']})",
            op="conv2d",
        )
    threads = _threads(config)
    check_fit(
        env,
        "conv2d",
        [
            (MemId.INP, "the input tile", threads * g.input_rows(config)),
            (MemId.WGT, "the weight tile", threads * g.weight_rows(config)),
            (MemId.ACC, "the output tile", threads * g.acc_rows(config)),
            (MemId.ACC, "the bias", threads * config["tile_co"] * vectors),
        ],
    )


def _cycles(env: Env, g: ConvGeometry, config: Config) -> float:
    """A rough estimate of the layer's cycles (for choosing defaults, not a measurement)."""
    cfg = env.cfg
    tiles = (
        (g.co // config["tile_co"]) * (g.out_h // config["tile_h"]) * (g.out_w // config["tile_w"])
    )
    steps = g.ci // config["tile_ci"]
    gemm = g.acc_rows(config) * config["tile_ci"] * g.kh * g.kw + 20
    loads = 1 + config["tile_ci"] + (0 if config["tile_w"] == g.out_w else config["tile_ci"])
    weight_bytes = g.weight_rows(config) * cfg.wgt_elem_bytes
    if config["weights_resident"]:  # loaded once per channel tile, not per row tile
        weight_bytes /= (g.out_h // config["tile_h"]) * (g.out_w // config["tile_w"])
    load = (g.input_rows(config) * cfg.inp_elem_bytes + weight_bytes) / cfg.bus_bytes + 40 * loads
    alu = 6 * g.acc_rows(config) + 40
    store = g.acc_rows(config) * cfg.out_elem_bytes / cfg.bus_bytes + 40
    if _threads(config) > 1:
        return tiles * (steps * max(gemm, load) + alu) + store
    return tiles * (steps * (gemm + load) + alu + store)


def _space(
    data: Tensor, kernel: Tensor, *vectors: Tensor | None, env: Env, **params: Any
) -> KnobSpace:
    g = _geometry(env, data, kernel, params.get("stride", 1), params.get("padding", 0))
    count = max(1, sum(v is not None for v in vectors))
    choices = {
        "tile_h": divisors(g.out_h),
        "tile_w": divisors(g.out_w),
        "tile_co": divisors(g.co),
        "tile_ci": divisors(g.ci),
        "h_threads": (1, 2),
        "oc_threads": (1, 2),
        "weights_resident": (True, False),
    }
    return ordered_space(
        choices,
        lambda c: _check(env, g, c, count),
        lambda c: (_cycles(env, g, c), -c["tile_w"]),
    )


def _declare(
    data: Tensor,
    kernel: Tensor,
    bias: Tensor | None = None,
    multiplier: Tensor | None = None,
    shifts: Tensor | None = None,
    *,
    cfg: Config,
    env: Env,
    stride: int = 1,
    padding: int = 0,
    shift: int = 0,
    lo: int = 0,
    hi: int = 127,
    bias_first: bool = False,
) -> tuple[Schedule, Tensor]:
    g = _geometry(env, data, kernel, stride, padding)
    vectors = (bias, multiplier, shifts)
    _check(env, g, cfg, max(1, sum(v is not None for v in vectors)))
    p = padding
    padded = nn.pad(data, [0, 0, p, p, 0, 0], name="data_pad") if p else _copy(data, "data_pad")
    ic = te.reduce_axis((0, g.ci), name="ic")
    dy = te.reduce_axis((0, g.kh), name="dy")
    dx = te.reduce_axis((0, g.kw), name="dx")
    ici = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    out_shape = (g.batch_blocks, g.co, g.out_h, g.out_w, env.BATCH, env.BLOCK_OUT)
    conv = te.compute(
        out_shape,
        lambda n, co, y, x, b, c: te.sum(
            padded[n, ic, y * stride + dy, x * stride + dx, b, ici].astype(env.acc_dtype)
            * kernel[co, ic, dy, dx, c, ici].astype(env.acc_dtype),
            axis=[ic, dy, dx, ici],
        ),
        name="res_conv",
    )
    stages, res = requantize(
        env, conv, vectors, lambda n, co, y, x, b, c: (0, co, 0, 0, b, c), shift, lo, hi, bias_first
    )
    s = create_schedule(res.op)
    n, co, y, x, b, c = s[res].op.axis
    co_o, co_i = s[res].split(co, factor=cfg["tile_co"])
    y_o, y_i = s[res].split(y, factor=cfg["tile_h"])
    x_o, x_i = s[res].split(x, factor=cfg["tile_w"])
    s[res].reorder(n, co_o, y_o, x_o, co_i, y_i, x_i, b, c)
    if cfg["oc_threads"] > 1:
        co_o, thread = s[res].split(co_o, factor=cfg["oc_threads"])
        s[res].reorder(thread, n)
        s[res].bind(thread, te.thread_axis("cthread"))
    if cfg["h_threads"] > 1:
        y_oo, thread = s[res].split(y_o, factor=cfg["h_threads"])
        # inside the channel tile: the row threads share its resident weights
        s[res].reorder(thread, y_oo) if cfg["weights_resident"] else s[res].reorder(thread, n)
        s[res].bind(thread, te.thread_axis("cthread"))
    s[res].pragma(co_i, env.dma_copy)

    s[conv].set_scope(env.acc_scope)
    s[conv].compute_at(s[res], x_o)
    schedule_epilogue(env, s, stages, res, vectors, x_o, co_o if cfg["weights_resident"] else x_o)
    cn, cco, cy, cx, cb, cc = s[conv].op.axis
    ic_o, ic_i = s[conv].split(ic, factor=cfg["tile_ci"])
    s[conv].reorder(ic_o, cn, cco, cy, ic_i, dy, dx, cx, cb, cc, ici)
    s[conv].tensorize(cb, env.gemm)

    s[padded].set_scope(env.inp_scope)
    s[padded].compute_at(s[conv], ic_o)
    s[padded].pragma(s[padded].op.axis[0], env.dma_copy)
    weights = s.cache_read(kernel, env.wgt_scope, [conv])
    if cfg["weights_resident"]:
        s[weights].compute_at(s[res], co_o)
    else:
        s[weights].compute_at(s[conv], ic_o)
    s[weights].pragma(s[weights].op.axis[0], env.dma_copy)
    return s, res


def _copy(tensor: Tensor, name: str) -> Tensor:
    return te.compute(tensor.shape, lambda *i: tensor(*i), name=name)


#: ``CONV2D(data, kernel, bias, env=env, stride=..., padding=..., shift=..., config=...)``.
CONV2D = Template("conv2d_packed", _space, _declare)
