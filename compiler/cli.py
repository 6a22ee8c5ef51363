"""``vtaforge compile``: the compiler's subcommand, registered with the command line through the
``vtaforge.commands`` entry point (``runtime`` never imports ``compiler``; see
``runtime.cli.PLUGIN_GROUP``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import Graph
from runtime.cli import Command, progress_bar
from runtime.cli_common import check_output_file

__all__ = ["COMPILE", "add_calibration_option", "calibration_samples"]

_RANDOM_SAMPLES = 4


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL.onnx")
    parser.add_argument(
        "--config", default="default", metavar="PRESET|FILE", help="the accelerator's"
    )
    add_calibration_option(parser)
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="MODEL.vtaf")
    parser.add_argument("--report", action="store_true", help="print the partition report")
    parser.epilog = (
        "Compiles an ONNX model for the accelerator (quantized to int8 with power-of-two scales) "
        "into one file that `vtaforge run` executes."
    )


def add_calibration_option(parser: argparse.ArgumentParser) -> None:
    """``--calibrate DATA.npz``, as every command that quantizes a model takes it (read by
    :func:`calibration_samples`)."""
    parser.add_argument(
        "--calibrate",
        type=Path,
        metavar="DATA.npz",
        help="calibration samples: per model input (by name) an array whose first axis indexes "
        "the samples (a .npy for a single-input model); default: seeded random normal samples",
    )


def calibration_samples(graph: Graph, path: Path | None) -> list[dict[str, np.ndarray]]:
    """The calibration samples of ``--calibrate path`` for ``graph`` (one dict of input arrays
    per sample), or, without a path, the same seeded random samples every command uses (so
    ``vtaforge tune MODEL`` tunes the operators ``vtaforge compile MODEL`` builds)."""
    if path is None:
        rng = np.random.default_rng(0)
        return [
            {n: rng.standard_normal(graph.types[n].shape).astype(np.float32) for n in graph.inputs}
            for _ in range(_RANDOM_SAMPLES)
        ]
    try:
        if path.suffix == ".npy":
            arrays = {graph.inputs[0]: np.load(path, allow_pickle=False)}
        else:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError) as err:
        raise GraphError(f"cannot read calibration data {path}: {err}") from None
    missing = [n for n in graph.inputs if n not in arrays]
    if missing:
        raise GraphError(f"calibration data {path} has no array for input {missing[0]!r}")
    count = min(len(arrays[n]) for n in graph.inputs)
    for name in graph.inputs:
        if arrays[name].shape[1:] != graph.types[name].shape:
            raise GraphError(
                f"calibration array {name!r} has samples of shape {list(arrays[name].shape[1:])}"
                f", the input {list(graph.types[name].shape)}"
            )
    return [{n: arrays[n][k].astype(np.float32) for n in graph.inputs} for k in range(count)]


def _run(args: argparse.Namespace) -> int:
    from compiler.frontend import from_onnx
    from compiler.model import STAGES, compile_model

    check_output_file(args.output, "-o")
    graph = from_onnx(args.model)
    samples = calibration_samples(graph, args.calibrate)
    with progress_bar(len(STAGES), "stage") as advance:
        compiled = compile_model(
            graph, args.config, calibration=samples, name=args.model.stem, progress=advance
        )
    compiled.save(args.output)
    if args.report:
        print(compiled.partition.report())
    parts = compiled.partition
    total = sum(compiled.stage_seconds.values())
    print(
        f"{args.output}: {len(compiled.image.steps)} steps ({parts.count('accel')} on the "
        f"accelerator) for {compiled.cfg.fingerprint}, {compiled.image.dram_bytes / 1e6:.1f} MB "
        f"of DRAM; compiled in {total:.1f} s from {len(samples)} calibration samples"
    )
    return 0


#: ``vtaforge compile MODEL.onnx --config PRESET [--calibrate DATA.npz] -o MODEL.vtaf``.
COMPILE = Command("compile", "compile an ONNX model for the accelerator", _configure, _run)
