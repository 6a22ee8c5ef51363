"""The README's sweep example runs as its comments say."""

from __future__ import annotations

from tests.readme import run_readme_block


def test_readme_sweep_example_runs(tmp_path, monkeypatch):
    out = run_readme_block("The API under them:", tmp_path, monkeypatch)
    # the default configuration's 128 GEMM multipliers (two products each) + 32 for the ALU
    assert "'DSP': 160" in out
    assert out.count("conv:C2") == 4 and "_nomul" in out
    assert (tmp_path / "build" / "sweep_cache").is_dir()  # the cache lands where it runs
