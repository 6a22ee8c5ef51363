"""The README's "Compiling a model" example runs as its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from runtime.model import load_model

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_model_example_runs(tmp_path, monkeypatch):
    text = README.read_text()
    section = text[text.index("## Compiling a model") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})  # its assert checks bit-exactness
    out = printed.getvalue()
    assert "Partition rules:" in out and "QConv" in out
    assert "accelerator:" in out and "GEMM utilisation" in out
    predicted, label = out.splitlines()[-1].split()
    assert 0 <= int(predicted) < 10 and 0 <= int(label) < 10
    assert load_model(tmp_path / "digits.vtaf").image.steps
