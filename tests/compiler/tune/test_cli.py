"""``vtaforge tune`` (through the entry point): one operator, a whole ONNX model, resuming."""

from __future__ import annotations

import distributed
import torch

from compiler.cli import calibration_samples
from compiler.frontend import from_onnx
from compiler.templates import CONV2D_NCHWC
from compiler.tune import Space, load_records
from compiler.tune.cli import op_task
from compiler.tune.task import model_tasks
from compiler.zoo import onnx_bytes, seeded
from compiler.zoo.digits import DigitsCNN
from isa import AccelConfig
from runtime.cli import main

CFG = AccelConfig.preset("default")


def test_tune_one_operator_then_resume(tmp_path, capsys):
    records = tmp_path / "conv.jsonl"
    argv = ["tune", "--op", "conv2d", "--shape", "1,16,4,4,32,3", "--records", str(records)]
    assert main([*argv, "--trials", "3", "--tuner", "random"]) == 0
    first = capsys.readouterr().out
    assert "after 3 trials (0 errors)" in first and "cycles" in first
    assert main([*argv, "--trials", "5", "--tuner", "random"]) == 0
    assert "after 5 trials" in capsys.readouterr().out
    trials = load_records(records)
    task = op_task("conv2d", "1,16,4,4,32,3", "accel", CFG)
    assert len(trials) == 5 and {r.task for r in trials} == {task.key}
    space = Space(task)
    assert len({space.index(r.knobs) for r in trials}) == 5


def test_tune_a_cpu_matmul(tmp_path, capsys):
    records = tmp_path / "mm.jsonl"
    argv = ["tune", "--op", "matmul", "--shape", "16,24,8", "--target", "llvm"]
    assert main([*argv, "--trials", "2", "--records", str(records)]) == 0
    assert "matmul(16x8, 8x24): best" in capsys.readouterr().out
    assert all(r.result.ok and r.target.startswith("llvm") for r in load_records(records))


def test_tune_every_accelerator_operator_of_a_model(tmp_path, capsys):
    model = tmp_path / "digits.onnx"
    module = seeded(DigitsCNN, 0)
    model.write_bytes(onnx_bytes(module, torch.zeros(1, 1, 8, 8).numpy(), input_names=["x"]))
    records = tmp_path / "model.jsonl"
    assert main(["tune", str(model), "--trials", "1", "--records", str(records)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    trials = load_records(records)
    assert len(lines) == len(trials) == len({r.task for r in trials}) >= 2
    assert all(r.result.ok for r in trials)
    # the operators `vtaforge compile` builds from the same model (same default calibration)
    graph = from_onnx(model)
    compiled = model_tasks(graph, CFG, calibration=calibration_samples(graph, None))
    assert {t.key for t in compiled} == {r.task for r in trials}


def test_bad_requests_are_one_line_errors(tmp_path, capsys):
    records = str(tmp_path / "r.jsonl")
    assert main(["tune", "--trials", "1", "--records", records]) == 1
    assert "give either MODEL.onnx or --op" in capsys.readouterr().err
    bad_shape = ["--op", "conv2d", "--shape", "1,16,x", "--trials", "1", "--records", records]
    assert main(["tune", *bad_shape]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vtaforge tune: error:") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.jsonl").exists()


def test_cpu_convolutions_are_tuned_in_the_targets_nchwc_blocks():
    task = op_task("conv2d", "1,32,8,8,64,3", "llvm", CFG)
    data, kernel = task.inputs
    assert task.template is CONV2D_NCHWC and dict(task.params) == {"stride": 1, "padding": 1}
    assert data.shape[1] * data.shape[4] == 32 and kernel.shape[0] * kernel.shape[5] == 64
    assert kernel.shape[4] == data.shape[4]  # the kernel's input block is the data's


def test_tune_measures_on_the_scheduler_it_is_given(tmp_path, capsys):
    records = tmp_path / "dask.jsonl"
    argv = ["tune", "--op", "conv2d", "--shape", "1,16,4,4,32,3", "--records", str(records)]
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as observer,
        distributed.get_task_stream(client=observer) as stream,
    ):
        argv += ["--trials", "2", "--tuner", "random", "--scheduler", cluster.scheduler_address]
        assert main(argv) == 0
    assert "after 2 trials (0 errors)" in capsys.readouterr().out
    assert len(load_records(records)) == 2
    assert len(stream.data) >= 2  # the measurements ran as tasks of that cluster
