"""The README's sweep example runs as its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_sweep_example_runs(tmp_path, monkeypatch):
    text = README.read_text()
    section = text[text.index("The API under them:") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)  # the cache lands here
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    out = printed.getvalue()
    assert "'DSP': 288" in out  # the default configuration's 256 GEMM + 32 ALU multipliers
    assert out.count("conv:C2") == 4 and "_nomul" in out
    assert (tmp_path / "build" / "sweep_cache").is_dir()
