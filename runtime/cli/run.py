"""``vtaforge run``: run a compiled model (``.vtaf``, from ``vtaforge compile``) on a device and
print its outputs' summary, its per-step report, a trace and plots. The model runtime
(:mod:`runtime.model`) is imported only when the command runs."""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from isa.files import FileFormat, read_file
from runtime.cli.command import Command
from runtime.cli.common import (
    CliError,
    add_model_inputs,
    check_output_dir,
    check_output_file,
    check_report_path,
    read_model_inputs,
    write_arrays,
    write_report,
    writing,
)
from runtime.cli.timing import add_timing_options, describe_timing, timing_from
from runtime.progress import progress_bar

if TYPE_CHECKING:
    from runtime.devices.pynq_emulation import EmulatedPynqDevice
    from runtime.model import Model

__all__ = ["COMPILED_MODEL", "RUN"]

#: A compiled model (``vtaforge run``): 1 GiB, ``runtime.model.archive.MAX_MODEL_BYTES``.
COMPILED_MODEL = FileFormat("compiled model", 1 << 30)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL.vtaf")
    parser.add_argument(
        "--device",
        default="sim",
        choices=("fsim", "sim", "rtl", "pynq", "cpu"),
        help="where (default: sim; cpu: a model compiled with --target llvm, on this host)",
    )
    parser.add_argument(
        "--bitstream",
        type=Path,
        metavar="FILE.bit",
        help="with --device pynq on a PYNQ board: the overlay `vtaforge fpga build` exported; "
        "with --emulate, an emulated one (`vtaforge fpga package --emulated`)",
    )
    parser.add_argument(
        "--emulate",
        action="store_true",
        help="with --device pynq: the board driver on an emulated board here, whose logic is "
        "the Verilated RTL (as rtl's), built for the model unless --bitstream names one",
    )
    add_model_inputs(parser)
    parser.add_argument("-o", "--output", type=Path, metavar="OUT.npz", help="save the outputs")
    parser.add_argument(
        "--report",
        nargs="?",
        const=True,
        type=Path,
        metavar="FILE.json|FILE.csv",
        help="print the per-step table; with a file, also write it there with the totals",
    )
    parser.add_argument("--trace", type=Path, metavar="OUT.json", help="a Chrome/Perfetto trace")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="timeline and roofline PNGs")
    add_timing_options(parser)
    parser.epilog = (
        "Runs a compiled model (vtaforge compile) and prints its outputs' summary. On sim the "
        "memory timing is the defaults (an ideal memory) unless --timing/--set/--read-latency "
        "change it; rtl simulates its own AXI memory model, as pynq --emulate does."
    )


def _load_model(path: Path) -> Model:
    """The compiled model at ``path``, read within :data:`COMPILED_MODEL`'s limit."""
    from runtime.model import Model, ModelImage

    return Model(ModelImage.from_bytes(read_file(path, COMPILED_MODEL), source=str(path)))


def _emulated_board(model: Model, bitstream: Path | None) -> EmulatedPynqDevice:
    """The ``pynq`` driver on an emulated board for ``model``'s configuration, its logic the
    emulated ``bitstream`` or built here when None (a context manager: leaving it stops the
    simulator)."""
    from runtime.devices.pynq_emulation import EmulatedPynqDevice

    return EmulatedPynqDevice(model.cfg, bitstream=bitstream)


def _run(args: argparse.Namespace) -> int:
    from runtime.model import write_model_plots, write_model_trace

    if (args.bitstream or args.emulate) and args.device != "pynq":
        raise CliError("--bitstream and --emulate go with --device pynq")
    if args.device == "pynq" and not (args.bitstream or args.emulate):
        raise CliError("--device pynq needs --bitstream FILE.bit (on a PYNQ board) or --emulate")
    if (args.trace or args.plots) and args.device in ("fsim", "pynq", "cpu"):
        raise CliError("--trace and --plots need a timed device (sim or rtl)")
    timed = args.timing is not None or args.set or args.read_latency is not None
    if timed and args.device != "sim":
        raise CliError(
            f"--timing, --set and --read-latency set the sim device's memory timing; "
            f"{args.device} has "
            f"{'none' if args.device in ('fsim', 'cpu') else 'its own AXI memory model'}"
        )
    for option, path in (("-o", args.output), ("--trace", args.trace)):
        if path is not None:
            check_output_file(path, option)
    report_file = args.report if isinstance(args.report, Path) else None
    if report_file is not None:
        check_report_path(report_file)
    if args.plots is not None:
        check_output_dir(args.plots, "--plots")
    options = {}
    if args.device == "sim":
        options["timing"] = timing_from(args.timing, args.read_latency, args.set)
        print(describe_timing(options["timing"]))
    elif args.device == "rtl" or args.emulate:
        from runtime.devices.rtl import AXI_RAM_TIMING

        print(f"{describe_timing(AXI_RAM_TIMING)} (the RTL's AXI memory model)")
    elif args.device == "pynq":
        options["bitstream"] = args.bitstream
    model = _load_model(args.model)
    inputs = read_model_inputs(args.input)
    board = _emulated_board(model, args.bitstream) if args.emulate else nullcontext(args.device)
    with board as device, progress_bar(len(model.image.steps), "step") as advance:
        result = model.run(inputs, device=device, progress=advance, **options)
    report = result.report
    if report_file is not None:
        write_report(report_file, report.rows())
        print(f"wrote {report_file}")
    if args.report:
        print(report.table())
    else:
        summary = report.summary()
        cycles = "" if summary["cycles"] is None else f", {summary['cycles']:,} cycles"
        print(
            f"{args.model}: {summary['accel_steps']} accelerator and {summary['cpu_steps']} CPU "
            f"steps on {args.device}{' (emulated)' if args.emulate else ''}{cycles}"
        )
    for name, array in result.outputs.items():
        top = int(np.argmax(array.reshape(array.shape[0], -1)[0])) if array.size else None
        print(f"output {name}: {array.dtype}{list(array.shape)}, argmax of the first row {top}")
    if args.output:
        write_arrays(args.output, "-o", result.outputs)
        print(f"wrote {args.output}")
    if args.trace or args.plots:
        if not result.cycle_stats:
            raise CliError("--trace and --plots need a timed device (sim)")
        if args.trace:
            with writing(args.trace, "--trace"):
                write_model_trace(result.cycle_stats, args.trace, args.model.name, result.report)
            print(f"wrote {args.trace}")
        if args.plots:
            with writing(args.plots, "--plots"):
                paths = write_model_plots(result.cycle_stats, args.plots)
            for path in paths:
                print(f"wrote {path}")
    return 0


RUN = Command("run", "run a compiled model (.vtaf) on a device", _configure, _run)
