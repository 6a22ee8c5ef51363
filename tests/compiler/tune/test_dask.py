"""Measurement on dask.distributed: a worker killed mid-run loses no trial and doubles none."""

from __future__ import annotations

import os
import signal

import distributed

from compiler.tune import Space, load_records, tune
from tests.compiler.tune.helpers import ACCEL_SLICE, accel_conv_task


def test_a_worker_killed_mid_run_loses_no_trial(tmp_path):
    path = tmp_path / "dask.jsonl"
    task = accel_conv_task()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        pids = client.run(os.getpid)
        killed = []

        def kill_one(done: int, total: int, best: float) -> None:
            if done == 3 and not killed:
                address, pid = sorted(pids.items())[0]
                os.kill(pid, signal.SIGKILL)
                killed.append(address)

        result = tune(
            task,
            trials=12,
            tuner="grid",
            batch=6,
            records=path,
            client=client,
            progress=kill_one,
            restrict=ACCEL_SLICE,
        )
    assert killed
    records = load_records(path)
    space = Space(task, ACCEL_SLICE)
    valid = [i for i in space if space.valid(i)][:12]
    assert len(records) == len(result.trials) == 12
    assert sorted(space.index(r.knobs) for r in records) == valid  # each once, none lost
    assert all(r.result.ok for r in records), [r.result.message for r in records]
