"""``vtaforge compile`` (from the compiler, through the entry point) and ``vtaforge run``: an
ONNX model exported from PyTorch, compiled with calibration data, run with a report, a trace
and plots; errors as one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from compiler.frontend import from_onnx
from compiler.model import compile_model
from compiler.zoo import onnx_bytes
from compiler.zoo.digits import load_digits_split, train_digits_cnn
from isa import AccelConfig
from runtime.cli import main
from runtime.model import load_model


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The digits CNN as an ONNX file, calibration data and one test image."""
    folder = tmp_path_factory.mktemp("digits")
    module, x_test, _ = train_digits_cnn(seed=0)
    onnx_path = folder / "digits.onnx"
    onnx_path.write_bytes(onnx_bytes(module, x_test[:1], input_names=["x"]))
    calibration = load_digits_split(seed=0).x_train[:16, None]  # (samples, 1, 1, 8, 8)
    np.savez(folder / "calib.npz", x=calibration)
    np.save(folder / "x.npy", x_test[:1])
    return folder


def test_compile_and_run_an_onnx_model(digits, capsys):
    vtaf = digits / "digits.vtaf"
    argv = ["compile", str(digits / "digits.onnx"), "--calibrate", str(digits / "calib.npz")]
    assert main([*argv, "-o", str(vtaf), "--report"]) == 0
    out = capsys.readouterr().out
    assert "Partition rules:" in out and "3 on the accelerator" in out
    assert "16 calibration samples" in out
    trace, plots, outputs = digits / "trace.json", digits / "plots", digits / "out.npz"
    status = main(
        [
            "run",
            str(vtaf),
            "--input",
            str(digits / "x.npy"),
            "--report",
            "--trace",
            str(trace),
            "--plots",
            str(plots),
            "-o",
            str(outputs),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "accelerator:" in out and "cycles" in out
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    host = [e for e in slices if e["pid"] == 2]
    accel = [e for e in slices if e["pid"] == 1]
    assert {e["name"].split(" (")[1] for e in host} >= {"QuantizeLinear)", "Pack)"}
    assert accel and host[0]["ts"] == 0.0  # the input is quantized before any accelerator step
    assert min(e["ts"] for e in accel) >= host[0]["ts"] + host[0]["dur"]
    assert (plots / "timeline.png").stat().st_size and (plots / "roofline.png").stat().st_size
    # the CLI's model is the one compile_model builds from the same file and samples
    graph = from_onnx(digits / "digits.onnx")
    samples = [{"x": s} for s in np.load(digits / "calib.npz")["x"]]
    reference = compile_model(graph, "default", calibration=samples).reference(
        np.load(digits / "x.npy")
    )
    with np.load(outputs) as saved:
        np.testing.assert_array_equal(saved[saved.files[0]], reference[0])


def test_command_line_errors_are_one_line(digits, capsys, tmp_path):
    truncated = tmp_path / "bad.onnx"
    truncated.write_bytes((digits / "digits.onnx").read_bytes()[:100])
    assert main(["compile", str(truncated), "-o", str(tmp_path / "m.vtaf")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vtaforge compile: error:") and len(err.strip().splitlines()) == 1
    vtaf = tmp_path / "m.vtaf"
    assert main(["compile", str(digits / "digits.onnx"), "-o", str(vtaf)]) == 0
    capsys.readouterr()
    np.save(tmp_path / "wrong.npy", np.zeros((1, 1, 4, 4), np.float32))
    assert main(["run", str(vtaf), "--input", str(tmp_path / "wrong.npy")]) == 1
    err = capsys.readouterr().err
    assert "input 'x' expects float32[1, 1, 8, 8]" in err and len(err.strip().splitlines()) == 1
    assert main(["run", str(tmp_path / "bad.onnx"), "--input", str(tmp_path / "wrong.npy")]) == 1
    assert "not a compiled vtaforge model" in capsys.readouterr().err


def test_compile_takes_shapes_node_options_and_calibration_as_users_save_them(
    digits, capsys, tmp_path
):
    """A batch dimension left dynamic asks for ``--input-shape`` by name; ``--cpu-only`` names
    nodes (an unknown one is an error); calibration saved as one (N, C, H, W) array of N
    samples for an input of batch 1 is N samples."""
    import onnx

    model = onnx.load(digits / "digits.onnx")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    dynamic = tmp_path / "dynamic.onnx"
    onnx.save(model, dynamic)
    out = str(tmp_path / "m.vtaf")
    assert main(["compile", str(dynamic), "-o", out]) == 1
    err = capsys.readouterr().err
    assert "tensor 'x'" in err and "give its shape with --input-shape x=D,D,..." in err
    with pytest.raises(SystemExit):
        main(["compile", str(dynamic), "--input-shape", "x=1,a", "-o", out])
    assert "is not NAME=D,D,..." in capsys.readouterr().err
    calibration = np.load(digits / "calib.npz")["x"][:, 0]  # (16, 1, 8, 8)
    np.save(tmp_path / "calib.npy", calibration)
    shape = ["--input-shape", "x=1,1,8,8", "--calibrate", str(tmp_path / "calib.npy")]
    assert main(["compile", str(dynamic), *shape, "--cpu-only", "nope", "-o", out]) == 1
    assert "cpu_only names no node 'nope'" in capsys.readouterr().err
    assert main(["compile", str(dynamic), *shape, "-o", out, "--report"]) == 0
    report = capsys.readouterr().out
    assert "from 16 calibration samples" in report
    first = next(line.split()[0] for line in report.splitlines() if " accel " in line)
    assert main(["compile", str(dynamic), *shape, "--cpu-only", first, "-o", out, "--report"]) == 0
    line = next(
        line for line in capsys.readouterr().out.splitlines() if line.strip().startswith(first)
    )
    assert " cpu " in line and "kept on the CPU by request" in line


def test_run_names_its_memory_timing_takes_another_and_writes_the_report(digits, capsys, tmp_path):
    import csv

    vtaf = tmp_path / "m.vtaf"
    assert main(["compile", str(digits / "digits.onnx"), "-o", str(vtaf)]) == 0
    capsys.readouterr()
    x = str(digits / "x.npy")
    cycles = {}
    for latency in (None, 64):
        report = tmp_path / f"r{latency}.csv"
        argv = ["run", str(vtaf), "--input", x, "--report", str(report)]
        if latency is not None:
            argv += ["--set", f"read_latency={latency}"]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "memory timing: read_latency=" in out
        assert ("ideal memory" in out) is (latency is None)
        with report.open() as handle:
            rows = list(csv.DictReader(handle))
        total = rows[-1]
        assert total["step"] == "(total)" and float(total["latency_ms"]) > 0
        steps = [int(r["cycles"]) for r in rows[:-1] if r["device"] == "accel"]
        assert int(total["cycles"]) == sum(steps)
        cycles[latency] = int(total["cycles"])
    assert cycles[64] > cycles[None]
    assert (
        main(["run", str(vtaf), "--input", x, "--device", "fsim", "--set", "read_latency=4"]) == 1
    )
    assert "set the sim device's memory timing; fsim has none" in capsys.readouterr().err


def test_compile_quantizes_per_channel_when_asked(digits, capsys, tmp_path):
    """--quant-scheme per-channel: the convolutions and the dense layer carry a multiplier
    and shifts, and the model runs to its reference; an unknown scheme is one line, status 1;
    a configuration without the ALU multiplier refuses the scheme as one line too."""
    vtaf = tmp_path / "pc.vtaf"
    argv = ["compile", str(digits / "digits.onnx"), "--calibrate", str(digits / "calib.npz")]
    assert main([*argv, "--quant-scheme", "per-channel", "-o", str(vtaf)]) == 0
    capsys.readouterr()
    compiled = compile_model(
        from_onnx((digits / "digits.onnx").read_bytes()),
        calibration=list(np.load(digits / "calib.npz")["x"]),
        scheme="per-channel",
    )
    x = np.load(digits / "x.npy")
    got = next(iter(load_model(vtaf).run([x], "fsim").outputs.values()))
    np.testing.assert_array_equal(got, compiled.reference([x])[0])
    with pytest.raises(SystemExit) as usage:
        main([*argv, "--quant-scheme", "fixed", "-o", str(vtaf)])
    assert usage.value.code == 1
    err = capsys.readouterr().err
    assert "'per-channel'" in err and len(err.strip().splitlines()) == 1
    config = tmp_path / "nomul.json"
    config.write_text(AccelConfig.preset("default").replace(alu_mul=False).to_json())
    assert (
        main([*argv, "--quant-scheme", "per-channel", "--config", str(config), "-o", str(vtaf)])
        == 1
    )
    err = capsys.readouterr().err
    assert "alu_mul=False" in err and len(err.strip().splitlines()) == 1
