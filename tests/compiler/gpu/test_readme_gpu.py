"""The README's GPU example runs as printed (without a GPU: build, PTX, emulation)."""

from tests.readme import run_readme_block


def test_readme_gpu_example(tmp_path, monkeypatch):
    out = run_readme_block("## Compiling for NVIDIA GPUs", tmp_path, monkeypatch)
    assert "LaunchConfig(grid=(1, 2, 1), block=(16, 16, 1)" in out
    assert ".target sm_80" in out
