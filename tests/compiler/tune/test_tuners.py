"""Tuners: grid and random cover the valid space once; the XGBoost tuner finds the best
candidate of a small accelerator space (cycles are deterministic, so the exhaustive best is
known) and one of the best three of a small CPU space (measured whole, then replayed) in fewer
trials than the space holds, and other tasks' records warm-start it."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.tune import (
    GridTuner,
    MeasureOptions,
    RandomTuner,
    Result,
    Space,
    TuneError,
    Worker,
    XGBTuner,
    load_records,
    tune,
)
from compiler.tune.cost_model import CostModel, labels
from tests.compiler.tune.helpers import ACCEL_SLICE, MATMUL_SLICE, accel_conv_task, matmul_task


@pytest.fixture(scope="module")
def exhaustive(tmp_path_factory):
    """Every valid candidate of the accelerator slice measured by the grid tuner."""
    records = tmp_path_factory.mktemp("tune") / "grid.jsonl"
    task = accel_conv_task()
    result = tune(task, trials=10_000, tuner="grid", records=records, restrict=ACCEL_SLICE)
    return task, records, result


def test_grid_measures_every_valid_candidate_once(exhaustive):
    task, _, result = exhaustive
    space = Space(task, ACCEL_SLICE)
    valid = [space.config(i) for i in space if space.valid(i)]
    assert [knobs for knobs, _ in result.trials] == valid
    assert all(r.ok for _, r in result.trials)
    assert len(valid) < len(space)  # some candidates do not fit and were never measured


def test_random_hands_out_each_valid_candidate_once():
    space = Space(accel_conv_task(), ACCEL_SLICE)
    tuner = RandomTuner(space, seed=3)
    handed = []
    while batch := tuner.next_batch(4):
        handed += batch
    assert sorted(handed) == [i for i in space if space.valid(i)]
    assert handed != sorted(handed)


def test_xgb_finds_the_exhaustive_best_in_under_half_the_trials(exhaustive, tmp_path):
    task, _, grid = exhaustive
    best_knobs, best_cost = grid.best
    budget = len(grid.trials) // 2
    found = tune(task, trials=budget, tuner="xgb", batch=4, seed=0, restrict=ACCEL_SLICE)
    assert len(found.trials) == budget
    assert found.best == (best_knobs, best_cost)


def test_xgb_finds_one_of_the_best_measured_cpu_candidates_in_under_half_the_trials():
    # Timings vary from run to run, so the space is measured whole in the worker, twice (each
    # candidate's cost the lower: a shared machine's noise only ever adds time), and the tuner
    # replays those measurements, so whether it reaches a candidate is deterministic. The best
    # few candidates are within a few per cent of each other, closer than a loaded machine
    # separates a timing from its repeat (up to 20 % under CI's parallel tests), so the tuner
    # must find one of the best three of the 24 by rank, not the single fastest timing. Replayed
    # on this space's landscape with each timing inflated by random noise of 15 % (30 %), the
    # tuner missed the best three in 0 of 100 (2 of 300) trials; a random half of the space
    # misses them one time in nine.
    space = Space(matmul_task(128), MATMUL_SLICE)
    options = MeasureOptions(repeat=3, min_repeat_ms=5)
    worker = Worker()
    try:
        passes = [
            {i: worker.measure(space.task, space.config(i), options) for i in space}
            for _ in range(2)
        ]
    finally:
        worker.close()
    measured = {i: min((p[i] for p in passes), key=lambda r: r.cost) for i in space}
    assert all(r.ok for p in passes for r in p.values()), [r.message for r in measured.values()]
    cost = {i: r.cost for i, r in measured.items()}
    assert max(cost.values()) > 2 * min(cost.values())  # the knobs matter: something to find
    tuner, seen = XGBTuner(space, seed=0), []
    while len(seen) < len(space) // 2:
        batch = tuner.next_batch(4)
        tuner.update(batch, [measured[i] for i in batch])
        seen += batch
    assert len(seen) == len(space) // 2
    best_three = sorted(space, key=cost.__getitem__)[:3]
    assert set(best_three) & set(seen), (sorted(cost[i] for i in seen), sorted(cost.values()))


def test_transfer_learning_ranks_a_new_task_before_measuring_it(exhaustive):
    _, records, grid = exhaustive
    # another task (its epilogue shifts by 6, not 8) whose cycles are the measured task's
    space = Space(accel_conv_task(shift=6), ACCEL_SLICE)
    warm = XGBTuner(space, seed=0, transfer=load_records(records))
    assert warm.model.trained and not XGBTuner(space, seed=0).model.trained
    truth = {space.index(knobs): r.cost for knobs, r in grid.trials}
    indices = sorted(truth)
    scores = warm._score(indices)
    rank_correlation = np.corrcoef(
        np.argsort(np.argsort(-scores)), np.argsort(np.argsort([truth[i] for i in indices]))
    )[0, 1]
    assert rank_correlation > 0.5
    first = warm.next_batch(3)
    assert min(truth[i] for i in first) <= sorted(truth.values())[2]


def test_labels_rank_failures_last():
    values = labels([4.0, 2.0, float("inf"), 8.0])
    assert values.tolist() == [0.5, 1.0, 0.0, 0.25]


def test_cost_model_learns_an_order():
    rng = np.random.default_rng(0)
    x = rng.random((60, 5)).astype(np.float32)
    cost = 1.0 + 3.0 * x[:, 2]
    model = CostModel()
    model.fit([(x, labels(cost))])
    scores = model.predict(x)
    order = np.argsort(-scores)
    assert np.corrcoef(scores, -cost)[0, 1] > 0.9
    assert cost[order[0]] <= np.quantile(cost, 0.1)


def test_grid_tuner_learns_nothing_but_skips_what_it_was_told():
    space = Space(accel_conv_task(), ACCEL_SLICE)
    tuner = GridTuner(space)
    first = tuner.next_batch(2)
    tuner.update(first, [Result(costs=(1.0,)), Result(error="crash")])
    assert not set(first) & set(tuner.next_batch(100))


def test_bad_tuning_requests_raise_tune_errors():
    task = accel_conv_task()
    with pytest.raises(TuneError, match="unknown tuner"):
        tune(task, trials=1, tuner="annealing")
    with pytest.raises(TuneError, match="must be positive"):
        tune(task, trials=0)
    with pytest.raises(TuneError, match="unknown knob 'tile_x'"):
        Space(task, {"tile_x": (1,)})
    with pytest.raises(TuneError, match="not among"):
        Space(task, {"tile_h": (3,)})
