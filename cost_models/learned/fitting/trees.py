"""Gradient-boosted regression trees: fitted by LightGBM, stored as plain JSON lists (never
pickle) and predicted in numpy.

Predicting here, not with LightGBM's ``Booster``, keeps the learned cost model free of
``import lightgbm`` (which pulls in pandas, scipy.sparse and scikit-learn: 1.8-2.8 s on the
2-core test machine under load, more than all the tree predictions of a partition: 0.02-0.4 s).
The predictions are LightGBM's own: on the training rows of every booster of a fit of the
committed sweep, :func:`predict_trees` and ``Booster.predict`` differ by 0.0.
"""

from __future__ import annotations

import re
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
    # Deferred: LightGBM only when fitting trees (a fitted model predicts from JSON lists).
    import lightgbm as lgb

    opts = {k: v for k, v in params.items() if k != "num_boost_round"}
    opts.update(verbosity=-1, num_threads=1, deterministic=True, force_row_wise=True)
    base = np.ascontiguousarray(base, dtype=np.float64)  # a strided view is copied with a warning
    data = lgb.Dataset(X, y, init_score=base, params={"max_bin": opts["max_bin"]})
    # kept as trained: the default reloads the booster from its text to free the data, and the
    # text is all we read
    booster = lgb.train(
        opts, data, num_boost_round=int(params["num_boost_round"]), keep_training_booster=True
    )
    return trees_from_text(booster.model_to_string())


def trees_from_text(model: str) -> list[dict[str, list[float]]]:
    """The trees of a LightGBM model in its text form (``Booster.model_to_string``; numeric
    ``<=`` splits only) as parallel lists, nodes in pre-order (a node, its left subtree, its right
    one), as ``dump_model``'s nested form gave them.

    Read from the text, not from ``dump_model``'s JSON: a LightGBM booster writes its text
    anyway, and the JSON and its recursive walk took 8 s of a 14 s fit of 5,600 records (2-core
    Zen 4). The numbers are the same: both print LightGBM's doubles in full (17 digits).

    >>> text = "\\n".join(["Tree=0", "num_leaves=3", "split_feature=1 0", "threshold=0.5 2.5",
    ...     "decision_type=2 2", "left_child=-1 -2", "right_child=1 -3", "leaf_value=1 2 3", "",
    ...     "Tree=1", "num_leaves=1", "leaf_value=0.25", "", "end of trees"])
    >>> trees = trees_from_text(text)
    >>> trees[0]["feature"], trees[0]["left"], trees[0]["right"], trees[0]["value"]
    ([1, -1, 0, -1, -1], [1, -1, 3, -1, -1], [2, -1, 4, -1, -1], [0.0, 1.0, 0.0, 2.0, 3.0])
    >>> trees[1]
    {'feature': [-1], 'threshold': [0.0], 'left': [-1], 'right': [-1], 'value': [0.25]}
    """
    trees = []
    body = model.split("end of trees", 1)[0]
    for block in re.split(r"^Tree=", body, flags=re.MULTILINE)[1:]:
        fields = dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)
        trees.append(_tree_from_fields(fields))
    return trees


def _tree_from_fields(fields: Mapping[str, str]) -> dict[str, list[float]]:
    """One tree of :func:`trees_from_text` from its ``key=values`` lines."""

    def ints(key: str) -> list[int]:
        return [int(v) for v in fields.get(key, "").split()]

    leaves = [float(v) for v in fields["leaf_value"].split()]
    split, left_of, right_of = ints("split_feature"), ints("left_child"), ints("right_child")
    threshold = [float(v) for v in fields.get("threshold", "").split()]
    if any(d & 1 for d in ints("decision_type")):  # bit 0: a categorical split
        raise ValueError("LightGBM categorical splits are not supported")
    tree: dict[str, list[float]] = {k: [] for k in ("feature", "threshold", "left", "right")}
    tree["value"] = []

    def walk(child: int) -> int:  # LightGBM's child index: a node, or ~leaf
        node = len(tree["feature"])
        if child < 0:
            tree["feature"].append(-1)
            tree["threshold"].append(0.0)
            tree["left"].append(-1)
            tree["right"].append(-1)
            tree["value"].append(leaves[~child])
            return node
        tree["feature"].append(split[child])
        tree["threshold"].append(threshold[child])
        tree["left"].append(0)
        tree["right"].append(0)
        tree["value"].append(0.0)
        tree["left"][node] = walk(left_of[child])
        tree["right"][node] = walk(right_of[child])
        return node

    walk(0 if split else ~0)
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
