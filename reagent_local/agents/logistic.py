"""A small logistic regression: fitted in numpy, stored as JSON, read by a person.

The answer's trust score (trust.py) and the ``adaptive`` baseline's two decisions (router.py) are each
one of these: named features, standardised by the training set's mean and spread, one weight per
feature, a bias and a threshold. Fitting is Newton's method on the L2-penalised log-likelihood (a few dozen features and a
few hundred questions: it converges in under twenty steps).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

import numpy as np


@dataclass(frozen=True)
class LogisticModel:
    """P(y = 1 | features) = sigmoid(bias + sum_i weight_i * (x_i - mean_i) / scale_i)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float = 0.5

    def probability(self, values: Mapping[str, float]) -> float:
        """The model's probability for one example; a feature it does not know is an error, a missing one too."""
        missing = [name for name in self.features if name not in values]
        if missing:
            raise KeyError(f"features missing for the logistic model: {missing}")
        z = self.bias + sum(w * (float(values[n]) - m) / s
                            for n, m, s, w in zip(self.features, self.mean, self.scale, self.weights))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def contributions(self, values: Mapping[str, float]) -> dict[str, float]:
        """Each feature's share of the log-odds for one example (what the trace shows)."""
        return {n: round(w * (float(values[n]) - m) / s, 4)
                for n, m, s, w in zip(self.features, self.mean, self.scale, self.weights)}

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": list(self.mean), "scale": list(self.scale),
                "weights": list(self.weights), "bias": self.bias, "threshold": self.threshold}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LogisticModel":
        names = tuple(data["features"])
        parts = [tuple(float(v) for v in data[key]) for key in ("mean", "scale", "weights")]
        if any(len(p) != len(names) for p in parts):
            raise ValueError("a logistic model's mean, scale and weights must have one value per feature")
        return cls(names, parts[0], parts[1], parts[2], float(data["bias"]), float(data.get("threshold", 0.5)))


def fit_logistic(rows: Sequence[Mapping[str, float]], labels: Sequence[int], features: Sequence[str], *,
                 l2: float = 1.0, weights: Sequence[float] | None = None, iterations: int = 50) -> LogisticModel:
    """Fit P(label = 1 | features) by penalised Newton steps; ``weights`` weigh the examples (default 1)."""
    if len(rows) != len(labels) or not rows:
        raise ValueError("fit_logistic needs as many labels as rows, and at least one row")
    x = np.array([[float(r[n]) for n in features] for r in rows], dtype=np.float64)
    y = np.array(labels, dtype=np.float64)
    w = np.ones(len(y)) if weights is None else np.array(weights, dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0  # a constant feature keeps weight 0 under the penalty
    z = np.hstack([np.ones((len(y), 1)), (x - mean) / scale])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0  # the bias is not penalised
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -60, 60)))
        gradient = z.T @ (w * (y - p)) - penalty * beta
        hessian = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(z.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if float(np.abs(step).max()) < 1e-8:
            break
    return LogisticModel(tuple(features), tuple(float(v) for v in mean), tuple(float(v) for v in scale),
                         tuple(round(float(v), 6) for v in beta[1:]), round(float(beta[0]), 6))


M = TypeVar("M")
P = TypeVar("P")


def assign_folds(n: int, folds: int, seed: int) -> list[int]:
    """Each of ``n`` examples' fold (0 .. folds - 1): shuffled by ``seed``, then dealt round in turn."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    fold = [0] * n
    for k, i in enumerate(order):
        fold[i] = k % folds
    return fold


def out_of_fold(n: int, folds: int, seed: int, fit: Callable[[list[int]], M], predict: Callable[[M, int], P]) -> list[P]:
    """Cross-validation: for each fold, ``fit`` on the other folds' example indices and ``predict`` each example of
    this fold with what was fitted; the predictions in example order."""
    fold = assign_folds(n, folds, seed)
    out: list[Any] = [None] * n
    for k in range(folds):
        fitted = fit([i for i in range(n) if fold[i] != k])
        for i in range(n):
            if fold[i] == k:
                out[i] = predict(fitted, i)
    return out
