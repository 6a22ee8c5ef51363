"""``vtaforge fpga``: the FPGA flows' subcommand, registered with the command line through the
``vtaforge.commands`` entry point (``runtime`` never imports ``fpga``).

``vtaforge fpga boards`` lists the boards; ``vtaforge fpga build --board B --config C -o DIR``
writes a Zynq board's Vivado project into ``DIR``, and with ``--run`` builds it when ``vivado``
is on ``PATH`` (otherwise it prints the command that would, and exits 0); for an ECP5 board it
runs the open toolchain into ``DIR`` (:mod:`fpga.ecp5`) and prints Fmax and the cells used.
``vtaforge fpga package --board B MODEL.vtaf [--bitstream DIR | --emulated] -o DIR`` writes what
goes on the board to run a compiled model (:mod:`fpga.package`).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from fpga.boards import BOARDS, Board, Family, board
from fpga.errors import FpgaError
from isa import AccelConfig
from runtime.cli import Command
from runtime.cli.common import check_output_dir
from runtime.progress import elapsed_progress, format_elapsed

__all__ = ["FPGA"]


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("boards", help="list the boards and how each is built")
    build = sub.add_parser("build", help="write a board's build directory (and run it)")
    build.add_argument("--board", required=True, choices=sorted(BOARDS))
    build.add_argument(
        "--config", default="default", metavar="PRESET|FILE", help="the accelerator's"
    )
    build.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    build.add_argument(
        "--port",
        metavar="PORT",
        help="the Zynq PS port for the accelerator's DRAM traffic (default: the board's first, "
        "HP0; S_AXI_ACP is the coherent one on Zynq-7000)",
    )
    build.add_argument(
        "--run", action="store_true", help="run Vivado from PATH (an ECP5 build always runs)"
    )
    package = sub.add_parser("package", help="a compiled model and its runtime for a board")
    package.add_argument("model", type=Path, metavar="MODEL.vtaf")
    package.add_argument("--board", required=True, choices=sorted(BOARDS))
    overlay = package.add_mutually_exclusive_group()
    overlay.add_argument(
        "--bitstream", type=Path, metavar="DIR", help="the overlay `vtaforge fpga build` exported"
    )
    overlay.add_argument(
        "--emulated",
        action="store_true",
        help="an emulated overlay instead, whose logic is the Verilated RTL on this machine: "
        "the bundle runs here with run_model.py --emulate, as on a board",
    )
    package.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")


def _run(args: argparse.Namespace) -> int:
    if args.action == "boards":
        for name, entry in BOARDS.items():
            flow = "open toolchain" if entry.family is Family.ECP5 else "Vivado"
            print(f"{name:<12} {entry.title:<26} {entry.part:<20} {flow}")
        return 0
    chosen = board(args.board)
    check_output_dir(args.output, "-o")
    if args.action == "package":
        return _package(chosen, args)
    cfg = AccelConfig.resolve(args.config)
    if chosen.family is Family.ECP5:
        return _build_ecp5(chosen, cfg, args)
    from fpga.build import run_vivado, write_vivado_project  # Amaranth: only when building

    project = write_vivado_project(chosen, cfg, args.output, port=args.port)
    plan = project.plan
    print(
        f"{args.output}: Vivado project for {chosen.title} ({chosen.part}), {cfg.fingerprint} at "
        f"{cfg.clock_mhz:g} MHz, DRAM through {plan.port.name}, registers at "
        f"{plan.ps.control_base:#010x}"
    )
    command = shlex.join(project.command)
    if not args.run:
        print(f"build it with: cd {shlex.quote(str(args.output))} && {command}")
    elif run_vivado(project, stage=elapsed_progress):
        print(f"wrote {project.bitstream} and {project.hardware_handoff}")
    else:
        print(
            "vivado is not on PATH: nothing was built. On a machine with Vivado, run:\n"
            f"  cd {shlex.quote(str(args.output.resolve()))} && {command}"
        )
    return 0


def _package(chosen: Board, args: argparse.Namespace) -> int:
    from fpga.package import BOARD_PYTHON, write_bundle

    bundle = write_bundle(
        chosen, args.model, args.output, bitstream_dir=args.bitstream, emulated=args.emulated
    )
    emulated = " (emulated)" if args.emulated else ""
    overlay = f", overlay {bundle.bitstream.name}{emulated}" if bundle.bitstream else ", no overlay"
    python = ".".join(map(str, BOARD_PYTHON))
    print(f"{bundle.directory}: {bundle.model.name}{overlay}, runtime for Python >= {python}")
    if args.emulated:
        print(f"here: python3 {bundle.script.name} --emulate --input X.npy -o OUT.npz (README.md)")
    else:
        print(f"on the board: sudo python3 {bundle.script.name} --input X.npy -o OUT.npz")
    return 0


def _build_ecp5(chosen: Board, cfg: AccelConfig, args: argparse.Namespace) -> int:
    from fpga.ecp5 import build_ecp5  # Amaranth: only when building

    if args.port is not None:
        raise FpgaError(f"--port names a Zynq PS port; board {chosen.name} has no PS")
    result = build_ecp5(chosen, cfg, args.output, stage=elapsed_progress)
    steps = ", ".join(f"{tool} {format_elapsed(s)}" for tool, s in result.seconds.items())
    verdict = "meets" if result.fmax_mhz >= result.target_mhz else "misses"
    print(f"{result.bitstream}: {chosen.title} ({chosen.part}), {cfg.fingerprint}")
    print(
        f"Fmax {result.fmax_mhz:.1f} MHz ({verdict} the {result.target_mhz:g} MHz clock); {steps}"
    )
    print(result.table())
    return 0


#: ``vtaforge fpga boards`` and ``vtaforge fpga build --board B --config C -o DIR [--run]``.
FPGA = Command(
    "fpga", "board builds: Vivado projects for Zynq boards, open-toolchain ECP5", _configure, _run
)
