"""The README's accelerator example compiles, saves and runs C2 as its comments say."""

from __future__ import annotations

import re

from isa import Program
from tests.readme import run_readme_block


def test_readme_example_runs(tmp_path, monkeypatch):
    printed = run_readme_block("## Compiling for the accelerator", tmp_path, monkeypatch)
    lines = printed.splitlines()
    cycles, shape = re.fullmatch(r"(\d+) (\(.*\))", lines[-1]).groups()
    assert shape == "(1, 64, 56, 56)"
    assert int(cycles) >= 451_584  # at least one cycle per multiplying micro-op
    saved = Program.load(tmp_path / "c2.bin")
    assert saved.instructions[-1].opcode.name == "FINISH"
    assert "dma.load INP" in printed  # the lowered IR was printed
