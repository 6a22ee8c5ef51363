"""Records: JSON lines that round-trip, survive a kill mid-line, and steer the templates."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler import compile_model, te
from compiler.templates import MATMUL
from compiler.tune import (
    ERRORS,
    Record,
    RecordWarning,
    RecordWriter,
    Result,
    Space,
    Task,
    apply_history_best,
    best_records,
    load_records,
    model_tasks,
)
from compiler.workloads import small_cnn
from tests.compiler.tune.helpers import accel_conv_task, matmul_task

results = st.one_of(
    st.builds(
        Result,
        costs=st.lists(st.floats(1e-9, 1e9), min_size=1, max_size=4).map(tuple),
        seconds=st.floats(0, 100),
    ),
    st.builds(Result, error=st.sampled_from(ERRORS), message=st.text(max_size=40)),
)


MATMUL_TASK = matmul_task()


@given(result=results, index=st.integers(0, 239))
def test_a_record_round_trips_through_its_json_line(result, index):
    task = MATMUL_TASK
    knobs = Space(task).config(index)
    record = Record.of(task, knobs, result)
    back = Record.from_json(record.to_json())
    assert back.task == task.key and back.knobs == knobs and back.target == task.target
    assert back.result.costs == result.costs and back.result.error == result.error
    assert back.result.message == result.message
    assert back.result.seconds == pytest.approx(result.seconds, abs=1e-4)
    assert Task.from_dict(back.spec).key == task.key


def test_accelerator_tasks_rebuild_with_their_configuration():
    task = accel_conv_task()
    rebuilt = Task.from_dict(Record.of(task, {}, Result()).spec)
    assert rebuilt.key == task.key and rebuilt.cfg == task.cfg
    assert task.cfg.fingerprint in task.key
    assert accel_conv_task(shift=6).key != task.key


def _record(task: Task, index: int, cost: float) -> Record:
    return Record.of(task, Space(task).config(index), Result(costs=(cost,)))


def test_a_line_cut_short_by_a_kill_is_ignored_then_removed(tmp_path):
    path = tmp_path / "r.jsonl"
    task = matmul_task()
    with RecordWriter(path) as writer:
        writer.write(_record(task, 1, 2.0))
        writer.write(_record(task, 2, 1.0))
    with open(path, "a") as f:
        f.write(_record(task, 3, 0.5).to_json()[:40])  # the kill struck mid-line
    with pytest.warns(RecordWarning, match=r"r\.jsonl:3: .*cut short"):
        assert [r.result.cost for r in load_records(path)] == [2.0, 1.0]
    with RecordWriter(path) as writer:
        writer.write(_record(task, 4, 3.0))
    assert [r.result.cost for r in load_records(path)] == [2.0, 1.0, 3.0]


def test_a_corrupt_line_in_the_middle_is_reported_by_number_and_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_record(matmul_task(), 1, 2.0).to_json() + "\n{not json\n")
    with pytest.warns(RecordWarning, match=r"r\.jsonl:2: not a tuning record"):
        assert [r.result.cost for r in load_records(path)] == [2.0]


def test_apply_history_best_gives_templates_the_best_knobs(tmp_path):
    task = matmul_task()
    space = Space(task)
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as writer:
        for index, cost in ((7, 3.0), (100, 1.0), (200, 2.0)):
            writer.write(_record(task, index, cost))
        writer.write(Record.of(task, space.config(150), Result(error="crash")))
    a, b = te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B")
    other = te.placeholder((32, 32), name="A"), te.placeholder((32, 32), name="B")
    with apply_history_best(path) as best:
        assert best[task.key].knobs == space.config(100)
        assert MATMUL.chosen(a, b) == space.config(100)
        assert MATMUL.chosen(*other) == MATMUL.space(*other).default()  # no record: defaults
        assert MATMUL.chosen(a, b, config={"tile_m": 1})["tile_m"] == 1  # explicit knobs win
    assert MATMUL.chosen(a, b) == MATMUL.space(a, b).default()


def test_apply_history_best_reaches_compile_model():
    graph = small_cnn(0)
    samples = [np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)]
    tasks = model_tasks(graph, "default", calibration=samples)
    assert len(tasks) == len({t.key for t in tasks}) >= 2
    conv = tasks[0]
    space = Space(conv)
    chosen = next(i for i in reversed(range(len(space))) if space.valid(i))
    assert space.config(chosen) != conv.space().default()
    with apply_history_best([_record(conv, chosen, 1.0)]):
        compiled = compile_model(graph, "default", calibration=samples)
    configs = [p.accel.config for p in compiled.partition.placements if p.accel is not None]
    assert space.config(chosen) in configs
    assert best_records([_record(conv, chosen, 1.0)])[conv.key].knobs == space.config(chosen)
