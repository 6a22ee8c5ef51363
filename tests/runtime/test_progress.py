"""Progress on long operations (issue 17 item 14): periodic lines with the elapsed time when
stderr is not a terminal, a bar when it is; ``vtaforge hw estimate`` prints the real elapsed
time; the rtl device's first build reports its progress."""

import io
import re
import time

import pytest
import tqdm  # noqa: F401  (the bar's library, which the tests' extra installs)

from runtime.cli import main
from runtime.progress import elapsed_progress, format_elapsed


def test_lines_with_the_elapsed_time_off_a_terminal():
    stream = io.StringIO()
    with elapsed_progress("counting", stream=stream, interval=0.05, terminal=False):
        time.sleep(0.3)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "vtaforge: counting ..."
    assert len(lines) >= 4  # the start, some ticks, the end
    assert all(re.fullmatch(r"vtaforge: counting: \d+\.\d s so far", line) for line in lines[1:-1])
    seconds = float(re.fullmatch(r"vtaforge: counting: finished after (\d+\.\d) s", lines[-1])[1])
    assert 0.3 <= seconds < 5


def test_a_bar_with_the_elapsed_time_on_a_terminal():
    stream = io.StringIO()
    with elapsed_progress("building", stream=stream, terminal=True):
        time.sleep(0.05)
    assert "building: 00:00" in stream.getvalue()
    assert "vtaforge:" not in stream.getvalue()  # the bar, not the lines


def test_the_lines_end_even_when_the_work_fails():
    stream = io.StringIO()
    with pytest.raises(RuntimeError), elapsed_progress("failing", stream=stream, terminal=False):
        raise RuntimeError("boom")
    last = stream.getvalue().splitlines()[-1]
    assert re.fullmatch(r"vtaforge: failing: failed after \d+\.\d s", last), last


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(4.21, "4.2 s"), (59.94, "59.9 s"), (59.96, "1 min 0 s"), (511, "8 min 31 s")],
)
def test_format_elapsed(seconds, text):
    assert format_elapsed(seconds) == text


def test_hw_estimate_reports_progress_and_the_real_elapsed_time(capsys, monkeypatch):
    import hw.resources
    from hw.parts import PARTS

    def slow(cfg, part_name, *, yosys):  # the export before synthesis takes time too
        time.sleep(1.2)
        return hw.resources.ResourceEstimate(
            part=PARTS[part_name],
            lut=1,
            lut_memory=0,
            ff=1,
            dsp=1,
            bram36=1.0,
            seconds=0.0,
            tool="yosys",
        )

    monkeypatch.setattr(hw.resources, "estimate", slow)
    assert main(["hw", "estimate", "--config", "tiny"]) == 0
    out, err = capsys.readouterr()
    assert "vtaforge: exporting and synthesizing 1x4_" in err
    printed = float(re.search(r"; (\d+\.\d) s in all, synthesis 0\.0 s\)", out)[1])
    assert 1.2 <= printed < 10


def test_the_first_rtl_build_reports_progress(capsys, monkeypatch, tmp_path):
    import hw.export
    from isa import AccelConfig
    from runtime.devices import rtl_build

    monkeypatch.setattr(hw.export, "write_verilog", lambda cfg, path, axi: path.write_text("//"))
    monkeypatch.setattr(rtl_build, "_verilate", lambda verilog, build_dir: build_dir.mkdir())
    monkeypatch.setattr(rtl_build.metadata, "version", lambda name: "0")
    rtl_build.build_model(AccelConfig.preset("tiny"), tmp_path)
    err = capsys.readouterr().err
    assert "exporting the Verilog of 1x4_" in err
    assert "building the Verilator model of 1x4_" in err and "finished after" in err
    rtl_build.build_model(AccelConfig.preset("tiny"), tmp_path)  # cached: silent
    assert capsys.readouterr().err == ""
