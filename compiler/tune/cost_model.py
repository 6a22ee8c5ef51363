"""The cost model: XGBoost ranking candidates by their loop-IR features.

As AutoTVM's ``XGBoostCostModel`` with ``loss_type="rank"``: gradient-boosted trees trained with
the ``rank:pairwise`` objective on feature vectors (:mod:`compiler.tune.features`), one query
group per task, the label of a candidate its task's best cost divided by its own (1 for the
best, near 0 for the slowest, 0 for a failure). Only the order of predictions matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CostModel", "labels"]


def labels(costs: Sequence[float]) -> np.ndarray:
    """Ranking labels of one task's costs (``inf`` for failures): best cost / cost."""
    values = np.asarray(costs, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.zeros(len(values), dtype=np.float32)
    return np.where(np.isfinite(values), finite.min() / values, 0.0).astype(np.float32)


@dataclass
class CostModel:
    """Fit on groups of (features, labels); ``predict`` scores candidates (higher: faster)."""

    rounds: int = 80
    max_depth: int = 6
    eta: float = 0.3
    seed: int = 0
    threads: int = 1

    def __post_init__(self) -> None:
        self._booster = None

    @property
    def trained(self) -> bool:
        return self._booster is not None

    def fit(self, groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        """Train on ``groups``: per task, its candidates' features (rows) and labels."""
        import xgboost

        groups = [(x, y) for x, y in groups if len(y) > 1]
        if not groups:
            return
        matrix = xgboost.DMatrix(
            np.concatenate([x for x, _ in groups]), label=np.concatenate([y for _, y in groups])
        )
        matrix.set_group([len(y) for _, y in groups])
        params = {
            "objective": "rank:pairwise",
            "max_depth": self.max_depth,
            "eta": self.eta,
            "min_child_weight": 1,
            "gamma": 1e-4,
            "seed": self.seed,
            "nthread": self.threads,
            "verbosity": 0,
        }
        self._booster = xgboost.train(params, matrix, self.rounds)

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``features`` (zeros before the first fit)."""
        if self._booster is None:
            return np.zeros(len(features), dtype=np.float32)
        import xgboost

        return self._booster.predict(xgboost.DMatrix(features))
