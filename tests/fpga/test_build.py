"""``vtaforge fpga build``: the project directory it writes (the accelerator's Verilog from
Amaranth, the block-design wrapper whose ports must be exactly the exported top level's, the
TCL), and ``--run`` with and without Vivado on PATH (a stand-in ``vivado`` script plays the tool:
the real one cannot be installed here)."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import stat

import pytest

from fpga import (
    FpgaError,
    VivadoPlan,
    VivadoProject,
    accelerator_signature,
    board,
    project_tcl,
    run_vivado,
)
from fpga.build import BUILD_SCRIPT
from fpga.signature import BD_MODULE
from hw import AXI_TOP_NAME
from isa import AccelConfig
from runtime.cli import main
from tests.fpga.design import module_ports
from tests.fpga.tcl_stubs import stub_command

TINY = AccelConfig.preset("tiny")


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory):
    """``vtaforge fpga build --board pynq-z2 --config tiny -o DIR --run`` without Vivado."""
    folder = tmp_path_factory.mktemp("pynq-z2") / "project"
    nowhere = tmp_path_factory.mktemp("empty-path")
    old_path = os.environ["PATH"]
    os.environ["PATH"] = str(nowhere)
    output = io.StringIO()
    try:
        argv = ["fpga", "build", "--board", "pynq-z2", "--config", "tiny", "-o", str(folder)]
        with contextlib.redirect_stdout(output):
            status = main([*argv, "--run"])
    finally:
        os.environ["PATH"] = old_path
    assert status == 0
    return folder, output.getvalue()


def test_build_writes_the_verilog_the_wrapper_and_the_script(project_dir):
    project_dir, _ = project_dir
    assert {p.name for p in project_dir.iterdir()} == {BUILD_SCRIPT, "hdl"}
    hdl = project_dir / "hdl"
    top = module_ports((hdl / f"{AXI_TOP_NAME}.v").read_text(), AXI_TOP_NAME)
    wrapper_text = (hdl / f"{BD_MODULE}.v").read_text()
    wrapper = module_ports(wrapper_text, BD_MODULE)
    # the wrapper's ports (derived from the Amaranth signature) are the exported top level's
    assert {(p.name, p.width, p.output) for p in wrapper.values()} == {
        (p.name, p.width, p.output) for p in top.values()
    }
    assert all(p.info for p in wrapper.values())
    for name in top:
        assert f".{name}({name})" in wrapper_text
    assert f"set name vtaforge_{TINY.fingerprint}" in (project_dir / BUILD_SCRIPT).read_text()


def test_run_without_vivado_says_what_to_run(project_dir):
    folder, output = project_dir
    assert "vivado is not on PATH: nothing was built" in output
    assert (
        f"cd {folder} && vivado -mode batch -nojournal -log vivado.log -source build.tcl" in output
    )
    assert "TUL PYNQ-Z2 (xc7z020clg400-1)" in output and "registers at 0x43c00000" in output


def test_the_cli_message_without_vivado(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("fpga.build.write_vivado_project", _planned)
    status = main(["fpga", "build", "--board", "ultra96-v2", "-o", str(tmp_path / "p"), "--run"])
    out = capsys.readouterr().out
    assert status == 0
    assert "vivado is not on PATH: nothing was built" in out
    assert f"cd {tmp_path / 'p'} && vivado -mode batch -nojournal -log vivado.log" in out
    assert "registers at 0xa0000000" in out and "S_AXI_HP0_FPD" in out


def _planned(chosen, cfg, directory, *, port=None):
    """The project without writing it (exporting the default configuration's Verilog takes half
    a minute): the plan alone, which is what the messages report."""
    return VivadoProject(directory, VivadoPlan.make(chosen, cfg, accelerator_signature(cfg), port))


def _fake_vivado(folder, body: str) -> None:
    script = folder / "vivado"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_run_invokes_vivado_in_the_project_and_finds_the_overlay(
    project_dir, tmp_path, monkeypatch
):
    project = _planned(board("pynq-z2"), TINY, project_dir[0])
    bit, hwh = project.plan.overlay
    _fake_vivado(
        tmp_path,
        f'[ "$*" = "{" ".join(project.command[1:])}" ] && [ -f {BUILD_SCRIPT} ] || exit 9\n'
        f"mkdir -p overlay && touch {bit} {hwh}",
    )
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert run_vivado(project)
    assert project.bitstream.exists() and project.hardware_handoff.exists()
    _fake_vivado(tmp_path, "exit 3")
    project.bitstream.unlink()
    with pytest.raises(FpgaError, match="vivado exited with status 3 without writing .*\\.bit"):
        run_vivado(project)


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ({"STATS.WNS": "-1.25"}, "timing not met at 100 MHz: worst negative slack -1.25 ns"),
        ({"get_board_parts": ""}, "the board files of tul.com.tw:pynq-z2:part0:1.0 are not"),
    ],
)
def test_a_failed_build_says_why_and_where_its_log_is(tmp_path, monkeypatch, answers, said):
    """A stand-in ``vivado`` that sources the real build script against the recording stubs
    (tests/fpga/tcl_stubs.py), its output in ``vivado.log`` as Vivado's ``-log`` keeps it: the
    script's own error reaches the user, one stage line reports the run, and no overlay is
    written."""
    folder = tmp_path / "project"
    folder.mkdir()
    project = _planned(board("pynq-z2"), TINY, folder)
    (folder / BUILD_SCRIPT).write_text(project_tcl(project.plan))
    command = stub_command(folder / BUILD_SCRIPT, tmp_path, tmp_path / "calls.log", answers)
    _fake_vivado(tmp_path, f"{shlex.join(command)} > vivado.log 2>&1")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    stages = []
    with pytest.raises(
        FpgaError, match=f"status 1 without writing .*\\.bit: vtaforge: error: {said}"
    ):
        run_vivado(project, stage=lambda what: stages.append(what) or contextlib.nullcontext())
    assert stages == [
        f"vivado: synthesis, implementation and bitstream (log {folder / 'vivado.log'})"
    ]
    assert not (folder / "overlay").exists()


def test_build_refuses_bad_requests(tmp_path, capsys):
    with pytest.raises(SystemExit, match="1"):
        main(["fpga", "build", "--board", "pynq-z3", "-o", str(tmp_path)])
    assert "did you mean 'pynq-z" in capsys.readouterr().err
    argv = ["fpga", "build", "--board", "pynq-z2", "--config", "ultra96", "-o", str(tmp_path)]
    assert main(argv) == 1
    assert "128-bit AXI master" in capsys.readouterr().err


def test_boards_lists_every_board(capsys):
    assert main(["fpga", "boards"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["pynq-z1", "pynq-z2", "ultra96-v2", "ulx3s"]
    assert "xc7z020clg400-1" in lines[1] and "open toolchain" in lines[3]
