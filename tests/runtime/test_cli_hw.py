"""``vtaforge hw verilog`` and ``vtaforge hw estimate``."""

import shutil

import pytest

from runtime.cli import main


def test_hw_verilog_writes_the_top_module(capsys, tmp_path):
    path = tmp_path / "tiny.v"
    assert main(["hw", "verilog", "--config", "tiny", "-o", str(path)]) == 0
    out = capsys.readouterr().out
    assert "module vtaforge_accelerator for 1x4_i8w8a32_12_10_12_12_q16" in out
    assert "module vtaforge_accelerator(" in path.read_text()


def test_hw_estimate_unknown_part_is_one_line(capsys):
    assert main(["hw", "estimate", "--config", "tiny", "--part", "xc9"]) == 1
    err = capsys.readouterr().err
    assert "unknown part 'xc9'" in err
    assert "Traceback" not in err


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed")
def test_hw_estimate_missing_yosys_is_reported(capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    assert main(["hw", "estimate", "--config", "tiny"]) == 1
    assert "yosys is not installed" in capsys.readouterr().err
