"""Chrome trace and plots of timed runs."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from isa import AccelConfig, Stage
from simulator import CycleSimulator, ReportError, chrome_trace, write_chrome_trace
from simulator.plots import roofline_png, timeline_png
from simulator.trace import TRACKS
from tests.conformance.cases import CASES

TINY = AccelConfig.preset("tiny")
_PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def stats():
    built = next(c for c in CASES if c.name == "blocked_gemm_vt2").build(TINY, 0)
    return CycleSimulator(TINY).run(built.program, built.dram.copy())


def test_the_trace_has_a_slice_per_instruction_and_burst(stats, tmp_path):
    path = tmp_path / "trace.json"
    write_chrome_trace(stats, path, name="gemm")
    events = json.loads(path.read_text())["traceEvents"]
    assert events == json.loads(json.dumps(chrome_trace(stats, "gemm")))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {tid: track for track, tid in TRACKS.items()}
    cycle = 1 / TINY.clock_mhz  # microseconds
    slices = [e for e in events if e.get("cat") == "instruction"]
    assert len(slices) == len(stats.instructions)
    for event, insn in zip(slices, stats.instructions, strict=True):
        assert event["args"]["index"] == insn.index and event["name"] == insn.label
        assert event["tid"] == TRACKS[insn.module.name.lower()]
        assert event["ts"] == pytest.approx(insn.started * cycle)
        assert event["dur"] == pytest.approx(insn.duration * cycle)
    waits = [e for e in events if e.get("cat") == "token"]
    waiting = [i for i in stats.instructions if i.token_wait > 0]
    assert len(waits) == len(waiting) > 0
    for event, insn in zip(waits, waiting, strict=True):
        assert event["name"] == "wait " + " ".join(t.value for t in insn.pops)
        assert event["ts"] + event["dur"] == pytest.approx(insn.started * cycle)
    bursts = [e for e in events if e.get("cat") == "burst"]
    assert len(bursts) == len(stats.bursts)
    assert sum(e["args"]["beats"] for e in bursts) == stats.read_beats + stats.write_beats
    per_track = {}
    for event in slices + waits:  # slices on one module's track never overlap
        per_track.setdefault(event["tid"], []).append((event["ts"], event["ts"] + event["dur"]))
    for spans in per_track.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))
    assert {e["tid"] for e in slices} == {TRACKS[s.name.lower()] for s in Stage}


def test_plots_are_pngs(stats, tmp_path):
    timeline_png(stats, tmp_path / "timeline.png")
    roofline_png([("a", stats), ("b", stats)], tmp_path / "roofline.png")
    for name in ("timeline.png", "roofline.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(_PNG) and len(data) > 10_000
    with pytest.raises(ReportError, match="at least one run"):
        roofline_png([], tmp_path / "empty.png")


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    readme = Path(__file__).resolve().parents[2] / "README.md"
    text = readme.read_text()
    section = text[text.index("## The cycle-level simulator") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(readme), "exec"), {})
    out = capsys.readouterr().out
    assert "GEMM utilisation" in out and "started=" in out
    assert json.loads((tmp_path / "conv.json").read_text())["traceEvents"]
    for name in ("timeline.png", "roofline.png"):
        assert (tmp_path / name).read_bytes().startswith(_PNG)
