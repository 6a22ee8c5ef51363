"""The Vivado build plan of a Zynq board: one TCL script that creates the project and its block
design, runs synthesis, implementation and ``write_bitstream``, and exports the ``.bit``/``.hwh``
pair a PYNQ overlay loads. The script stops with a message saying what to do where the board's
files are not installed (the PS would silently keep defaults that do not match the board), and
where the implemented design misses its clock (worst setup or hold slack below zero, read from
the routed design), before any overlay file is written.

The block design (as FINN's and hls4ml's PYNQ flows build theirs, with VTA's choices where they
differ): the Zynq PS with the board preset applied, its fabric clock set to the configuration's
clock and its interrupt input enabled; the accelerator as a module reference
(:data:`fpga.signature.BD_MODULE`, whose ports carry their interface attributes); a
SmartConnect from the accelerator's AXI4 master to the PS's DRAM port; an AXI interconnect from
the PS's general-purpose master to the AXI4-Lite registers, mapped at the board's control base
address over a window of ``2**isa.CONTROL_ADDR_BITS`` bytes; a ``proc_sys_reset`` for the resets;
``irq`` to the PS's fabric interrupt.

Everything named here comes from :mod:`fpga.boards` (the PS's pins and properties) and
:mod:`fpga.signature` (the accelerator's ports), so the test that sources the script against
recording stubs checks it against the same data.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpga.boards import Board, PsPort, Setting, ZynqPs
from fpga.errors import FpgaError
from fpga.signature import BD_MODULE, CLOCK, IRQ, MASTER, RESET, SLAVE, AcceleratorSignature
from hw import AXI_TOP_NAME
from isa import CONTROL_ADDR_BITS, AccelConfig

__all__ = ["CELLS", "HDL_DIR", "OVERLAY_DIR", "TIMING_REPORT", "VivadoPlan", "project_tcl"]

#: Folders of the project directory: the Verilog sources, and the overlay files it exports.
HDL_DIR, OVERLAY_DIR = "hdl", "overlay"
#: The implemented design's timing summary, in the project directory.
TIMING_REPORT = "timing_summary.rpt"
#: The block design's cells by role (the board driver finds the accelerator by its module).
CELLS = {
    "ps": "ps",
    "accelerator": "accelerator",
    "data": "data_smartconnect",
    "control": "control_interconnect",
    "reset": "reset",
}
_SMARTCONNECT = "xilinx.com:ip:smartconnect"
_INTERCONNECT = "xilinx.com:ip:axi_interconnect"
_PROC_SYS_RESET = "xilinx.com:ip:proc_sys_reset"
_JOBS = 4


@dataclass(frozen=True)
class VivadoPlan:
    """What the TCL builds: ``cfg``'s accelerator on ``board`` through ``port`` (one of the PS's
    data ports), named ``name`` (the project, the block design and the overlay files)."""

    board: Board
    cfg: AccelConfig
    signature: AcceleratorSignature
    port: PsPort
    name: str

    @classmethod
    def make(
        cls, board: Board, cfg: AccelConfig, signature: AcceleratorSignature, port: str | None
    ) -> VivadoPlan:
        """The plan, after checking that the board has a Zynq PS and that the chosen port
        carries the accelerator's bus width; FpgaError otherwise."""
        if board.ps is None:
            raise FpgaError(
                f"board {board.name} ({board.title}) has no Zynq PS: it is built with the open "
                "toolchain, not Vivado"
            )
        chosen = board.ps.data_port(port)
        if signature.master_data_bits not in chosen.widths:
            raise FpgaError(
                f"the accelerator's {signature.master_data_bits}-bit AXI master (axi_width of "
                f"{cfg.fingerprint}) does not fit {board.name}'s {chosen.name}, which takes "
                f"{', '.join(map(str, chosen.widths))} bits"
            )
        return cls(board, cfg, signature, chosen, f"vtaforge_{cfg.fingerprint}")

    @property
    def ps(self) -> ZynqPs:
        assert self.board.ps is not None
        return self.board.ps

    @property
    def control_range(self) -> int:
        return 1 << CONTROL_ADDR_BITS

    @property
    def sources(self) -> tuple[str, ...]:
        """The Verilog files, relative to the project directory."""
        return (f"{HDL_DIR}/{AXI_TOP_NAME}.v", f"{HDL_DIR}/{BD_MODULE}.v")

    @property
    def overlay(self) -> tuple[str, str]:
        """The exported ``.bit`` and ``.hwh``, relative to the project directory."""
        return (f"{OVERLAY_DIR}/{self.name}.bit", f"{OVERLAY_DIR}/{self.name}.hwh")

    def ps_settings(self) -> tuple[Setting, ...]:
        """The PS properties the design sets: the ports it uses, the clock, the interrupt."""
        settings = [*self.ps.control_port.enable, *self.port.enable]
        if self.port.width_setting:
            settings.append((self.port.width_setting, str(self.signature.master_data_bits)))
        settings.append((self.ps.clock_setting, f"{self.cfg.clock_mhz:g}"))
        settings.extend(self.ps.irq_enable)
        return tuple(settings)


def project_tcl(plan: VivadoPlan) -> str:
    """The TCL script of ``plan``; run it as ``vivado -mode batch -source build.tcl`` from any
    folder (its paths are relative to the script)."""
    ps, cell = plan.ps, CELLS
    acc = cell["accelerator"]
    control_pins = ("ACLK", "S00_ACLK", "M00_ACLK")
    lines = [
        f"# Generated by vtaforge: {plan.board.title}, configuration {plan.cfg.fingerprint}.",
        "set here [file dirname [file normalize [info script]]]",
        f"set name {plan.name}",
        f"set part {plan.board.part}",
        f"set board_part {plan.board.board_part or '{}'}",
        f"set jobs {_JOBS}",
        "",
        "# ---- project",
        "create_project $name [file join $here project] -part $part -force",
        "if {$board_part ne {}} {",
        "    if {![llength [get_board_parts -quiet $board_part]]} {",
        '        error "vtaforge: error: the board files of $board_part are not installed in this '
        "Vivado (the PS's preset, pins and DDR settings come from them): install them "
        '(Vivado Store, Boards tab, or into XILINX_BOARD_REPO_PATH) and run the build again"',
        "    }",
        "    set_property board_part $board_part [current_project]",
        "}",
        "add_files -norecurse [list "
        + " ".join(f"[file join $here {path}]" for path in plan.sources)
        + "]",
        "update_compile_order -fileset sources_1",
        "",
        "# ---- block design",
        "create_bd_design $name",
        _cell(ps.ip, cell["ps"]),
        f"apply_bd_automation -rule {ps.automation} -config {{{ps.automation_config}}} "
        f"[get_bd_cells {cell['ps']}]",
        _properties(plan.ps_settings(), cell["ps"]),
        f"create_bd_cell -type module -reference {BD_MODULE} {acc}",
        _cell(_SMARTCONNECT, cell["data"]),
        _properties((("NUM_SI", "1"), ("NUM_MI", "1")), cell["data"]),
        _cell(_INTERCONNECT, cell["control"]),
        _properties((("NUM_SI", "1"), ("NUM_MI", "1")), cell["control"]),
        _cell(_PROC_SYS_RESET, cell["reset"]),
        "",
        "# ---- connections: data, control, clock, resets, interrupt",
        _intf(f"{acc}/{MASTER}", f"{cell['data']}/S00_AXI"),
        _intf(f"{cell['data']}/M00_AXI", f"{cell['ps']}/{plan.port.name}"),
        _intf(f"{cell['ps']}/{ps.control_port.name}", f"{cell['control']}/S00_AXI"),
        _intf(f"{cell['control']}/M00_AXI", f"{acc}/{SLAVE}"),
        _net(
            f"{cell['ps']}/{ps.clock}",
            f"{acc}/{CLOCK}",
            f"{cell['ps']}/{ps.control_port.clock}",
            f"{cell['ps']}/{plan.port.clock}",
            f"{cell['data']}/aclk",
            *(f"{cell['control']}/{pin}" for pin in control_pins),
            f"{cell['reset']}/slowest_sync_clk",
        ),
        _net(f"{cell['ps']}/{ps.reset}", f"{cell['reset']}/ext_reset_in"),
        _net(f"{cell['reset']}/interconnect_aresetn", f"{cell['control']}/ARESETN"),
        _net(
            f"{cell['reset']}/peripheral_aresetn",
            f"{acc}/{RESET}",
            f"{cell['data']}/aresetn",
            f"{cell['control']}/S00_ARESETN",
            f"{cell['control']}/M00_ARESETN",
        ),
        _net(f"{acc}/{IRQ}", f"{cell['ps']}/{ps.irq}"),
        "",
        "# ---- address map",
        f"assign_bd_address -offset {ps.control_base:#010x} -range "
        f"{plan.control_range // 1024}K -target_address_space "
        f"[get_bd_addr_spaces {cell['ps']}/{ps.address_space}] "
        f"[get_bd_addr_segs {{{acc}/{SLAVE}/*}}]",
        f"assign_bd_address -target_address_space [get_bd_addr_spaces {acc}/{MASTER}] "
        f"[get_bd_addr_segs {cell['ps']}/{plan.port.name}/{plan.port.ddr_segment}]",
        "validate_bd_design",
        "save_bd_design",
        "",
        "# ---- wrapper, synthesis, implementation, bitstream",
        "set bd_file [get_files $name.bd]",
        "generate_target all $bd_file",
        "make_wrapper -files $bd_file -top -import",
        "set_property top ${name}_wrapper [current_fileset]",
        "update_compile_order -fileset sources_1",
        *_run("synth_1", ""),
        *_run("impl_1", " -to_step write_bitstream"),
        "",
        "# ---- timing: no overlay from a design that misses its clock",
        "open_run impl_1",
        f"report_timing_summary -max_paths 10 -file [file join $here {TIMING_REPORT}]",
        "set wns [get_property STATS.WNS [get_runs impl_1]]",
        "set whs [get_property STATS.WHS [get_runs impl_1]]",
        "if {$wns < 0 || $whs < 0} {",
        f'    error "vtaforge: error: timing not met at {plan.cfg.clock_mhz:g} MHz: worst negative '
        f"slack $wns ns (setup), $whs ns (hold); see {TIMING_REPORT} (lower clock_mhz or the "
        "configuration's sizes)\"",
        "}",
        'puts "vtaforge: timing met: worst slack $wns ns (setup), $whs ns (hold)"',
        "",
        "# ---- the overlay: the bitstream and the hardware handoff, side by side",
        f"file mkdir [file join $here {OVERLAY_DIR}]",
        "file copy -force [file join [get_property DIRECTORY [get_runs impl_1]] "
        f"${{name}}_wrapper.bit] [file join $here {plan.overlay[0]}]",
        "file copy -force [lindex [get_files -all -of_objects $bd_file *.hwh] 0] "
        f"[file join $here {plan.overlay[1]}]",
        f'puts "vtaforge: wrote {plan.overlay[0]} and {plan.overlay[1]}"',
    ]
    return "\n".join(lines) + "\n"


def _cell(ip: str, name: str) -> str:
    """An IP cell at the version this Vivado has of ``ip`` (a VLNV without its version)."""
    found = f"[get_ipdefs -all -filter {{design_tool_contexts =~ *IPI*}} {ip}:*]"
    return f"create_bd_cell -type ip -vlnv [get_property VLNV {found}] {name}"


def _properties(settings: tuple[Setting, ...], cell: str) -> str:
    values = " ".join(f"CONFIG.{key} {{{value}}}" for key, value in settings)
    return f"set_property -dict [list {values}] [get_bd_cells {cell}]"


def _intf(source: str, target: str) -> str:
    return f"connect_bd_intf_net [get_bd_intf_pins {source}] [get_bd_intf_pins {target}]"


def _net(*pins: str) -> str:
    return "connect_bd_net " + " ".join(f"[get_bd_pins {pin}]" for pin in pins)


def _run(run: str, options: str) -> list[str]:
    """Launch ``run``, wait for it, and stop with an error unless it completed."""
    return [
        f"launch_runs {run}{options} -jobs $jobs",
        f"wait_on_run {run}",
        f'if {{[get_property PROGRESS [get_runs {run}]] ne "100%"}} {{',
        f'    error "vtaforge: error: {run} failed: see [get_property DIRECTORY [get_runs {run}]]"',
        "}",
    ]
