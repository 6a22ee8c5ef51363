"""Direct 2-D convolution over NCHW for CUDA GPUs (the declaration is the CPU template's).

The padding is inlined into the reads. Each block computes ``threads_oc x reg_oc`` output
channels at ``tile_xy`` output positions (rows and columns fused) of one image; each of its
``threads_oc x tile_xy`` threads one position and ``reg_oc`` of those channels, accumulated in
registers. The input channels advance ``tile_rc`` at a time (more where needed to give every
thread a weight to copy): all threads copy the block's weights for them into shared memory,
wait at a barrier and accumulate; the data is read from global memory (through the cache), each
load feeding ``reg_oc`` accumulators. Where the whole kernel has fewer weights than the block
has threads (a first layer), the weights are read from global memory too.
"""

from __future__ import annotations

from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates.conv2d import conv2d_nchw_compute
from compiler.templates.gpu._schedule import cooperative_fetch
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["GPU_CONV2D_NCHW"]


def _space(data: Tensor, kernel: Tensor, stride: int = 1, padding: int = 0) -> KnobSpace:
    conv2d_nchw_compute(data, kernel, stride, padding)  # checks the shapes
    return KnobSpace(
        (
            Knob("threads_oc", (8, 4, 16)),
            Knob("reg_oc", (4, 2, 8)),
            Knob("tile_xy", (32, 64, 16)),
            Knob("tile_rc", (4, 8, 2)),
            Knob("unroll", (True, False)),
        )
    )


def _declare(
    data: Tensor, kernel: Tensor, cfg: Config, stride: int = 1, padding: int = 0
) -> tuple[Schedule, Tensor]:
    out, padded = conv2d_nchw_compute(data, kernel, stride, padding)
    _, channels, kh, kw = kernel.shape
    _, o, oh, ow = out.shape
    tile_oc = min(cfg["threads_oc"] * cfg["reg_oc"], o)
    reg_oc = min(cfg["reg_oc"], tile_oc)
    tile_xy = min(cfg["tile_xy"], oh * ow)
    threads_oc = -(-tile_oc // reg_oc)
    threads = threads_oc * tile_xy
    tile_rc = min(channels, max(cfg["tile_rc"], -(-threads // (threads_oc * reg_oc * kh * kw))))
    elements = threads_oc * reg_oc * tile_rc * kh * kw  # of the block's weight tile
    s = create_schedule(out)
    if padded is not data:
        s[padded].compute_inline()
    acc = s.cache_write(out, "local")
    staged = elements >= threads  # else too few weights (a first layer) to share out
    weights = s.cache_read(kernel, "shared", [acc]) if staged else None
    b, f, y, x = out.op.axis
    block_f, inner_f = s[out].split(f, tile_oc)
    thread_f, reg_f = s[out].split(inner_f, reg_oc)
    block_xy, thread_xy = s[out].split(s[out].fuse(y, x), tile_xy)
    s[out].reorder(b, block_f, block_xy, thread_f, thread_xy, reg_f)
    s[out].bind(b, "blockIdx.z")
    s[out].bind(block_f, "blockIdx.y")
    s[out].bind(block_xy, "blockIdx.x")
    s[out].bind(thread_f, "threadIdx.y")
    s[out].bind(thread_xy, "threadIdx.x")
    s[acc].compute_at(s[out], thread_xy)
    ab, af, ay, ax = acc.op.axis
    rc, ry, rx = acc.op.reduce_axis
    rc_outer, rc_inner = s[acc].split(rc, tile_rc)
    s[acc].reorder(ab, ay, ax, rc_outer, rc_inner, ry, rx, af)
    if cfg["unroll"]:
        s[acc].unroll(af)
        s[out].unroll(reg_f)
    if weights is not None:
        s[weights].compute_at(s[acc], rc_outer)
        cooperative_fetch(s, weights, (threads_oc, tile_xy), elements)
    return s, out


GPU_CONV2D_NCHW = Template("gpu_conv2d_nchw", _space, _declare)
