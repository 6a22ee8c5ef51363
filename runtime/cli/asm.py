"""``vtaforge asm``: assemble a text program (:data:`isa.assembly.SYNTAX`) into a binary."""

from __future__ import annotations

import argparse
from pathlib import Path

from isa import AccelConfig, assemble
from isa.assembly import SYNTAX
from runtime.cli.command import Command
from runtime.cli.common import (
    add_config_option,
    check_output_file,
    read_source,
    write_output,
)

__all__ = ["ASM"]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", type=Path, metavar="FILE.s")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.bin")
    add_config_option(parser, default=None)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        f"Without --config the source's .config line decides.\n\nAssembly syntax\n\n{SYNTAX}\n"
        "`vtaforge disasm FILE.bin` writes this syntax; examples/*.s are runnable programs."
    )


def _run(args: argparse.Namespace) -> int:
    check_output_file(args.output, "-o")
    text = read_source(args.source)
    config = AccelConfig.resolve(args.config) if args.config else None
    program = assemble(text, config)
    write_output(args.output, "-o", program.to_bytes())
    print(
        f"{args.output}: {len(program.instructions)} instructions, {len(program.uops)} micro-ops, "
        f"{len(program.segments)} segments, {len(program.regions)} regions "
        f"({program.dram_extent:#x} bytes of DRAM) for {program.fingerprint}"
    )
    return 0


ASM = Command("asm", "assemble a text program into a binary", _configure, _run)
