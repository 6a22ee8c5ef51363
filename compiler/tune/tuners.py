"""Tuners: which candidates of a :class:`~compiler.tune.space.Space` to measure next.

A tuner hands out batches of valid, not yet measured candidate indices (``next_batch``) and
learns from their results (``update``). :class:`GridTuner` walks the space in order,
:class:`RandomTuner` in a seeded random order, and :class:`XGBTuner` (AutoTVM's ``XGBTuner``)
fits a :class:`~compiler.tune.cost_model.CostModel` on everything measured so far (plus the
records of other tasks: transfer learning, which also ranks the very first batch) and picks each
batch by simulated annealing over the model's predictions, with a share of random candidates
for exploration.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterable, Sequence

import numpy as np

from compiler.tune.cost_model import CostModel, labels
from compiler.tune.errors import TuneError
from compiler.tune.measure import Result
from compiler.tune.records import Record, in_space
from compiler.tune.space import Space
from compiler.tune.task import TEMPLATES, Task

__all__ = [
    "TRANSFER_TRIALS",
    "TUNERS",
    "GridTuner",
    "RandomTuner",
    "Tuner",
    "XGBTuner",
    "make_tuner",
]

#: At most this many trials (the latest) of each other task train the model.
TRANSFER_TRIALS = 256


class Tuner:
    """The common part: what has been handed out and measured."""

    def __init__(self, space: Space, seed: int = 0) -> None:
        self.space = space
        self.rng = random.Random(seed)
        self.visited: set[int] = set()
        self.results: dict[int, Result] = {}

    def next_batch(self, size: int) -> list[int]:
        """Up to ``size`` valid candidates never handed out before (empty: space exhausted)."""
        batch = []
        for index in self._proposals(size):
            if index not in self.visited and self.space.valid(index):
                self.visited.add(index)
                batch.append(index)
                if len(batch) == size:
                    break
        return batch

    def update(self, indices: Sequence[int], results: Sequence[Result]) -> None:
        """Learn the results of measured candidates (also those of an earlier, resumed run)."""
        for index, result in zip(indices, results, strict=True):
            self.visited.add(index)
            self.results[index] = result

    def _proposals(self, size: int) -> Iterable[int]:
        raise NotImplementedError


class GridTuner(Tuner):
    """Every candidate in index order."""

    def _proposals(self, size: int) -> Iterable[int]:
        return iter(self.space)


class RandomTuner(Tuner):
    """Every candidate once, in a seeded random order."""

    def __init__(self, space: Space, seed: int = 0) -> None:
        super().__init__(space, seed)
        self._order = list(space)
        self.rng.shuffle(self._order)

    def _proposals(self, size: int) -> Iterable[int]:
        return iter(self._order)


class XGBTuner(RandomTuner):
    """Model-based search (see the module docstring). ``transfer``: records of other tasks;
    ``exhaustive``: spaces up to this size are scored whole instead of annealed;
    ``epsilon``: the share of each batch drawn at random."""

    def __init__(
        self,
        space: Space,
        seed: int = 0,
        *,
        transfer: Iterable[Record] = (),
        exhaustive: int = 512,
        epsilon: float = 0.1,
        anneal_steps: int = 24,
    ) -> None:
        super().__init__(space, seed)
        self.model = CostModel(seed=seed)
        self.exhaustive = exhaustive
        self.epsilon = epsilon
        self.anneal_steps = anneal_steps
        self._transfer = _transfer_groups(transfer, space.task)
        self.model.fit(self._transfer)
        self._fitted = len(self.results)

    def _proposals(self, size: int) -> Iterable[int]:
        if self._fitted != len(self.results) and sum(r.ok for r in self.results.values()) > 1:
            self._fit()
        if not self.model.trained:
            return super()._proposals(size)
        ranked = self._ranked(size)
        picks = []
        for index in ranked:
            if self.rng.random() < self.epsilon:
                index = next(i for i in super()._proposals(size) if i not in self.visited)
            picks.append(index)
        return [*picks, *super()._proposals(size)]

    def _fit(self) -> None:
        indices = [i for i in self.results if self.space.valid(i)]
        own = (
            np.stack([self.space.features(i) for i in indices]),
            labels([self.results[i].cost for i in indices]),
        )
        self.model.fit([*self._transfer, own])
        self._fitted = len(self.results)

    def _score(self, indices: Sequence[int]) -> np.ndarray:
        return self.model.predict(np.stack([self.space.features(i) for i in indices]))

    def _ranked(self, size: int) -> list[int]:
        """The unvisited valid candidates the model ranks best, at most ``size``."""
        if len(self.space) <= self.exhaustive:
            pool = [i for i in self.space if i not in self.visited and self.space.valid(i)]
            if not pool:
                return []
            scores = self._score(pool)
            return [pool[k] for k in np.argsort(-scores, kind="stable")[:size]]
        return self._anneal(size)

    def _anneal(self, size: int) -> list[int]:
        """Simulated annealing from the best of a random sample, keeping the best unvisited."""
        unvisited = [i for i in super()._proposals(size) if i not in self.visited]
        drawn = self.rng.sample(unvisited, min(len(unvisited), 8 * size))
        sample = [i for i in drawn if self.space.valid(i)]
        sample += [i for i in self.results if self.results[i].ok]
        if not sample:
            return []
        scores = dict(zip(sample, self._score(sample), strict=True))
        spread = float(np.std(list(scores.values()))) or 1.0
        points = heapq.nlargest(2 * size, scores, key=scores.get)
        for step in range(self.anneal_steps):
            temperature = spread * (1.0 - step / self.anneal_steps)
            moves = [self.space.neighbour(p, self.rng) for p in points]
            fresh = [m for m in set(moves) if m not in scores and self.space.valid(m)]
            if fresh:
                scores.update(zip(fresh, self._score(fresh), strict=True))
            for k, (point, move) in enumerate(zip(points, moves, strict=True)):
                if move not in scores:
                    continue
                gain = scores[move] - scores[point]
                if gain > 0 or self.rng.random() < math.exp(gain / max(temperature, 1e-9)):
                    points[k] = move
        unvisited = [i for i in scores if i not in self.visited]
        return heapq.nlargest(size, unvisited, key=scores.get)


def _transfer_groups(records: Iterable[Record], task: Task) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per other task in ``records`` for the same kind of target (CPU or accelerator) whose
    template :data:`~compiler.tune.task.TEMPLATES` knows: the features and labels of its
    latest :data:`TRANSFER_TRIALS` trials."""
    by_task: dict[str, list[Record]] = {}
    for record in records:
        same_kind = (record.spec.get("config") is None) == (task.cfg is None)
        if record.task != task.key and same_kind and record.spec.get("op") in TEMPLATES:
            by_task.setdefault(record.task, []).append(record)
    groups = []
    for trials in by_task.values():
        space = Space(Task.from_dict(trials[0].spec))
        rows, costs = [], []
        for record in in_space(trials[-TRANSFER_TRIALS:], space):
            vector = space.features(space.index(record.knobs))
            if vector is not None:
                rows.append(vector)
                costs.append(record.result.cost)
        if rows:
            groups.append((np.stack(rows), labels(costs)))
    return groups


#: The tuners by name (the ``tune`` function's and the command line's ``--tuner``).
TUNERS: dict[str, type[Tuner]] = {"grid": GridTuner, "random": RandomTuner, "xgb": XGBTuner}


def make_tuner(name: str, space: Space, seed: int, transfer: Iterable[Record] = ()) -> Tuner:
    """The tuner ``name`` of :data:`TUNERS` over ``space``."""
    if name not in TUNERS:
        raise TuneError(f"unknown tuner {name!r}; choose one of {', '.join(TUNERS)}")
    if name == "xgb":
        return XGBTuner(space, seed, transfer=transfer)
    return TUNERS[name](space, seed)
