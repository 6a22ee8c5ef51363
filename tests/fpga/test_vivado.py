"""The Vivado build plan of each Zynq board, sourced in tclsh against recording stubs: the block
design it builds must join the accelerator's ports (from the hw top level's signature, read back
from the wrapper module the design references) to the board's PS (from the board data), at the
address map of ``isa.registers``, and run the flow to an exported ``.bit``/``.hwh`` pair."""

from __future__ import annotations

import re

import pytest

from fpga import (
    BOARDS,
    FpgaError,
    VivadoPlan,
    accelerator_signature,
    board,
    project_tcl,
)
from fpga.signature import BD_MODULE, bd_wrapper_verilog
from isa import CONTROL_ADDR_BITS, AccelConfig
from tests.fpga.design import Design, module_ports
from tests.fpga.tcl_stubs import TclError, source
from tests.readme import run_readme_block

#: (board, configuration preset, PS data port or None for the board's default)
CASES = [
    ("pynq-z1", "default", None),
    ("pynq-z2", "default", None),
    ("pynq-z2", "tiny", "S_AXI_ACP"),
    ("ultra96-v2", "default", None),
    ("ultra96-v2", "ultra96", None),
]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(filter(None, c)) for c in CASES])
def built(request, tmp_path_factory):
    name, preset, port = request.param
    cfg = AccelConfig.preset(preset)
    signature = accelerator_signature(cfg)
    plan = VivadoPlan.make(board(name), cfg, signature, port)
    folder = tmp_path_factory.mktemp(f"{name}-{preset}")
    script = folder / "build.tcl"
    script.write_text(project_tcl(plan))
    design = Design(source(script, folder))
    wrapper = module_ports(bd_wrapper_verilog(signature, round(cfg.clock_mhz * 1e6)), BD_MODULE)
    return plan, design, wrapper


def _interfaces(wrapper, kind: str) -> set[str]:
    """The interface names of the wrapper's ports whose X_INTERFACE_INFO is of ``kind``."""
    return {
        p.info.split()[1] for p in wrapper.values() if p.info and p.info.split()[0].endswith(kind)
    }


def test_the_project_targets_the_boards_part_and_preset(built):
    plan, design, _ = built
    (project,) = design.named("create_project")
    assert project.option("-part") == plan.board.part
    preset = [c for c in design.named("set_property") if c.args[0] == "board_part"]
    assert [c.args[1] for c in preset] == [plan.board.board_part]
    added = design.named("add_files")[0].args[-1].split()
    assert [path.rsplit("/", 2)[-2:] for path in added] == [s.split("/") for s in plan.sources]


def test_the_ps_enables_the_ports_it_uses_the_clock_and_the_interrupt(built):
    plan, design, _ = built
    ps = plan.board.ps
    cell = design.cell_of(vlnv=ps.ip)
    (automation,) = design.named("apply_bd_automation")
    assert automation.option("-rule") == ps.automation and automation.args[-1] == cell
    assert "apply_board_preset" in automation.option("-config")
    settings = design.properties[cell]
    for key, value in (*plan.port.enable, *ps.control_port.enable, *ps.irq_enable):
        assert settings[f"CONFIG.{key}"] == value
    assert float(settings[f"CONFIG.{ps.clock_setting}"]) == plan.cfg.clock_mhz
    if plan.port.width_setting:
        assert int(settings[f"CONFIG.{plan.port.width_setting}"]) == plan.cfg.axi_width
    assert plan.cfg.axi_width in plan.port.widths


def test_the_accelerators_master_reaches_dram_and_the_ps_reaches_its_registers(built):
    plan, design, wrapper = built
    ps = design.cell_of(vlnv=plan.board.ps.ip)
    accelerator = design.cell_of(reference=BD_MODULE)
    smartconnect = design.cell_of(vlnv="xilinx.com:ip:smartconnect")
    interconnect = design.cell_of(vlnv="xilinx.com:ip:axi_interconnect")
    addresses = [p for p in wrapper.values() if p.info and p.info.endswith(" ARADDR")]
    # the master drives its read address, the slave receives one of CONTROL_ADDR_BITS
    (master,) = (p.info.split()[1] for p in addresses if p.output)
    (slave,) = (p.info.split()[1] for p in addresses if not p.output)
    assert wrapper[f"{slave}_araddr"].width == CONTROL_ADDR_BITS
    assert design.connected(f"{accelerator}/{master}", f"{smartconnect}/S00_AXI")
    assert design.connected(f"{smartconnect}/M00_AXI", f"{ps}/{plan.port.name}")
    assert design.connected(f"{ps}/{plan.board.ps.control_port.name}", f"{interconnect}/S00_AXI")
    assert design.connected(f"{interconnect}/M00_AXI", f"{accelerator}/{slave}")
    assert len(design.interface_nets) == 4


def test_one_clock_drives_every_axi_port_and_the_resets_come_from_proc_sys_reset(built):
    plan, design, wrapper = built
    ps, accelerator = design.cell_of(vlnv=plan.board.ps.ip), design.cell_of(reference=BD_MODULE)
    reset = design.cell_of(vlnv="xilinx.com:ip:proc_sys_reset")
    (clock,) = _interfaces(wrapper, "clock:1.0")
    (resetn,) = _interfaces(wrapper, "reset:1.0")
    clocked = design.net_of(f"{ps}/{plan.board.ps.clock}")
    assert {
        f"{accelerator}/{clock}",
        f"{ps}/{plan.port.clock}",
        f"{ps}/{plan.board.ps.control_port.clock}",
        f"{reset}/slowest_sync_clk",
    } <= clocked
    bus_cells = {
        design.cell_of(vlnv=f"xilinx.com:ip:{ip}") for ip in ("smartconnect", "axi_interconnect")
    }
    clock_pins = {p for net in design.nets for p in net if p.lower().endswith("aclk")}
    assert {p for p in clock_pins if p.split("/")[0] in bus_cells} <= clocked
    assert design.net_of(f"{ps}/{plan.board.ps.reset}") == {
        f"{ps}/{plan.board.ps.reset}",
        f"{reset}/ext_reset_in",
    }
    peripheral = design.net_of(f"{reset}/peripheral_aresetn")
    assert f"{accelerator}/{resetn}" in peripheral
    reset_pins = {p for net in design.nets for p in net if p.lower().endswith("aresetn")}
    assert {p for p in reset_pins if p.split("/")[0] in bus_cells} <= set().union(
        peripheral, design.net_of(f"{reset}/interconnect_aresetn")
    )


def test_the_interrupt_goes_to_the_ps(built):
    plan, design, wrapper = built
    (irq,) = _interfaces(wrapper, "interrupt:1.0")
    accelerator = design.cell_of(reference=BD_MODULE)
    ps = design.cell_of(vlnv=plan.board.ps.ip)
    assert design.net_of(f"{accelerator}/{irq}") == {
        f"{accelerator}/{irq}",
        f"{ps}/{plan.board.ps.irq}",
    }


def test_the_address_map_puts_the_registers_at_the_control_base(built):
    plan, design, wrapper = built
    ps, accelerator = design.cell_of(vlnv=plan.board.ps.ip), design.cell_of(reference=BD_MODULE)
    registers, dram = design.named("assign_bd_address")
    assert int(registers.option("-offset"), 16) == plan.board.ps.control_base
    size, unit = re.fullmatch(r"(\d+)([KM])", registers.option("-range")).groups()
    window = int(size) << {"K": 10, "M": 20}[unit]
    assert window == 2 ** wrapper["s_axi_araddr"].width  # the slave decodes the whole window
    assert plan.board.ps.control_base % window == 0
    assert registers.option("-target_address_space") == f"{ps}/{plan.board.ps.address_space}"
    assert registers.args[-1].startswith(f"{accelerator}/s_axi/")
    assert dram.option("-target_address_space") == f"{accelerator}/m_axi"
    assert dram.args[-1] == f"{ps}/{plan.port.name}/{plan.port.ddr_segment}"


def test_the_flow_validates_builds_the_bitstream_and_exports_the_overlay(built):
    plan, design, _ = built
    last_edit = max(design.index(n, last=True) for n in ("connect_bd_net", "assign_bd_address"))
    assert last_edit < design.index("validate_bd_design") < design.index("make_wrapper")
    wrapper = design.named("make_wrapper")[0]
    assert "-top" in wrapper.args
    runs = design.named("launch_runs")
    assert [r.args[0] for r in runs] == ["synth_1", "impl_1"]
    assert runs[1].option("-to_step") == "write_bitstream"
    copies = [c.args for c in design.calls if c.name == "file" and c.args[0] == "copy"]
    assert design.index("launch_runs", last=True) < design.index("file", last=True)
    targets = [args[-1] for args in copies]
    assert [t.rsplit("/", 2)[-2:] for t in targets] == [p.split("/") for p in plan.overlay]
    stems = {t.rsplit(".", 1)[0] for t in targets}
    assert len(stems) == 1  # PYNQ finds NAME.hwh next to NAME.bit
    assert copies[0][-2].endswith(f"{plan.name}_wrapper.bit") and copies[1][-2] == "*.hwh"
    # the routed design's slack is read before any overlay file is written
    stats = [
        i for i, c in enumerate(design.calls) if c.name == "get_property" and "STATS" in c.args[0]
    ]
    assert design.index("launch_runs", last=True) < design.index("open_run") < min(stats)
    assert design.index("report_timing_summary") < min(stats)
    assert max(stats) < design.index("file")


def _script(tmp_path, name="pynq-z2", preset="default"):
    cfg = AccelConfig.preset(preset)
    plan = VivadoPlan.make(board(name), cfg, accelerator_signature(cfg), None)
    script = tmp_path / "build.tcl"
    script.write_text(project_tcl(plan))
    return script


def test_missing_board_files_stop_the_build_before_the_design(tmp_path):
    """Without the board files the PS would keep defaults that do not match the board (its DDR,
    its MIO pins): the build stops with what to install, before any block design exists."""
    with pytest.raises(TclError, match=r"board files of tul.com.tw:pynq-z2:part0:1.0 are not inst"):
        source(_script(tmp_path), tmp_path, answers={"get_board_parts": ""})
    script = _script(tmp_path, "pynq-z1")
    with pytest.raises(TclError, match="install them") as caught:
        source(script, tmp_path, answers={"get_board_parts": ""})
    made = {call.name for call in caught.value.calls}
    assert "create_project" in made and not made & {"create_bd_design", "launch_runs"}


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ({"STATS.WNS": "-0.731"}, r"-0.731 ns \(setup\), 0.041 ns \(hold\)"),
        ({"STATS.WHS": "-0.02"}, r"0.512 ns \(setup\), -0.02 ns \(hold\)"),
    ],
)
def test_a_design_that_misses_its_clock_writes_no_overlay(tmp_path, answers, said):
    """Setup or hold slack below zero on the routed design: an error naming both, and no
    overlay folder or file (PYNQ would load a bitstream that fails at random)."""
    with pytest.raises(
        TclError, match=f"timing not met at 100 MHz: worst negative slack {said}"
    ) as caught:
        source(_script(tmp_path), tmp_path, answers=answers)
    calls = caught.value.calls
    assert [c.args[0] for c in calls if c.name == "launch_runs"] == ["synth_1", "impl_1"]
    assert not [c for c in calls if c.name == "file"]  # no overlay folder, no copies


def test_the_plan_refuses_what_cannot_be_built():
    wide = AccelConfig.preset("ultra96")  # a 128-bit master
    with pytest.raises(FpgaError, match="128-bit AXI master .* S_AXI_HP0, which takes 32, 64"):
        VivadoPlan.make(board("pynq-z2"), wide, accelerator_signature(wide), None)
    cfg = AccelConfig.preset("tiny")
    with pytest.raises(FpgaError, match="no Zynq PS: it is built with the open toolchain"):
        VivadoPlan.make(board("ulx3s"), cfg, accelerator_signature(cfg), None)
    with pytest.raises(FpgaError, match="no data port 'S_AXI_HP9'; choose one of S_AXI_HP0"):
        VivadoPlan.make(board("pynq-z1"), cfg, accelerator_signature(cfg), "S_AXI_HP9")
    with pytest.raises(FpgaError, match="unknown board 'pynq-z3'.*did you mean 'pynq-z"):
        board("pynq-z3")
    assert {b.family.value for b in BOARDS.values()} == {"zynq-7000", "zynq-ultrascale+", "ecp5"}


def test_the_readme_example(tmp_path, monkeypatch):
    printed = run_readme_block("## Boards (`fpga/`)", tmp_path, monkeypatch).splitlines()
    cfg, ps = AccelConfig.preset("default"), board("pynq-z2").ps
    assert (
        printed[0]
        == f"{ps.data_ports[0].name} {ps.control_base:#x} overlay/vtaforge_{cfg.fingerprint}.bit"
    )
    assert int(printed[1].split()[0]) > 50


def test_each_zynq_boards_ports_are_its_parts_master_widths():
    """The sweep prices a configuration's AXI master against the part's processor ports
    (hw.parts.Part.master_widths); the Vivado plan checks it against the board's PS port. Both
    must say the same of every Zynq board."""
    from hw.parts import part

    for entry in BOARDS.values():
        if entry.ps is not None:
            widths = {w for port in entry.ps.data_ports for w in port.widths}
            assert widths == set(part(entry.resource_part).master_widths), entry.name
