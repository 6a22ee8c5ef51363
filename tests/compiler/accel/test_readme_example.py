"""The README's accelerator example compiles, saves and runs C2 as its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from isa import Program

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_example_runs(tmp_path, monkeypatch):
    text = README.read_text()
    section = text[text.index("## Compiling for the accelerator") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    lines = printed.getvalue().splitlines()
    cycles, shape = re.fullmatch(r"(\d+) (\(.*\))", lines[-1]).groups()
    assert shape == "(1, 64, 56, 56)"
    assert int(cycles) >= 451_584  # at least one cycle per multiplying micro-op
    saved = Program.load(tmp_path / "c2.bin")
    assert saved.instructions[-1].opcode.name == "FINISH"
    assert "dma.load INP" in printed.getvalue()  # the lowered IR was printed
