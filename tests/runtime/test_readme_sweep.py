"""The README's sweep example runs as its comments say."""

from __future__ import annotations

from tests.readme import run_readme_block


def test_readme_sweep_example_runs(tmp_path, monkeypatch):
    out = run_readme_block("The API under them:", tmp_path, monkeypatch)
    assert "'DSP': 288" in out  # the default configuration's 256 GEMM + 32 ALU multipliers
    assert out.count("conv:C2") == 4 and "_nomul" in out
    assert (tmp_path / "build" / "sweep_cache").is_dir()  # the cache lands where it runs
