"""Sourcing a generated Vivado script in ``tclsh`` against stub procedures that record every
call: Vivado cannot be installed here, Tcl can, so the script's own control flow, quoting and
variable substitution run for real and each Vivado command it reaches is logged with its
arguments as Vivado would receive them.

A getter (``get_bd_pins ps/FCLK_CLK0``) returns its last argument (``<current_project>``
without one), so the object it names appears in the calls that use it; ``file copy``/``file
mkdir`` are recorded instead of run. A command the stubs do not know is an error, so the script
uses only the commands listed here.
"""

from __future__ import annotations

import subprocess
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
proc record {name args} {
    set fields [list $name]
    foreach a $args { lappend fields [string map {"\\" "\\\\" "\n" "\\n" "\t" "\\t"} $a] }
    puts $::log [join $fields "\t"]
}
proc action {name args} { record $name {*}$args; return {} }
proc getter {name args} {
    record $name {*}$args
    if {[llength $args]} { return [lindex $args end] }
    return "<$name>"
}
foreach command {@ACTIONS@} { interp alias {} $command {} action $command }
foreach command {@GETTERS@} { interp alias {} $command {} getter $command }
proc get_property {property object} {
    record get_property $property $object
    switch -- $property {
        PROGRESS { return 100% }
        DIRECTORY { return /runs/$object }
        default { return $object }
    }
}
rename file _file
proc file {sub args} {
    if {$sub in {copy mkdir delete}} { record file $sub {*}$args; return {} }
    return [_file $sub {*}$args]
}
source [lindex $argv 1]
close $log
"""


@dataclass(frozen=True)
class Call:
    """One recorded command and its arguments."""

    name: str
    args: tuple[str, ...]

    def option(self, flag: str) -> str:
        """The value after ``flag``."""
        return self.args[self.args.index(flag) + 1]


def source(script: Path, scratch: Path) -> list[Call]:
    """Every Vivado command ``script`` calls, in order."""
    harness = scratch / "harness.tcl"
    text = _HARNESS.replace("@ACTIONS@", " ".join(ACTIONS)).replace("@GETTERS@", " ".join(GETTERS))
    harness.write_text(text)
    log = scratch / "calls.log"
    done = subprocess.run(
        ["tclsh", str(harness), str(log), str(script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"tclsh failed on {script}:\n{done.stdout}{done.stderr}"
    calls = []
    for line in log.read_text().splitlines():
        name, *args = line.split("\t")
        calls.append(Call(name, tuple(_unescape(a) for a in args)))
    return calls


def _unescape(text: str) -> str:
    out, chars = [], iter(text)
    for char in chars:
        if char == "\\":
            char = {"n": "\n", "t": "\t", "\\": "\\"}[next(chars)]
        out.append(char)
    return "".join(out)
