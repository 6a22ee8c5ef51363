"""The compiled C2 layer demo (``python -m compiler.accel.demo_layer``)."""

from __future__ import annotations

from compiler.accel.demo_layer import main


def test_demo_compiles_checks_and_draws(capsys, tmp_path):
    assert main(["--config", "tiny", "--out", str(tmp_path), "--small"]) == 0
    out = capsys.readouterr().out
    assert out.count("output matches numpy") == 2
    assert "compiled from the conv2d template" in out
    for name in ("conv_trace.json", "conv_timeline.png", "conv_roofline.png"):
        assert (tmp_path / name).stat().st_size > 0
