"""Tuned knobs in whole models: inside ``compiler.tune.apply_history_best(records)`` (``vtaforge
compile --tuning-records``) each accelerator template of ``compile_model`` takes its task's
best record among those in its space, the others keep their defaults, and the compiled model
stays bit-exact with the reference."""

from __future__ import annotations

import numpy as np

from compiler.model import compile_model
from compiler.templates.knobs import choosing
from compiler.tune.measure import Result
from compiler.tune.records import Record, RecordWriter, apply_history_best
from compiler.tune.space import Space
from compiler.tune.task import Task
from compiler.zoo import onnx_bytes
from runtime.cli import main
from runtime.model import load_model
from tests.compiler.model.graphs import residual_cnn, samples


def _tasks(graph, calibration) -> dict[str, Task]:
    """The tasks that compiling ``graph`` for ``default`` declares (templates called without
    knobs ask the chooser, which answers nothing: the defaults)."""
    seen: dict[str, Task] = {}

    def spy(template, inputs, params):
        task = Task.of(template, *inputs, **params)
        seen[task.key] = task

    with choosing(spy):
        compile_model(graph, "default", calibration=calibration)
    return seen


def _records(path, task: Task) -> dict:
    """Write a record of ``task`` with knobs other than its defaults (the faster one) and
    one with its defaults; return the faster one's knobs."""
    space = Space(task)
    default = task.space().default()
    other = next(c for c in map(space.config, range(len(space))) if c != default)
    with RecordWriter(path) as writer:
        writer.write(Record.of(task, other, Result(costs=(100.0,))))
        writer.write(Record.of(task, default, Result(costs=(200.0,))))
    return other


def test_records_choose_a_tasks_knobs_and_the_model_stays_exact(tmp_path):
    graph = residual_cnn(2, channels=16, size=8)
    calibration, x = samples(graph, 2), samples(graph, 1, seed=5)[0]
    tasks = _tasks(graph, calibration)
    tuned_task = next(t for t in tasks.values() if len(Space(t)) > 1)
    _records(tmp_path / "tune.jsonl", tuned_task)
    plain = compile_model(graph, "default", calibration=calibration)
    with apply_history_best(tmp_path / "tune.jsonl"):
        tuned = compile_model(graph, "default", calibration=calibration)
    changed = [a.node for a, b in zip(plain.image.steps, tuned.image.steps, strict=True) if a != b]
    assert changed  # the record's knobs made another program
    np.testing.assert_array_equal(tuned.run(x, "fsim").output, tuned.reference(x)[0])
    np.testing.assert_array_equal(tuned.reference(x)[0], plain.reference(x)[0])


def test_vtaforge_compile_takes_tuning_records(tmp_path, capsys):
    import torch

    module = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU()).eval()
    x = np.random.default_rng(0).standard_normal((1, 16, 8, 8)).astype(np.float32)
    (tmp_path / "m.onnx").write_bytes(onnx_bytes(module, x, input_names=["x"]))
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "none.jsonl").write_text("")
    argv = ["compile", str(tmp_path / "m.onnx"), "--calibrate", str(tmp_path / "x.npy")]
    out = tmp_path / "m.vtaf"
    assert main([*argv, "--tuning-records", str(tmp_path / "none.jsonl"), "-o", str(out)]) == 0
    model = load_model(out)
    np.testing.assert_array_equal(model.run(x, device="fsim").output, model.run(x).output)
    capsys.readouterr()
    missing = tmp_path / "missing.jsonl"
    assert main([*argv, "--tuning-records", str(missing), "-o", str(out)]) == 1
    assert "missing.jsonl" in capsys.readouterr().err


def test_the_flag_is_refused_for_a_cpu_model(tmp_path, capsys):
    graph_file = tmp_path / "m.onnx"
    import torch

    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)).eval()
    graph_file.write_bytes(onnx_bytes(module, np.zeros((1, 3, 8, 8), np.float32)))
    (tmp_path / "t.jsonl").write_text("")
    argv = ["compile", str(graph_file), "--target", "llvm", "--tuning-records"]
    assert main([*argv, str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "m.vtaf")]) == 1
    assert "applies to the accelerator's templates" in capsys.readouterr().err
