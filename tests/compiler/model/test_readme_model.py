"""The README's "Compiling a model" example runs as its comments say."""

from __future__ import annotations

from runtime.model import load_model
from tests.readme import run_readme_block


def test_readme_model_example_runs(tmp_path, monkeypatch):
    out = run_readme_block("## Compiling a model", tmp_path, monkeypatch)  # asserts bit-exact
    assert "Partition rules:" in out and "QConv" in out
    assert "accelerator:" in out and "GEMM utilisation" in out
    predicted, label = out.splitlines()[-1].split()
    assert 0 <= int(predicted) < 10 and 0 <= int(label) < 10
    assert load_model(tmp_path / "digits.vtaf").image.steps
