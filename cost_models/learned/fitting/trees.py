"""Gradient-boosted regression trees: fitted by LightGBM, stored as plain JSON lists (never
pickle) and predicted in numpy.

Predicting here, not with LightGBM's ``Booster``, keeps the learned cost model free of
``import lightgbm`` (which pulls in pandas, scipy.sparse and scikit-learn: 1.8-2.8 s on the
2-core test machine under load, more than all the tree predictions of a partition: 0.02-0.4 s).
The predictions are LightGBM's own: on the training rows of every booster of a fit of the
committed sweep, :func:`predict_trees` and ``Booster.predict`` differ by 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: LightGBM's settings for the shared trees (``tacopt fit``).
LIGHTGBM_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 3,
    "lambda_l2": 1.0,
    "feature_fraction": 0.9,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "max_bin": 255,
    "num_boost_round": 600,
    "seed": 0,
}


def fit_lightgbm(
    X: np.ndarray, y: np.ndarray, base: np.ndarray, params: Mapping[str, Any] = LIGHTGBM_PARAMS
) -> list[dict[str, list[float]]]:
    """Boosted trees fitting ``y - base`` with LightGBM, each as ``{"feature", "threshold",
    "left", "right", "value"}`` (parallel lists; a leaf has feature -1; go left when
    ``x[feature] <= threshold``), so a fitted model needs no LightGBM to predict and is stored as
    JSON, never pickle.

    Deterministic (one thread, ``deterministic=True``, a fixed seed).

    >>> X = np.arange(40.0).reshape(-1, 1)
    >>> y = (X[:, 0] > 19).astype(float)
    >>> p = {**LIGHTGBM_PARAMS, "num_boost_round": 60, "learning_rate": 0.3, "bagging_freq": 0}
    >>> trees = fit_lightgbm(X, y, np.zeros(40), p)
    >>> np.round(predict_trees(trees, np.array([[5.0], [30.0]])), 2)
    array([0., 1.])
    """
    import lightgbm as lgb

    opts = {k: v for k, v in params.items() if k != "num_boost_round"}
    opts.update(verbosity=-1, num_threads=1, deterministic=True, force_row_wise=True)
    base = np.ascontiguousarray(base, dtype=np.float64)  # a strided view is copied with a warning
    data = lgb.Dataset(X, y, init_score=base, params={"max_bin": opts["max_bin"]})
    booster = lgb.train(opts, data, num_boost_round=int(params["num_boost_round"]))
    return [_from_lightgbm(t["tree_structure"]) for t in booster.dump_model()["tree_info"]]


def _from_lightgbm(root: Mapping[str, Any]) -> dict[str, list[float]]:
    """One LightGBM tree (``dump_model`` form; numeric ``<=`` splits only) as parallel lists."""
    tree: dict[str, list[float]] = {k: [] for k in ("feature", "threshold", "left", "right")}
    tree["value"] = []

    def walk(n: Mapping[str, Any]) -> int:
        node = len(tree["feature"])
        for k in ("feature", "threshold", "left", "right", "value"):
            tree[k].append(0.0)
        if "leaf_value" in n or "split_feature" not in n:
            tree["feature"][node], tree["left"][node], tree["right"][node] = -1, -1, -1
            tree["value"][node] = float(n.get("leaf_value", 0.0))
            return node
        if n.get("decision_type", "<=") != "<=":
            raise ValueError(f"LightGBM split {n.get('decision_type')} is not supported")
        tree["feature"][node] = int(n["split_feature"])
        tree["threshold"][node] = float(n["threshold"])
        tree["left"][node] = walk(n["left_child"])
        tree["right"][node] = walk(n["right_child"])
        return node

    walk(root)
    return tree


def predict_trees(trees: Sequence[Mapping[str, Sequence[float]]], X: np.ndarray) -> np.ndarray:
    """Sum of the trees' outputs for each row of ``X``."""
    return predict_stacked(stack_trees(trees), X)


def stack_trees(trees: Sequence[Mapping[str, Sequence[float]]]) -> tuple[np.ndarray, ...]:
    """The trees as (trees x nodes) arrays, padded with leaves of value 0."""
    size = max((len(t["feature"]) for t in trees), default=1)
    feat = np.full((len(trees), size), -1, dtype=np.int64)
    left = np.zeros((len(trees), size), dtype=np.int64)
    right = np.zeros((len(trees), size), dtype=np.int64)
    thr = np.zeros((len(trees), size))
    value = np.zeros((len(trees), size))
    for i, t in enumerate(trees):
        n = len(t["feature"])
        feat[i, :n], thr[i, :n], value[i, :n] = t["feature"], t["threshold"], t["value"]
        left[i, :n], right[i, :n] = t["left"], t["right"]
    return feat, thr, left, right, value


def predict_stacked(stacked: tuple[np.ndarray, ...], X: np.ndarray) -> np.ndarray:
    """:func:`predict_trees` on :func:`stack_trees`' arrays: all trees step down at once."""
    feat, thr, left, right, value = stacked
    tix = np.arange(len(feat))[:, None]
    rows = np.arange(len(X))[None, :]
    node = np.zeros((len(feat), len(X)), dtype=np.int64)
    while True:
        f = feat[tix, node]
        inner = f >= 0
        if not inner.any():
            return value[tix, node].sum(axis=0)
        x = X[rows, np.where(inner, f, 0)]
        step = np.where(x <= thr[tix, node], left[tix, node], right[tix, node])
        node = np.where(inner, step, node)
