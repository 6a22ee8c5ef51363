"""``vtaforge disasm``: a binary program as assembly text (``--listing``: with each
instruction's index and encoded word)."""

from __future__ import annotations

import argparse
from pathlib import Path

from isa import AccelConfig, Program, disassemble
from runtime.cli.command import Command
from runtime.cli.common import (
    add_config_option,
    check_output_file,
    write_output,
)

__all__ = ["DISASM"]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("binary", type=Path, metavar="FILE.bin")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE.s")
    parser.add_argument(
        "--listing", action="store_true", help="add each instruction's index and encoded word"
    )
    add_config_option(parser, default=None)
    parser.epilog = "With --config, a program built for another configuration is refused."


def _run(args: argparse.Namespace) -> int:
    if args.output:
        check_output_file(args.output, "-o")
    config = AccelConfig.resolve(args.config) if args.config else None
    program = Program.load(args.binary, config=config)
    text = disassemble(program, listing=args.listing)
    if args.output:
        write_output(args.output, "-o", text)
    else:
        print(text, end="")
    return 0


DISASM = Command("disasm", "disassemble a binary program", _configure, _run)
