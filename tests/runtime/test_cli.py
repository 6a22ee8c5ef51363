"""The ``vtaforge`` command line: config, isa, asm, disasm, demo; errors as one line."""

import json
import os
import subprocess
import sys

import pytest

from isa import AccelConfig, Program, disassemble
from runtime.cli import main
from runtime.demo_gemm import demo_gemm_program
from tests.vta_configs import VTA_DEFAULT_LOGS


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_config_show_preset(capsys):
    status, out, _ = run(capsys, "config", "show", "tiny")
    assert status == 0
    assert "configuration 1x4_i8w8a32_12_10_12_12_q16" in out
    assert "inp_buff_depth" in out


def test_config_show_json_round_trips(capsys):
    status, out, _ = run(capsys, "config", "show", "large", "--json")
    assert status == 0
    assert AccelConfig.from_dict(json.loads(out)) == AccelConfig.preset("large")


def test_config_show_vta_file(capsys, tmp_path):
    path = tmp_path / "vta_config.json"
    path.write_text(json.dumps({"TARGET": "ultra96", **VTA_DEFAULT_LOGS}))
    status, out, _ = run(capsys, "config", "show", str(path))
    assert status == 0
    assert "1x16_i8w8a32_15_15_18_17_bus128_333mhz" in out


def test_config_show_unknown(capsys):
    status, _, err = run(capsys, "config", "show", "nope")
    assert status == 1
    assert "neither a preset" in err
    assert "Traceback" not in err


def test_isa_layout(capsys):
    status, out, _ = run(capsys, "isa", "layout")
    assert status == 0
    assert "| [57:26] | dram_base | 32 | int |" in out
    assert "| [127:112] | imm | 16 | signed int |" in out
    assert "| alu_opcode | 3 | AluOp |" in out


def test_isa_layout_of_a_configuration_without_mul(capsys, tmp_path):
    path = tmp_path / "nomul.json"
    AccelConfig.preset("tiny").replace(alu_mul=False).save(path)
    status, out, _ = run(capsys, "isa", "layout", "--config", str(path))
    assert status == 0
    assert "_nomul" in out
    assert "| alu_opcode | 3 | AluOp (no MUL) |" in out


def test_asm_then_disasm_round_trips(capsys, tmp_path):
    program = demo_gemm_program(AccelConfig.preset("tiny"))
    source = tmp_path / "demo.s"
    source.write_text(disassemble(program))
    binary = tmp_path / "demo.bin"
    status, out, _ = run(capsys, "asm", str(source), "-o", str(binary))
    assert status == 0
    assert "11 instructions" in out
    assert Program.load(binary) == program
    status, out, _ = run(capsys, "disasm", str(binary))
    assert status == 0
    assert out == disassemble(program)
    listing = tmp_path / "listing.s"
    assert main(["disasm", str(binary), "--listing", "-o", str(listing)]) == 0
    assert "; [10] 0x" in listing.read_text()


def test_asm_reports_line_numbers(capsys, tmp_path):
    source = tmp_path / "bad.s"
    source.write_text("FINISH\nGEMM uop_bgn=0\n")
    status, _, err = run(
        capsys, "asm", str(source), "-o", str(tmp_path / "x.bin"), "--config", "tiny"
    )
    assert status == 1
    assert "line 2: GEMM: missing field(s) uop_end, iter_out, iter_in" in err


def test_disasm_refuses_mismatched_config_and_foreign_files(capsys, tmp_path):
    binary = tmp_path / "tiny.bin"
    demo_gemm_program(AccelConfig.preset("tiny")).save(binary)
    status, _, err = run(capsys, "disasm", str(binary), "--config", "default")
    assert status == 1
    assert "block_in 4 != 16" in err
    foreign = tmp_path / "foreign.bin"
    foreign.write_bytes(b"hello world, not a program")
    status, _, err = run(capsys, "disasm", str(foreign))
    assert status == 1
    assert "not a vtaforge program" in err
    status, _, err = run(capsys, "asm", str(tmp_path / "missing.s"), "-o", str(binary))
    assert status == 1
    assert "cannot be read" in err


@pytest.mark.parametrize("preset", AccelConfig.preset_names())
def test_demo(capsys, preset):
    status, out, _ = run(capsys, "demo", "--config", preset)
    assert status == 0
    assert "round trips: assembly ok, binary ok" in out
    assert "GEMM reset_reg=1" in out
    assert "functional simulator: output matches numpy" in out


def test_console_script_is_installed():
    result = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "config", "show"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "1x16_i8w8a32_15_15_18_17" in result.stdout


@pytest.mark.parametrize("plugin", ["compile", "fpga", "tune"])
def test_run_as_a_module_it_has_the_plugins_commands(plugin):
    """`python -m runtime.cli` offers the entry points' commands, as the console script does
    (run as `__main__`, the module must not check them against a second copy of itself)."""
    result = subprocess.run(
        [sys.executable, "-m", "runtime.cli", plugin, "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"usage: vtaforge {plugin}" in result.stdout


def test_closed_pipe_is_not_a_traceback():
    # Standard output is a pipe nobody reads (as with `vtaforge ... | head` once head exits).
    read_end, write_end = os.pipe()
    os.close(read_end)
    result = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "isa", "layout"],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    os.close(write_end)
    assert result.returncode == 0
    assert result.stderr == ""
