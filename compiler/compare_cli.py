"""``vtaforge compare``: where accuracy goes, layer by layer, between an ONNX model and the model
``vtaforge compile`` built from it (:mod:`compiler.model.compare`); registered with the command
line through the ``vtaforge.commands`` entry point, as ``vtaforge compile`` is. What only the
handler needs is imported there, so ``vtaforge --help`` stays quick."""

from __future__ import annotations

import argparse
from pathlib import Path

from runtime.cli import Command
from runtime.cli.common import add_model_inputs

__all__ = ["COMPARE"]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL.onnx", help="the float model")
    parser.add_argument(
        "compiled", type=Path, metavar="MODEL.vtaf", help="the model compiled from it"
    )
    add_model_inputs(parser)
    parser.add_argument(
        "--device",
        default="fsim",
        choices=("fsim", "sim"),
        help="where the compiled model runs (default: fsim)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the comparison as JSON instead of a table"
    )
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="plot SQNR per layer")
    parser.epilog = (
        "Runs the float model (in numpy) and the compiled one (int8 on the accelerator, the "
        "rest on the CPU) on the same input and prints, for every value of the float model "
        "that the compiled model holds, its SQNR in dB, its relative error and the compiled "
        "value's scale, then the worst layer."
    )


def _run(args: argparse.Namespace) -> int:
    from compiler.cli import ONNX_MODEL
    from compiler.model.compare import compare_model
    from isa.files import check_file, read_file
    from runtime.cli.common import CliError, check_output_file, read_model_inputs, writing
    from runtime.cli.run import COMPILED_MODEL
    from runtime.model import ModelImage

    if args.plot is not None:
        check_output_file(args.plot, "--plot")
        if args.plot.suffix.lower() != ".png":
            raise CliError(f"--plot {args.plot}: the name must end in .png")
    check_file(args.model, ONNX_MODEL)  # ONNX reads the path itself
    data = read_file(args.compiled, COMPILED_MODEL)
    image = ModelImage.from_bytes(data, source=str(args.compiled))
    inputs = read_model_inputs(args.input)
    comparison = compare_model(args.model, image, inputs, args.device)
    print(comparison.to_json() if args.json else comparison.table())
    if args.plot is not None:
        with writing(args.plot, "--plot"):
            comparison.plot(args.plot)
        if not args.json:
            print(f"wrote {args.plot}")
    return 0


#: ``vtaforge compare MODEL.onnx MODEL.vtaf --input X.npy [--json] [--plot FILE.png]``.
COMPARE = Command(
    "compare", "compare a compiled model with its float original, layer by layer", _configure, _run
)
