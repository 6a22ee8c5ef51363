"""Running the README's examples: the first ``python`` block after a marker, executed in a
scratch directory, its printed output returned."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def run_readme_block(marker: str, directory: Path, monkeypatch) -> str:
    """Execute the first python code block after ``marker`` in ``directory``; what it printed."""
    text = README.read_text()
    section = text[text.index(marker) :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    monkeypatch.chdir(directory)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    return printed.getvalue()
