"""``vtaforge sim`` inputs, outputs, reports and timing (issue 17 items 8, 12 and 13): checked
against the simulators run directly and numpy."""

import csv
import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa import AccelConfig, TimingConfig
from runtime.cli import main
from runtime.demo_gemm import DEMO_ROWS, DEMO_TILES, demo_expected_output, demo_gemm_program
from simulator import CycleSimulator

TINY = AccelConfig.preset("tiny")


def _saved(tmp_path, cfg=TINY):
    program = demo_gemm_program(cfg)
    path = tmp_path / "demo.bin"
    program.save(path)
    return program, path


def _numpy_demo(cfg, inputs, weights):
    """The demo's output for ``inputs`` and ``weights`` (int8), computed by numpy."""
    product = np.einsum(
        "rbi,toi->rtbo",
        inputs.reshape(DEMO_ROWS, cfg.batch, cfg.block_in).astype(np.int64),
        weights.reshape(DEMO_TILES, cfg.block_out, cfg.block_in).astype(np.int64),
    )
    return np.clip(product >> 8, 0, 127).astype(np.int8).ravel()


def test_the_saved_demo_runs_and_its_output_is_saved(capsys, tmp_path):
    program, path = _saved(tmp_path)
    out = tmp_path / "out.npy"
    assert main(["sim", str(path), "--output", f"outputs={out}"]) == 0
    assert f"wrote {out} (outputs: " in capsys.readouterr().out
    _, expected = demo_expected_output(program)
    saved = np.load(out)
    assert saved.dtype == np.uint8 and saved.tobytes() == expected


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_inputs_replace_segments_before_the_run(tmp_path_factory, seed):
    tmp_path = tmp_path_factory.mktemp("inputs")
    _, path = _saved(tmp_path)
    rng = np.random.default_rng(seed)
    inputs = rng.integers(-128, 128, (DEMO_ROWS, TINY.block_in), dtype=np.int8)
    weights = rng.integers(-128, 128, (DEMO_TILES, TINY.block_out, TINY.block_in), dtype=np.int8)
    np.save(tmp_path / "inp.npy", inputs)
    np.save(tmp_path / "wgt.npy", weights)
    argv = ["sim", str(path), "--input", f"inputs={tmp_path / 'inp.npy'}"]
    argv += ["--input", f"weights={tmp_path / 'wgt.npy'}", "--output", f"outputs={tmp_path}/o.npy"]
    assert main(argv) == 0
    result = np.load(tmp_path / "o.npy").view(np.int8)
    assert np.array_equal(result, _numpy_demo(TINY, inputs, weights))


def test_an_input_fills_a_region(capsys, tmp_path):
    _, path = _saved(tmp_path)
    # The output region, filled before the run: the STORE overwrites all of it.
    np.save(tmp_path / "junk.npy", np.full(DEMO_ROWS * DEMO_TILES, -1, dtype="<i4"))
    argv = ["sim", str(path), "--input", f"outputs={tmp_path / 'junk.npy'}"]
    assert main([*argv, "--output", f"outputs={tmp_path / 'o.npy'}"]) == 0
    _, expected = demo_expected_output(demo_gemm_program(TINY))
    assert np.load(tmp_path / "o.npy").tobytes() == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "inputs={dir}/small.npy"], "the array has 4 bytes (int8[4]), inputs has 16"),
        (["--input", "inputz={dir}/small.npy"], "no segment or region 'inputz' (did you mean"),
        (["--input", "inputs={dir}/none.npy"], "cannot be read"),
        (["--input", "inputs"], "expected NAME=VALUE"),
        (["--output", "weight={dir}/o.npy"], "(did you mean 'weights'?)"),
    ],
)
def test_input_and_output_errors_are_one_line(capsys, tmp_path, argv, message):
    _, path = _saved(tmp_path)
    np.save(tmp_path / "small.npy", np.zeros(4, dtype=np.int8))
    status = main(["sim", str(path), *[a.format(dir=tmp_path) for a in argv]])
    err = capsys.readouterr().err
    assert status == 1
    assert message in err and len(err.strip().splitlines()) == 1


def _timing_values():
    """A valid, non-default value for every TimingConfig field."""
    values = {}
    for field in dataclasses.fields(TimingConfig):
        default = field.default
        values[field.name] = (not default) if isinstance(default, bool) else default + 1
    values["max_burst_beats"] = 16
    return values


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(TimingConfig)])
def test_every_timing_field_is_settable(capsys, tmp_path, name):
    program, path = _saved(tmp_path)
    value = _timing_values()[name]
    report = tmp_path / "r.json"
    text = str(value).lower()
    assert main(["sim", str(path), "--set", f"{name}={text}", "--report", str(report)]) == 0
    row = json.loads(report.read_text())
    assert row[f"timing_{name}"] == value
    timing = TimingConfig(**{name: value})
    expected = CycleSimulator(TINY, timing).run(program, np.zeros(program.dram_extent, np.uint8))
    assert row["cycles"] == expected.cycles


def test_timing_file_then_read_latency_then_set(capsys, tmp_path):
    program, path = _saved(tmp_path)
    timing_file = tmp_path / "timing.json"
    timing_file.write_text(json.dumps({"read_latency": 9, "write_response_latency": 7}))
    report = tmp_path / "r.csv"
    argv = ["sim", str(path), "--timing", str(timing_file), "--read-latency", "5"]
    argv += ["--set", "shared_read_port=false", "--report", str(report)]
    assert main(argv) == 0
    (row,) = csv.DictReader(report.open())
    timing = TimingConfig(read_latency=5, write_response_latency=7, shared_read_port=False)
    stats = CycleSimulator(TINY, timing).run(program, np.zeros(program.dram_extent, np.uint8))
    assert int(row["cycles"]) == stats.cycles
    assert int(row["gemm_counter"]) == stats.counters.gemm_counter
    assert int(row["store_busy"]) == stats.units["store"].busy
    assert row["timing_read_latency"] == "5" and row["timing_shared_read_port"] == "False"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "read_latncy=3"], "not a timing parameter (did you mean 'read_latency'?)"),
        (["--set", "read_latency=fast"], "read_latency='fast': must be an integer"),
        (["--set", "shared_read_port=maybe"], "must be true or false"),
        (["--set", "read_latency=0"], "read_latency=0: must be an integer from 1"),
        (["--timing", "{dir}/t.json"], "did you mean 'gemm_ii'?"),
        (["--timing", "{dir}/none.json"], "cannot be read"),
    ],
)
def test_timing_errors_are_typed_and_one_line(capsys, tmp_path, argv, message):
    _, path = _saved(tmp_path)
    (tmp_path / "t.json").write_text('{"gemm_iii": 2}')
    status = main(["sim", str(path), *[a.format(dir=tmp_path) for a in argv]])
    err = capsys.readouterr().err
    assert status == 1
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_program_runs_on_a_configuration_with_another_clock(capsys, tmp_path):
    _, path = _saved(tmp_path, AccelConfig())
    faster = tmp_path / "faster.json"
    AccelConfig().replace(clock_mhz=150).save(faster)
    report = tmp_path / "r.json"
    assert main(["sim", str(path), "--config", str(faster), "--report", str(report)]) == 0
    row = json.loads(report.read_text())
    assert row["clock_mhz"] == 150.0 and row["fingerprint"].endswith("_150mhz")
    status = main(["sim", str(path), "--config", "tiny"])
    assert status == 1
    assert "block_in 16 != 4" in capsys.readouterr().err
