"""The ``vtaforge`` command line.

Subcommands are plain records (:class:`Command`: name, help, argument setup, handler), one
module each (``runtime.cli.asm``, ``runtime.cli.sim``, ...), listed in :data:`COMMANDS`; what
they share is :mod:`runtime.cli.common` (and :mod:`runtime.cli.timing`, the simulator's memory
timing options). A handler returns the exit status. :func:`main` is the top level: a vtaforge
error (any :class:`~isa.VtaforgeError`) or an operating-system error is one line on stderr and
exit status 1; a usage error is one line too (``vtaforge: error: COMMAND: message``, with a
suggestion for a misspelt subcommand, choice or option, and no usage text), with exit status 1
(argparse's ``SystemExit(1)``); anything else is a bug in vtaforge, reported on one line that
says so and where to report it, with exit status 2. ``--debug`` adds the traceback (and an
error's full multi-line message, such as a deadlock's every blocked unit). ``--version`` prints
the installed version. Output paths are checked before a command starts its work.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from importlib import metadata
from typing import NoReturn

from isa import VtaforgeError, did_you_mean
from runtime.cli.asm import ASM
from runtime.cli.command import Command, LazyChoices
from runtime.cli.config import CONFIG
from runtime.cli.demo import DEMO
from runtime.cli.disasm import DISASM
from runtime.cli.hw import HW
from runtime.cli.isa import ISA
from runtime.cli.run import RUN
from runtime.cli.sim import SIM
from runtime.progress import progress_bar
from simulator import DeadlockError

__all__ = [
    "BUG_REPORT",
    "COMMANDS",
    "PLUGIN_GROUP",
    "Command",
    "LazyChoices",
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

#: The built-in commands, in the order ``vtaforge --help`` lists them.
COMMANDS: tuple[Command, ...] = (CONFIG, ISA, ASM, DISASM, DEMO, HW, SIM, RUN)

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
        parser_of = sub.add_parser(command.name, help=command.help, allow_abbrev=False)
        command.configure(parser_of)
        parser_of.set_defaults(handler=command.run)  # dispatch, as tvmc's commands do
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
    prefix = f"vtaforge {args.command}"
    try:
        status = args.handler(args)
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
