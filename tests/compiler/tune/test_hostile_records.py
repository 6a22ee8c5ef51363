"""Records files that are hostile or broken, and arguments out of range: each line that is not
a trial of the task's space is reported with its line number and skipped (never a best), a file
that is not a regular one is a TuneError naming it (never a hang), and the command line ends
such runs with exit status 1 and one line on stderr."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.tune import (
    MeasureOptions,
    Record,
    RecordWarning,
    RecordWriter,
    Result,
    Space,
    TuneError,
    apply_history_best,
    best_records,
    conv_layer_task,
    in_space,
    load_records,
    tune,
)
from compiler.tune.records import MAX_LINE
from runtime.cli import main
from tests.compiler.tune.helpers import MATMUL_SLICE, matmul_task
from tests.fuzz.tally import time_limit

ROOT = Path(__file__).resolve().parents[3]
TASK = matmul_task()
SPACE = Space(TASK)
CONV = ["--op", "conv2d", "--shape", "1,16,4,4,32,3", "--tuner", "random"]


def _line(index: int = 1, cost: float = 2.0, **changes: object) -> bytes:
    """A record's JSON line (newline included) with ``changes`` to its fields."""
    fields = json.loads(Record.of(TASK, SPACE.config(index), Result(costs=(cost,))).to_json())
    return (json.dumps({**fields, **changes}) + "\n").encode()


BAD_LINES = {
    "not UTF-8": b'{"task": "\xff\xfe"}\n',
    "nested too deep": b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "nested deeper than a record": _line(spec={"a": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}),
    "longer than the bound": b'{"pad": "' + b"x" * MAX_LINE + b'"}\n',
    "not JSON": b"{not json\n",
    "not an object": b"[1, 2]\n",
    "costs a string": _line(costs="abc"),
    "a negative cost": _line(costs=[-5]),
    "no costs and no error": _line(costs=[]),
    "a cost of NaN": _line(1).replace(b"[2.0]", b"[NaN]"),
    "an infinite cost": _line(1).replace(b"[2.0]", b"[Infinity]"),
    "a boolean cost": _line(costs=[True]),
    "a huge integer cost": _line(costs=[10**400]),
    "an unknown error": _line(costs=[], error="melted"),
    "costs beside an error": _line(error="crash"),
    "knobs a list": _line(knobs=[1, 2]),
    "a knob value an object": _line(knobs={"tile_m": {"a": 1}}),
    "task a number": _line(task=5),
    "seconds negative": _line(seconds=-1.0),
    "no time": _line(time=None),
}


def _load(path: Path) -> tuple[list[Record], list[str]]:
    """The records of ``path`` and the warnings that reading it gave."""
    with pytest.warns() as caught:
        records = load_records(path)
    return records, [str(w.message) for w in caught if w.category is RecordWarning]


@pytest.mark.parametrize("bad", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_line_that_is_not_a_record_is_reported_by_number_and_skipped(tmp_path, bad):
    path = tmp_path / "r.jsonl"
    path.write_bytes(_line(1, 2.0) + bad + _line(2, 3.0))
    records, warned = _load(path)
    assert [r.result.cost for r in records] == [2.0, 3.0]
    assert len(warned) == 1 and warned[0].startswith(f"{path}:2: not a tuning record")


def test_the_last_line_cut_short_is_reported_and_a_whole_one_kept(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(_line(1, 2.0) + _line(2, 3.0)[:40])
    records, warned = _load(path)
    assert [r.result.cost for r in records] == [2.0]
    assert warned[0].startswith(f"{path}:2:") and "cut short" in warned[0]
    path.write_bytes(_line(1, 2.0) + _line(2, 3.0).rstrip(b"\n"))  # whole, without a newline
    assert [r.result.cost for r in load_records(path)] == [2.0, 3.0]
    with RecordWriter(path) as writer:  # completes it rather than dropping it
        writer.write(Record.of(TASK, SPACE.config(3), Result(costs=(4.0,))))
    assert [r.result.cost for r in load_records(path)] == [2.0, 3.0, 4.0]


def test_knobs_outside_the_space_are_never_a_best(tmp_path):
    path = tmp_path / "r.jsonl"
    knobs = SPACE.config(5)
    outside = (
        {**knobs, "tile_m": 999},  # not a choice
        {**knobs, "extra": 1},  # not a knob
        {k: v for k, v in knobs.items() if k != "tile_m"},  # a knob missing
        {**knobs, "vectorize": int(knobs["vectorize"])},  # the right value, the wrong type
    )
    path.write_bytes(b"".join(_line(5, 0.5, knobs=k) for k in outside) + _line(7, 3.0))
    records = load_records(path)
    with pytest.warns(RecordWarning) as caught:
        kept = in_space(records, SPACE)
    assert [SPACE.index(r.knobs) for r in kept] == [7]
    assert [str(w.message).split(": ")[0] for w in caught] == [f"{path}:{n}" for n in (1, 2, 3, 4)]
    with pytest.warns(RecordWarning), apply_history_best(records):
        assert TASK.template.chosen(*TASK.placeholders()) == SPACE.config(7)


def test_a_resumed_run_skips_records_outside_the_space(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(_line(5, 0.5, knobs={"tile_m": 999}) + _line(7, 3.0))
    with pytest.warns(RecordWarning, match=r"r\.jsonl:1: knobs"):
        result = tune(TASK, trials=1, tuner="grid", records=path, restrict=MATMUL_SLICE)
    assert result.trials == [(SPACE.config(7), Result(costs=(3.0,)))]
    assert result.best == (SPACE.config(7), 3.0)


def test_the_command_line_warns_of_skipped_lines_and_never_takes_them(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    task_line = json.loads(_conv_records(tmp_path)[0])
    path.write_text(
        json.dumps({**task_line, "costs": [-5.0]})
        + "\n"
        + json.dumps({**task_line, "costs": [1.0], "knobs": {"tile_h": 999}})
        + "\n"
    )
    assert main(["tune", *CONV, "--trials", "1", "--records", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "best -5" not in out and "best 1 cycles" not in out
    assert [line.split(": ")[2] for line in err.splitlines()] == [f"{path}:1", f"{path}:2"]
    assert all(line.startswith("vtaforge tune: warning:") for line in err.splitlines())


def _conv_records(tmp_path: Path) -> list[str]:
    """The lines of one successful accelerator trial of the CLI's task."""
    path = tmp_path / "seed.jsonl"
    assert main(["tune", *CONV, "--trials", "1", "--records", str(path)]) == 0
    return path.read_text().splitlines()


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def test_a_records_path_that_is_not_a_regular_file_is_a_tune_error(fifo):
    for path in (fifo, Path("/dev/zero"), Path("/dev/full"), fifo.parent):
        with time_limit(10), pytest.raises(TuneError, match="not a regular file") as raised:
            load_records(path)
        assert raised.value.where == str(path)
    for path in (fifo, Path("/dev/full")):
        with time_limit(10), pytest.raises(TuneError, match="not a regular file"):
            RecordWriter(path)


@pytest.mark.parametrize("device", ["fifo", "/dev/zero", "/dev/full"])
def test_the_command_line_refuses_a_records_device_without_hanging(fifo, device):
    path = str(fifo) if device == "fifo" else device
    argv = [*CONV, "--trials", "1", "--records", path]
    done = _vtaforge(*argv)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"vtaforge tune: error: {path}: not a regular file (records are kept in one)"
    ]


def _vtaforge(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runtime.cli", "tune", *argv],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_record_that_cannot_be_written_is_a_tune_error(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with RecordWriter(path) as writer:
        monkeypatch.setattr(os, "fsync", full)
        with pytest.raises(TuneError, match="cannot write a record: No space left") as raised:
            writer.write(Record.of(TASK, SPACE.config(1), Result(costs=(1.0,))))
    assert raised.value.where == str(path)


@pytest.mark.parametrize("timeout", [-1.0, 0.0, float("nan"), float("inf")])
def test_a_timeout_that_is_not_finite_and_positive_is_refused(timeout):
    with pytest.raises(TuneError, match=f"timeout {timeout!r} is not a finite positive"):
        MeasureOptions(timeout=timeout)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--timeout", "-1"], "timeout -1.0 is not a finite positive number"),
        (["--timeout", "nan"], "timeout nan is not a finite positive number"),
        (["--trials", "0"], "trials (0) and batch (8) must be positive"),
        (["--shape", "1,16,2,2,32,7,1,0"], "--shape: kernel 7 is larger than the input"),
        (["--shape", "1,16,4,4,32,3,0"], "--shape: stride 0 is not positive"),
        (["--shape", "1,0,4,4,32,3"], "--shape: C 0 is not positive"),
        (["--target", "llvm", "--shape", "1,16,2,2,32,5,1,1"], "kernel 5 is larger"),
    ],
)
def test_arguments_out_of_range_are_one_line_errors(tmp_path, capsys, argv, message):
    records = tmp_path / "r.jsonl"
    base = {"--shape": "1,16,4,4,32,3", "--trials": "1", "--target": "accel"}
    base.update(zip(argv[::2], argv[1::2], strict=True))
    options = [item for pair in base.items() for item in pair]
    assert main(["tune", "--op", "conv2d", *options, "--records", str(records)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err
    assert not records.exists()


def test_a_layer_whose_kernel_does_not_fit_is_a_tune_error():
    from compiler.accel import Env
    from compiler.accel.templates import ConvLayer
    from isa import AccelConfig

    env = Env(AccelConfig.preset("default"))
    with pytest.raises(TuneError, match="layer c: kernel 5 is larger than the input"):
        conv_layer_task(ConvLayer("c", 2, 16, 16, 5, 1, 0, 0), env)
    assert conv_layer_task(ConvLayer("c", 2, 16, 16, 5, 1, 2, 0), env).inputs[1].shape[2:4] == (
        5,
        5,
    )  # it fits the padded input


def test_a_run_without_a_successful_trial_says_so_and_fails(tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    argv = [*CONV, "--trials", "2", "--timeout", "1e-6", "--records", str(records)]
    assert main(["tune", *argv]) == 1
    out, err = capsys.readouterr()
    assert "no trial succeeded after 2 trials (2 errors)" in out and "best inf" not in out
    assert len(err.splitlines()) == 1
    assert err.startswith("vtaforge tune: error: no trial succeeded for conv2d_packed(")
    assert "timeout" in err
    assert best_records(load_records(records)) == {}
