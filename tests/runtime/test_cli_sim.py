"""``vtaforge sim``: time a saved program, print the stats, write the trace and plots."""

from __future__ import annotations

import json

import numpy as np

from isa import AccelConfig, TimingConfig
from runtime.cli import main
from simulator import CycleSimulator
from tests.conformance.cases import CASES

TINY = AccelConfig.preset("tiny")


def _saved(tmp_path):
    built = next(c for c in CASES if c.name == "gemm_vt2").build(TINY, 0)
    path = tmp_path / "gemm.bin"
    built.program.save(path)
    return built.program, path


def test_sim_prints_stats_and_writes_trace_and_plots(capsys, tmp_path):
    program, path = _saved(tmp_path)
    trace, plots = tmp_path / "out.json", tmp_path / "plots"
    argv = ["sim", str(path), "--config", "tiny", "--trace", str(trace), "--plots", str(plots)]
    status = main([*argv, "--read-latency", "4"])
    out = capsys.readouterr().out
    assert status == 0
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    expected = CycleSimulator(TINY, TimingConfig(read_latency=4)).run(program, dram)
    assert f"cycles            {expected.cycles:,}" in out
    assert "GEMM utilisation" in out and "compute" in out
    assert json.loads(trace.read_text())["traceEvents"]
    assert (plots / "timeline.png").stat().st_size > 0
    assert (plots / "roofline.png").stat().st_size > 0


def test_sim_errors_are_one_line(capsys, tmp_path):
    _, path = _saved(tmp_path)
    assert main(["sim", str(path), "--config", "default"]) == 1
    assert "error" in capsys.readouterr().err
    assert main(["sim", str(path), "--read-latency", "0"]) == 1
    err = capsys.readouterr().err
    assert "read_latency" in err and len(err.strip().splitlines()) == 1
