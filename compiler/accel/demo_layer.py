"""One layer compiled for the accelerator: ResNet-18's C2 (``make demo`` runs the whole network,
:mod:`compiler.model.demo_resnet`).

The layer (56x56, 64 -> 64 channels, 3x3, pad 1, VTA's ``>> 8``, ``+ bias``, clip epilogue) is
declared and scheduled by the conv2d template (:data:`compiler.accel.templates.CONV2D`) with its
default knobs, compiled by :func:`compiler.build`, run on the cycle-level simulator (which runs
the functional simulator) on seeded random data and checked against numpy; the same layer with
one virtual thread shows what latency hiding gains. It writes a Chrome trace and a timeline of
the default run and a roofline of both to ``out/``. A configuration whose buffers cannot hold
C2 gets a small layer instead.

Run: ``python -m compiler.accel.demo_layer [--config PRESET|FILE] [--out DIR] [--small]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from compiler.accel.env import Env
from compiler.accel.function import AccelFunction
from compiler.accel.layout import pack_bias, pack_nchw, pack_oihw, unpack_nchw
from compiler.accel.templates import CONV2D
from compiler.build import build
from compiler.errors import CompileError
from compiler.te import placeholder
from isa import AccelConfig
from runtime.cli.common import demo_arguments

__all__ = ["conv_demo", "main"]

SHIFT = 8


def _compile(env: Env, shape: tuple[int, int, int], threads: bool) -> AccelFunction:
    size, cin, cout = shape
    data = placeholder(
        (1, cin // env.BLOCK_IN, size, size, env.BATCH, env.BLOCK_IN), env.inp_dtype, "data"
    )
    kernel = placeholder(
        (cout // env.BLOCK_OUT, cin // env.BLOCK_IN, 3, 3, env.BLOCK_OUT, env.BLOCK_IN),
        env.wgt_dtype,
        "kernel",
    )
    bias = placeholder(
        (1, cout // env.BLOCK_OUT, 1, 1, env.BATCH, env.BLOCK_OUT), env.acc_dtype, "bias"
    )
    params = {"env": env, "stride": 1, "padding": 1}
    config = CONV2D.space(data, kernel, bias, **params).default()
    if not threads:
        config |= {"h_threads": 1, "oc_threads": 1}
    s, res = CONV2D(data, kernel, bias, shift=SHIFT, config=config, **params)
    return build(s, [data, kernel, bias, res], target=env.target, name="resnet18_c2")


def _reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The requantised 3x3 conv (pad 1) in numpy, NCHW."""
    _, _, h, wd = x.shape
    padded = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = sum(
        np.einsum("nchw,oc->nohw", padded[:, :, dy : dy + h, dx : dx + wd], w[:, :, dy, dx])
        for dy in range(3)
        for dx in range(3)
    )
    return np.clip((acc >> SHIFT) + bias.reshape(1, -1, 1, 1), 0, 127)


def conv_demo(cfg: AccelConfig, out_dir: Path, small: bool = False) -> bool:
    """Compile, run, check, time and draw the layer (module docstring; ``small``: the small
    layer even where C2 fits); print as it goes. Returns whether both runs' outputs match
    numpy."""
    from runtime import open_device
    from simulator import write_chrome_trace
    from simulator.plots import roofline_png, timeline_png

    env = Env(cfg)
    small_layer = (8, 2 * cfg.block_in, 2 * cfg.block_out)
    shape = small_layer if small else (56, 64, 64)
    try:
        functions = {t: _compile(env, shape, t) for t in (True, False)}
    except CompileError as err:
        print(f"\nResNet-18 C2 does not fit {cfg.fingerprint} ({err}); a smaller layer instead.")
        shape = small_layer
        functions = {t: _compile(env, shape, t) for t in (True, False)}
    size, cin, cout = shape
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (cfg.batch, cin, size, size))
    w = rng.integers(-128, 128, (cout, cin, 3, 3))
    bias = rng.integers(-64, 65, cout)
    expected = _reference(x, w, bias)
    inputs = (
        pack_nchw(x.astype(env.inp_dtype), env),
        pack_oihw(w.astype(env.wgt_dtype), env),
        pack_bias(bias.astype(env.acc_dtype), env),
    )
    compiled = functions[True]
    print(
        f"\nConv2d {size}x{size}, {cin} -> {cout} channels, 3x3, pad 1, compiled from the conv2d "
        f"template ({len(compiled.program.instructions)} instructions, "
        f"{len(compiled.program.uops)} micro-ops); its first operations:"
    )
    print("\n".join(compiled.stream().splitlines()[:12]))
    ok, stats = True, {}
    for threads, function in functions.items():
        device = open_device("sim", cfg)
        out = np.zeros(function.arguments[-1].shape, env.out_dtype)
        function(*inputs, out, device=device)
        matches = np.array_equal(unpack_nchw(out, cout), expected)
        ok &= matches
        run = stats[threads] = device.last_stats
        label = "default knobs" if threads else "one thread   "
        print(
            f"  {label}: output {'matches' if matches else 'DIFFERS FROM'} numpy; "
            f"{run.cycles:,} cycles, GEMM utilisation {100 * run.gemm_utilisation:.1f} %, "
            f"{run.gops:.3g} GOPS"
        )
    print("\nStats of the default run:")
    print(stats[True].table())
    out_dir.mkdir(parents=True, exist_ok=True)
    trace, timeline, roofline = (
        out_dir / f"conv_{n}" for n in ("trace.json", "timeline.png", "roofline.png")
    )
    write_chrome_trace(stats[True], trace, name="compiled conv2d")
    timeline_png(stats[True], timeline, title="compiled conv2d, default knobs")
    roofline_png([("1 thread", stats[False]), ("default", stats[True])], roofline)
    print(f"\nwrote {trace} (open it in ui.perfetto.dev), {timeline} and {roofline}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ResNet-18's C2 layer compiled and simulated")
    parser.add_argument("--config", default="default", help="a preset or a configuration file")
    parser.add_argument("--out", type=Path, default=Path("out"), help="trace and plots (out/)")
    parser.add_argument("--small", action="store_true", help="an 8x8 layer instead of C2")
    args = parser.parse_args(argv)
    cfg = demo_arguments(parser, args.config, args.out)  # before any simulation
    return 0 if conv_demo(cfg, args.out, args.small) else 1


if __name__ == "__main__":
    raise SystemExit(main())
