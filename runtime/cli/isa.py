"""``vtaforge isa layout``: every instruction format's bit layout for a configuration."""

from __future__ import annotations

import argparse

from isa import AccelConfig, instruction_set
from runtime.cli.command import Command
from runtime.cli.common import add_config_option

__all__ = ["ISA"]


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    layout = sub.add_parser("layout", help="print every instruction format's bit layout")
    add_config_option(layout)


def _run(args: argparse.Namespace) -> int:
    cfg = AccelConfig.resolve(args.config)
    isa = instruction_set(cfg)
    print(f"# Instruction formats of {cfg.fingerprint}\n")
    for fmt in (*isa.instruction_formats, isa.uop):
        print(f"## {fmt.name} ({fmt.width} bits)\n\n{fmt.table()}\n")
    return 0


ISA = Command("isa", "show the instruction formats", _configure, _run)
