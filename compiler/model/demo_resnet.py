"""The first user journey, and the second half of ``make demo``: ResNet-18 from PyTorch to the
cycle-level simulator.

ResNet-18 (torchvision's architecture, seeded weights and batch-norm statistics, from
:mod:`compiler.zoo.resnet`) is exported with ``torch.export``, folded, quantized to int8 on a
few seeded calibration images, partitioned, planned and compiled for the configuration; the
saved model is loaded back with ``runtime.load_model`` and run on the cycle-level simulator.
The demo prints the partition, the per-layer table and the totals beside VTA's published
figure, checks the outputs bit for bit against ``compiler.reference`` of the quantized graph,
compares them with PyTorch's float outputs, and writes the Chrome trace, the timeline and the
roofline.

Run: ``python -m compiler.model.demo_resnet [--config PRESET|FILE] [--out DIR] [--size PIXELS]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from compiler.accel.templates import VTA_RESNET18_CYCLES
from compiler.model.compile import compile_model
from isa import AccelConfig
from runtime.cli.common import demo_arguments

__all__ = ["main", "resnet18_demo"]

_CALIBRATION = 4


def _images(count: int, size: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, 3, size, size)).astype(np.float32) for _ in range(count)]


def resnet18_demo(cfg: AccelConfig, out_dir: Path, size: int = 224) -> bool:
    """Compile, save, load, run, check and draw ResNet-18 (module docstring); print as it goes.
    Returns whether the accelerator's outputs equal the reference's."""
    from compiler.zoo import run_torch
    from compiler.zoo.resnet import resnet18
    from runtime.model import load_model, write_model_plots, write_model_trace

    module = resnet18(seed=0)
    started = time.perf_counter()
    compiled = compile_model(
        module, cfg, calibration=_images(_CALIBRATION, size, seed=1), name="resnet18"
    )
    compile_s = time.perf_counter() - started
    print(f"\nResNet-18 ({size}x{size}) compiled for {cfg.fingerprint} in {compile_s:.1f} s:")
    print("  " + ", ".join(f"{k} {v:.2f} s" for k, v in compiled.stage_seconds.items()))
    print(compiled.partition.report().splitlines()[-1])
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "resnet18.vtaf"
    compiled.save(path)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")

    image = _images(1, size, seed=7)[0]
    model = load_model(path)
    started = time.perf_counter()
    run = model.run(image, device="sim")
    sim_s = time.perf_counter() - started
    report = run.report
    print(f"\nRan on the cycle-level simulator in {sim_s:.1f} s of host time:\n")
    print(report.table())
    conv_cycles = sum(
        s.cycles for s in report.accel_steps[1:] if s.op == "QConv" and s.cycles is not None
    )
    print(
        f"\nconvolutions after the first: {conv_cycles:,} cycles; VTA's published ResNet-18 "
        f"(the same layers): {VTA_RESNET18_CYCLES:,} ({conv_cycles / VTA_RESNET18_CYCLES:.2f}x)"
    )

    got = run.outputs[model.image.outputs[0]]
    expected = compiled.reference(image)[0]
    exact = np.array_equal(got, expected)
    float_out = run_torch(module, image)
    error = np.linalg.norm(got - float_out) / np.linalg.norm(float_out)
    print(
        f"\noutputs {'equal' if exact else 'DIFFER FROM'} compiler.reference of the quantized "
        f"graph bit for bit; against PyTorch's float32: top-1 {int(got.argmax())} vs "
        f"{int(float_out.argmax())}, relative error {error:.3f}"
    )
    trace = out_dir / "resnet18_trace.json"
    write_model_trace(run.cycle_stats, trace, "resnet18", run.report)
    plots = write_model_plots(run.cycle_stats, out_dir / "resnet18_plots")
    print(f"wrote {trace} (open it in ui.perfetto.dev), {plots[0]} and {plots[1]}")
    return exact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ResNet-18 from PyTorch to the simulator")
    parser.add_argument("--config", default="default", help="a preset or a configuration file")
    parser.add_argument("--out", type=Path, default=Path("out"), help="model, trace and plots")
    parser.add_argument("--size", type=int, default=224, help="input pixels (default 224)")
    args = parser.parse_args(argv)
    cfg = demo_arguments(parser, args.config, args.out)  # before any simulation
    return 0 if resnet18_demo(cfg, args.out, args.size) else 1


if __name__ == "__main__":
    raise SystemExit(main())
