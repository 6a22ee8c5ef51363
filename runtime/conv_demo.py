"""The second half of ``make demo``: ResNet-18's C2 layer on the cycle-level simulator.

The layer (56x56, 64 -> 64 channels, 3x3, pad 1, VTA's ``>> shift``, ``+ bias``, clip epilogue)
is built with :func:`runtime.kernels.conv2d_program` for one and for two virtual threads, run
through the cycle-level simulator (which runs the functional simulator), checked against numpy,
and timed: the stats of the two-thread run, the GEMM utilisation of both (latency hiding), a
Chrome trace and timeline of the two-thread run and a roofline of both. A configuration whose
buffers cannot hold C2's tiles gets a small layer instead.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from isa import AccelConfig, BuilderError
from runtime.kernels import KERNEL, RESNET18_C2, ConvShape, conv2d_program
from simulator import CycleSimulator, CycleStats, write_chrome_trace

__all__ = ["ConvData", "conv_demo", "conv_reference", "random_conv_data"]


@dataclasses.dataclass(frozen=True)
class ConvData:
    """A layer's packed operands: input ``(CI/BI, H, W, B, BI)``, weights
    ``(CO/BO, CI/BI, 3, 3, BO, BI)`` and bias ``(CO/BO, BO)``, all int64."""

    inputs: np.ndarray
    weights: np.ndarray
    bias: np.ndarray


def random_conv_data(cfg: AccelConfig, shape: ConvShape, seed: int = 0) -> ConvData:
    """Seeded random int8 inputs and weights and a small bias for ``shape``."""
    rng = np.random.default_rng(seed)
    ci, co = shape.in_channels // cfg.block_in, shape.out_channels // cfg.block_out
    x = rng.integers(-128, 128, (ci, shape.height, shape.width, cfg.batch, cfg.block_in))
    w = rng.integers(-128, 128, (co, ci, KERNEL, KERNEL, cfg.block_out, cfg.block_in))
    return ConvData(x, w, rng.integers(-64, 65, (co, cfg.block_out)))


def conv_reference(data: ConvData, shape: ConvShape) -> np.ndarray:
    """The requantised conv2d in numpy, in the output's packed layout ``(CO/BO, H, W, B, BO)``:
    each of the nine kernel taps multiplies a shifted window of the zero-padded input."""
    h, w = shape.height, shape.width
    padded = np.pad(data.inputs, ((0, 0), (1, 1), (1, 1), (0, 0), (0, 0)))
    taps = [(ky, kx) for ky in range(KERNEL) for kx in range(KERNEL)]
    total = sum(
        np.einsum("cyxbi,ocji->oyxbj", padded[:, y : y + h, x : x + w], data.weights[:, :, y, x])
        for y, x in taps
    )
    return np.clip((total >> shape.shift) + data.bias[:, None, None, None, :], 0, 127)


def _run(cfg: AccelConfig, shape: ConvShape, data: ConvData) -> tuple[CycleStats, bool]:
    """Build and run the layer; (its stats, whether DRAM holds numpy's output)."""
    co = shape.out_channels // cfg.block_out
    bias_rows = np.broadcast_to(data.bias[:, None, :], (co, cfg.batch, cfg.block_out))
    conv = conv2d_program(
        cfg,
        shape,
        data.inputs.astype(f"<i{cfg.inp_width // 8}").tobytes(),
        data.weights.astype(f"<i{cfg.wgt_width // 8}").tobytes(),
        np.ascontiguousarray(bias_rows).astype(f"<i{cfg.acc_width // 8}").tobytes(),
    )
    dram = np.zeros(conv.program.dram_extent, dtype=np.uint8)
    stats = CycleSimulator(cfg).run(conv.program, dram)
    out = dram[conv.output.address : conv.output.end].view(f"<i{cfg.out_width // 8}")
    return stats, np.array_equal(out, conv_reference(data, shape).reshape(-1))


def _layer(cfg: AccelConfig) -> ConvShape:
    """ResNet-18's C2 if ``cfg`` can run it, else a small layer of 2 x 3 channel blocks."""
    try:
        conv2d_program(cfg, RESNET18_C2)
    except BuilderError:
        print(f"\nResNet-18 C2 does not fit {cfg.fingerprint}; a smaller layer instead.")
        return ConvShape(8, 8, 2 * cfg.block_in, 3 * cfg.block_out, tile_h=2)
    return RESNET18_C2


def conv_demo(cfg: AccelConfig, out_dir: Path) -> bool:
    """Run, check, time and draw the layer (module docstring); print as it goes. Returns
    whether both runs' outputs match numpy."""
    shape = _layer(cfg)
    data = random_conv_data(cfg, shape)
    print(
        f"\nConv2d {shape.height}x{shape.width}, {shape.in_channels} -> {shape.out_channels} "
        f"channels, 3x3, pad 1 ({shape.macs(cfg):,} MACs), {shape.tile_h}-row tiles, on the "
        f"cycle-level simulator"
    )
    runs = {}
    ok = True
    for threads in (1, 2):
        stats, matches = _run(cfg, dataclasses.replace(shape, threads=threads), data)
        ok &= matches
        runs[threads] = stats
        print(
            f"  {threads} virtual thread{'s' if threads > 1 else ' '}: output "
            f"{'matches' if matches else 'DIFFERS FROM'} numpy; {stats.cycles:,} cycles, GEMM "
            f"utilisation {100 * stats.gemm_utilisation:.1f} %, {stats.gops:.3g} GOPS"
        )
    print("\nStats of the 2-thread run:")
    print(runs[2].table())
    out_dir.mkdir(parents=True, exist_ok=True)
    trace, timeline, roofline = (
        out_dir / f"conv_{n}" for n in ("trace.json", "timeline.png", "roofline.png")
    )
    write_chrome_trace(runs[2], trace, name="conv2d, 2 threads")
    from simulator.plots import roofline_png, timeline_png  # matplotlib only when drawing

    timeline_png(runs[2], timeline, title="conv2d, 2 virtual threads")
    roofline_png([("1 thread", runs[1]), ("2 threads", runs[2])], roofline)
    print(f"\nwrote {trace} (open it in ui.perfetto.dev), {timeline} and {roofline}")
    return ok
