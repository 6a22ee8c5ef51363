"""A tuning run killed with SIGKILL resumes from its records: no trial lost or repeated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from compiler.tune import MeasureOptions, Space, load_records, tune
from tests.compiler.tune.helpers import MATMUL_SLICE, matmul_task

ROOT = Path(__file__).resolve().parents[3]
OPTIONS = MeasureOptions(repeat=1, min_repeat_ms=1)
RUN = """
from compiler.tune import MeasureOptions, tune
from tests.compiler.tune.helpers import MATMUL_SLICE, matmul_task
tune(matmul_task(32), trials=24, tuner="grid", records={path!r}, restrict=MATMUL_SLICE,
     options=MeasureOptions(repeat=1, min_repeat_ms=1))
"""


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def test_a_killed_run_resumes_where_it_stopped(tmp_path):
    path = tmp_path / "run.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-c", RUN.format(path=str(path))],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    deadline = time.monotonic() + 60
    while _lines(path) < 5 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = load_records(path)
    assert 5 <= len(before) < 24, "the run was not killed mid-way"

    task = matmul_task(32)
    result = tune(
        task, trials=24, tuner="grid", records=path, restrict=MATMUL_SLICE, options=OPTIONS
    )
    after = load_records(path)
    space = Space(task, MATMUL_SLICE)
    assert len(after) == len(result.trials) == 24
    assert after[: len(before)] == before  # the killed run's trials are kept as they were
    assert sorted(space.index(r.knobs) for r in after) == list(range(24))  # each once
    assert all(r.result.ok for r in after)
