"""The README's functional-simulator example runs and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs():
    text = README.read_text()
    section = text[text.index("## The functional simulator and the ProgramBuilder") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    values = [int(v) for v in re.findall(r"-?\d+", printed.getvalue().split("]")[0])]
    assert values == [3 * v for v in range(32)]
    assert "alu_counter=8" in printed.getvalue()
