"""One model per (op kind, inference type): a log-linear base on the work the kernel does,
boosted trees on what it leaves.

The learned model's shared trees (:mod:`tacopt.cost_models.learned`) see every kind at once, so
a kind with many configurations (CONV_2D, DEPTHWISE_CONV_2D, MUL, ...) gets only the splits it
wins against the others. A kind model is fitted on that kind's records alone: first a ridge fit
of ``log(latency_us)`` on ``[1, log padded MACs, log bytes, log FLOPs, log output elements]``
(:data:`BASE_FEATURES`: XNNPACK's tiled work and the bytes it streams; it extrapolates in size
where trees cannot), then boosted trees (LightGBM or :func:`~tacopt.cost_models.trees.fit_trees`)
on its residual over every tree feature. Which kinds use their own model is chosen on held-out
training configurations (:func:`tacopt.cost_models.learned.fit`); the rest keep the shared
trees.

Stored as JSON (``{"w": [...], "trees": [...], "n": N}`` per ``"KIND|TYPE"``), never pickle.

>>> rng = np.random.default_rng(0)
>>> recs = [{"kind": "ADD", "inference_type": "FLOAT", "flops": float(n), "bytes": 12.0 * n,
...          "outputs": [[[n]]], "inputs": [[[n], "float32"], [[n], "float32"]],
...          "latency_us": 0.5 + n / 2000 * (1 + 0.01 * rng.random())}
...         for n in rng.integers(1000, 10 ** 6, 80)]
>>> fits = fit_kind_models(recs, "trees", min_records=40)
>>> m = KindModels(fits)
>>> x = {**recs[0], "flops": 5e5, "bytes": 6e6, "outputs": [[[500000]]],
...      "inputs": [[[500000], "float32"], [[500000], "float32"]]}
>>> round(m.predict(x) / (0.5 + 5e5 / 2000), 1)
1.0
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.features import FEATURES, op_vector
from tacopt.cost_models.trees import fit_lightgbm, fit_trees, predict_stacked, stack_trees

#: Inputs of a kind model's log-linear base (after a constant 1), by :data:`FEATURES` name.
BASE_FEATURES = ("log_padded_macs", "log_bytes", "log_flops", "log_output_elements")

#: Records a (kind, inference type) needs for a model of its own.
MIN_RECORDS = 60

#: Ridge strength of the base fit.
RIDGE = 1e-3

#: Tree settings per learner: chosen by 5-fold cross-validation on the sweep's CONV_2D,
#: DEPTHWISE_CONV_2D, MUL and FULLY_CONNECTED records (smaller trees or fewer rounds lost 2-10
#: points of ops within ±10 %).
KIND_PARAMS: dict[str, dict[str, Any]] = {
    "lightgbm": {
        "objective": "regression",
        "learning_rate": 0.05,
        "num_leaves": 15,
        "min_data_in_leaf": 3,
        "lambda_l2": 1.0,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "max_bin": 255,
        "num_boost_round": 800,
        "seed": 0,
    },
    "trees": {
        "n_trees": 400,
        "learning_rate": 0.05,
        "depth": 4,
        "min_leaf": 3,
        "l2": 1.0,
        "subsample": 0.8,
        "max_bins": 64,
        "seed": 0,
    },
}

_FIT = {"lightgbm": fit_lightgbm, "trees": fit_trees}
_BASE_COLUMNS = [FEATURES.index(f) for f in BASE_FEATURES]


def group_of(features: Mapping[str, Any]) -> str:
    """``"KIND|INFERENCE_TYPE"`` of an op record."""
    return f"{features['kind']}|{features.get('inference_type')}"


def _base_rows(X: np.ndarray) -> np.ndarray:
    return np.c_[np.ones(len(X)), X[:, _BASE_COLUMNS]]


def _round(values: Sequence[float], digits: int = 7) -> list[float]:
    return [float(f"{v:.{digits}g}") for v in values]


def fit_kind_models(
    records: Sequence[Mapping[str, Any]],
    learner: str,
    *,
    min_records: int = MIN_RECORDS,
    groups: Collection[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """A model per (kind, inference type) with at least ``min_records`` ``op`` records (only
    those in ``groups`` when given): ``{"KIND|TYPE": {"w", "trees", "n"}}``, JSON-ready."""
    by_group: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("type", "op") == "op" and r.get("latency_us"):
            by_group[group_of(r)].append(r)
    fits: dict[str, dict[str, Any]] = {}
    for name in sorted(by_group):
        rows = by_group[name]
        if len(rows) < min_records or (groups is not None and name not in groups):
            continue
        X = np.array([op_vector(r) for r in rows])
        y = np.log([max(r["latency_us"], 1e-3) for r in rows])
        A = _base_rows(X)
        w = np.linalg.solve(A.T @ A + RIDGE * np.eye(A.shape[1]), A.T @ y)
        trees = _FIT[learner](X, y, A @ w, KIND_PARAMS[learner])
        fits[name] = {
            "n": len(rows),
            "w": _round(w.tolist()),
            "trees": [
                {
                    "feature": [int(f) for f in t["feature"]],
                    "threshold": _round(t["threshold"]),
                    "left": [int(v) for v in t["left"]],
                    "right": [int(v) for v in t["right"]],
                    "value": _round(t["value"]),
                }
                for t in trees
            ],
        }
    return fits


class KindModels:
    """The fitted kind models of a learned model, ready to predict."""

    def __init__(self, fits: Mapping[str, Mapping[str, Any]]) -> None:
        self.w = {k: np.asarray(v["w"], dtype=np.float64) for k, v in fits.items()}
        self.trees = {k: stack_trees(v["trees"]) for k, v in fits.items() if v.get("trees")}

    def __contains__(self, group: str) -> bool:
        return group in self.w

    def predict(self, features: Mapping[str, Any]) -> float:
        """Predicted single-op latency (us, invoke overhead included) of an op whose group has
        a model (``group_of(features) in self``)."""
        name = group_of(features)
        x = np.asarray([op_vector(features)])
        log_latency = float(_base_rows(x)[0] @ self.w[name])
        if name in self.trees:
            log_latency += float(predict_stacked(self.trees[name], x)[0])
        return math.exp(log_latency)
