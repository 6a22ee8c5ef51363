"""The ResNet-18 half of ``make demo`` (``python -m compiler.model.demo_resnet``), at a small input
so that it stays quick: it must pass its own bit-exact check and write what it says."""

from __future__ import annotations

import json

from compiler.model.demo_resnet import main


def test_demo_compiles_runs_checks_and_draws_resnet18(tmp_path, capsys):
    assert main(["--size", "64", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "31 nodes on the accelerator" in out
    assert "equal compiler.reference of the quantized graph bit for bit" in out
    assert "VTA's published ResNet-18" in out
    assert json.loads((tmp_path / "resnet18_trace.json").read_text())["traceEvents"]
    plots = tmp_path / "resnet18_plots"
    assert (plots / "timeline.png").stat().st_size and (plots / "roofline.png").stat().st_size
    assert (tmp_path / "resnet18.vtaf").stat().st_size
