"""``tune``: search a task's space with a tuner, measuring candidates locally or on dask.

Each batch the tuner proposes is measured (in this thread's :class:`~compiler.tune.worker.Worker`
process, one candidate at a time, or spread over a ``dask.distributed`` cluster by ``client``);
each result is written to the records as it arrives and fed back to the tuner. With
``records`` naming a file that already holds trials of the task (a run that was killed), those
trials count towards ``trials``, are never measured again and train the tuner, so the run goes on
where it stopped; lines of the records that are not trials of the task's space are reported and
skipped (:mod:`compiler.tune.records`). On dask, a candidate whose worker dies is re-run by the
scheduler on another worker; its record is written once, when its one result arrives.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.tune.errors import TuneError
from compiler.tune.measure import MeasureOptions, Result
from compiler.tune.records import Record, RecordWriter, in_space, load_records
from compiler.tune.space import Space
from compiler.tune.task import Task
from compiler.tune.tuners import make_tuner
from compiler.tune.worker import thread_worker

__all__ = ["TuneResult", "tune"]

#: ``progress(done, trials, best_cost)`` after each trial.
Progress = Callable[[int, int, float], None]


@dataclass
class TuneResult:
    """What a run found: the best knobs and cost (``inf`` when no candidate succeeded) and
    every trial of the task, in the order they finished (resumed ones first)."""

    task: Task
    trials: list[tuple[dict[str, Any], Result]] = field(default_factory=list)

    @property
    def best(self) -> tuple[dict[str, Any] | None, float]:
        ok = [(knobs, result.cost) for knobs, result in self.trials if result.ok]
        return min(ok, key=lambda pair: pair[1]) if ok else (None, float("inf"))

    @property
    def errors(self) -> int:
        return sum(not result.ok for _, result in self.trials)


def tune(
    task: Task,
    *,
    trials: int,
    tuner: str = "xgb",
    records: str | Path | None = None,
    options: MeasureOptions | None = None,
    batch: int = 8,
    seed: int = 0,
    transfer: Iterable[Record] | None = None,
    client: Any = None,
    progress: Progress | None = None,
    restrict: Mapping[str, Sequence[Any]] | None = None,
) -> TuneResult:
    """Measure up to ``trials`` candidates of ``task`` chosen by ``tuner`` (a name of
    :data:`~compiler.tune.tuners.TUNERS`), appending each to ``records``. ``transfer``: records
    of other tasks for the model (default: the other tasks in ``records``); ``client``: a
    ``dask.distributed.Client`` to measure on; ``restrict``: knobs narrowed to some choices."""
    if trials < 1 or batch < 1:
        raise TuneError(f"trials ({trials}) and batch ({batch}) must be positive", task=task.name)
    options = options or MeasureOptions()
    space = Space(task, restrict)
    earlier = load_records(records) if records is not None else []
    own = in_space((r for r in earlier if r.task == task.key), Space(task))
    search = make_tuner(tuner, space, seed, earlier if transfer is None else transfer)
    known = [r for r in own if space.contains(r.knobs)]  # (a run with other restrictions)
    search.update([space.index(r.knobs) for r in known], [r.result for r in known])
    result = TuneResult(task, [(r.knobs, r.result) for r in own])
    writer = RecordWriter(records) if records is not None else None
    measure = _on_dask(client) if client is not None else _locally
    try:
        while len(result.trials) < trials:
            indices = search.next_batch(min(batch, trials - len(result.trials)))
            if not indices:
                break
            configs = [space.config(i) for i in indices]
            for position, outcome in measure(task, configs, options):
                result.trials.append((configs[position], outcome))
                search.update([indices[position]], [outcome])
                if writer is not None:
                    writer.write(Record.of(task, configs[position], outcome))
                if progress is not None:
                    progress(len(result.trials), trials, result.best[1])
    finally:
        if writer is not None:
            writer.close()
    return result


Measure = Callable[[Task, Sequence[dict], MeasureOptions], Iterator[tuple[int, Result]]]


def _locally(
    task: Task, configs: Sequence[dict], options: MeasureOptions
) -> Iterator[tuple[int, Result]]:
    """This thread's worker process, one candidate at a time (timings do not disturb each
    other); the process stays for the next run."""
    worker = thread_worker()
    for position, config in enumerate(configs):
        yield position, worker.measure(task, config, options)


def _remote(task: Task, config: dict, options: MeasureOptions) -> Result:
    """What a dask worker runs: the candidate in that worker's own measurement process."""
    return thread_worker().measure(task, config, options)


def _on_dask(client: Any) -> Measure:
    from dask.distributed import as_completed

    def measure(
        task: Task, configs: Sequence[dict], options: MeasureOptions
    ) -> Iterator[tuple[int, Result]]:
        run = uuid.uuid4().hex[:8]
        futures = {
            client.submit(_remote, task, c, options, key=f"tune-{run}-{k}", pure=False): k
            for k, c in enumerate(configs)
        }
        for future in as_completed(futures):
            try:
                outcome = future.result()
            except Exception as err:  # the scheduler gave up on it (workers kept dying)
                outcome = Result(error="crash", message=f"dask: {type(err).__name__}: {err}")
            yield futures[future], outcome

    return measure
