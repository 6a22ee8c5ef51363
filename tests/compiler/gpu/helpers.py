"""Shared by the GPU tests: every PTX the tests generate is assembled by ``ptxas``."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

PTXAS = shutil.which("ptxas")


def assemble(ptx: str, arch: str = "sm_80") -> None:
    """Fail unless ``ptxas -arch=ARCH`` accepts ``ptx`` (a missing ptxas fails too: it is
    installed wherever these tests run)."""
    if PTXAS is None:
        pytest.fail("ptxas is not on PATH (install the CUDA toolkit's ptxas)")
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "kernel.ptx"
        path.write_text(ptx)
        result = subprocess.run(
            [PTXAS, f"-arch={arch}", str(path), "-o", "/dev/null"],
            capture_output=True,
            text=True,
        )
    assert result.returncode == 0, f"ptxas -arch={arch} rejected the PTX:\n{result.stderr}"
