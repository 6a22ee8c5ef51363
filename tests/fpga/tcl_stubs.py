"""Sourcing a generated Vivado script in ``tclsh`` against stub procedures that record every
call: Vivado cannot be installed here, Tcl can, so the script's own control flow, quoting and
variable substitution run for real and each Vivado command it reaches is logged with its
arguments as Vivado would receive them.

A getter (``get_bd_pins ps/FCLK_CLK0``) returns its last argument (``<current_project>``
without one), so the object it names appears in the calls that use it, unless ``answers`` gives
it another answer (``{"get_board_parts": ""}``: no board files installed); ``get_property``
answers a run's ``PROGRESS`` (100%), ``DIRECTORY``, and its timing (``STATS.WNS``, ``STATS.WHS``:
met, unless ``answers`` says otherwise); ``file copy``/``file mkdir`` are recorded instead of
run. A command the stubs do not know is an error, so the script uses only the commands listed
here. A script that stops with ``error`` raises :class:`TclError` with the calls it made.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Vivado commands that act (recorded, return nothing).
ACTIONS = (
    "create_project",
    "set_property",
    "add_files",
    "update_compile_order",
    "create_bd_design",
    "create_bd_cell",
    "apply_bd_automation",
    "connect_bd_intf_net",
    "connect_bd_net",
    "assign_bd_address",
    "validate_bd_design",
    "save_bd_design",
    "generate_target",
    "make_wrapper",
    "launch_runs",
    "wait_on_run",
    "open_run",
    "report_timing_summary",
)
#: Vivado commands that name objects (recorded, return their last argument).
GETTERS = (
    "get_bd_cells",
    "get_bd_pins",
    "get_bd_intf_pins",
    "get_bd_addr_spaces",
    "get_bd_addr_segs",
    "get_board_parts",
    "get_ipdefs",
    "get_runs",
    "get_files",
    "current_project",
    "current_fileset",
)

_HARNESS = r"""
set log [open [lindex $argv 0] w]
array set answers [lindex $argv 2]
proc record {name args} {
    set fields [list $name]
    foreach a $args { lappend fields [string map {"\\" "\\\\" "\n" "\\n" "\t" "\\t"} $a] }
    puts $::log [join $fields "\t"]
}
proc action {name args} { record $name {*}$args; return {} }
proc getter {name args} {
    record $name {*}$args
    if {[info exists ::answers($name)]} { return $::answers($name) }
    if {[llength $args]} { return [lindex $args end] }
    return "<$name>"
}
foreach command {@ACTIONS@} { interp alias {} $command {} action $command }
foreach command {@GETTERS@} { interp alias {} $command {} getter $command }
proc get_property {property object} {
    record get_property $property $object
    if {[info exists ::answers($property)]} { return $::answers($property) }
    switch -- $property {
        PROGRESS { return 100% }
        DIRECTORY { return /runs/$object }
        STATS.WNS { return 0.512 }
        STATS.WHS { return 0.041 }
        default { return $object }
    }
}
rename file _file
proc file {sub args} {
    if {$sub in {copy mkdir delete}} { record file $sub {*}$args; return {} }
    return [_file $sub {*}$args]
}
try {
    source [lindex $argv 1]
} finally {
    close $log
}
"""


@dataclass(frozen=True)
class Call:
    """One recorded command and its arguments."""

    name: str
    args: tuple[str, ...]

    def option(self, flag: str) -> str:
        """The value after ``flag``."""
        return self.args[self.args.index(flag) + 1]


class TclError(Exception):
    """The script stopped with ``error``: the message, and every command it called before."""

    def __init__(self, message: str, calls: list[Call]) -> None:
        super().__init__(message)
        self.calls = calls


def stub_command(
    script: Path, scratch: Path, log: Path, answers: Mapping[str, str] | None = None
) -> list[str]:
    """The command that sources ``script`` against the stubs (written into ``scratch``), the
    calls logged into ``log``, the stubs answering as ``answers`` says (module docstring)."""
    harness = scratch / "harness.tcl"
    text = _HARNESS.replace("@ACTIONS@", " ".join(ACTIONS)).replace("@GETTERS@", " ".join(GETTERS))
    harness.write_text(text)
    pairs = " ".join(f"{{{key}}} {{{value}}}" for key, value in (answers or {}).items())
    return ["tclsh", str(harness), str(log), str(script), pairs]


def source(script: Path, scratch: Path, answers: Mapping[str, str] | None = None) -> list[Call]:
    """Every Vivado command ``script`` calls, in order, the stubs answering as ``answers`` says
    (module docstring); TclError when the script stops with an error."""
    log = scratch / "calls.log"
    command = stub_command(script, scratch, log, answers)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    calls = []
    for line in log.read_text().splitlines():
        name, *args = line.split("\t")
        calls.append(Call(name, tuple(_unescape(a) for a in args)))
    if done.returncode:
        raise TclError(done.stderr.splitlines()[0] if done.stderr else done.stdout, calls)
    return calls


def _unescape(text: str) -> str:
    out, chars = [], iter(text)
    for char in chars:
        if char == "\\":
            char = {"n": "\n", "t": "\t", "\\": "\\"}[next(chars)]
        out.append(char)
    return "".join(out)
