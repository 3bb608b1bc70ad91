"""Gradient-boosted regression trees in numpy (squared loss), stored as plain JSON lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Boosted regression trees on the residual of the group fits (squared loss on log latency).
TREE_PARAMS: dict[str, Any] = {
    "n_trees": 300,
    "learning_rate": 0.05,
    "depth": 6,
    "min_leaf": 3,
    "l2": 1.0,
    "subsample": 0.8,
    "max_bins": 64,
    "seed": 0,
}


def fit_trees(
    X: np.ndarray, y: np.ndarray, base: np.ndarray, params: Mapping[str, Any] = TREE_PARAMS
) -> list[dict[str, list[float]]]:
    """Boosted regression trees fitting ``y - base`` (squared loss, histogram splits).

    Each tree is ``{"feature", "threshold", "left", "right", "value"}`` (parallel lists; a leaf
    has feature -1; go left when ``x[feature] <= threshold``); the learning rate is folded into
    the leaf values. Deterministic for a given ``params["seed"]``.

    >>> X = np.arange(40.0).reshape(-1, 1)
    >>> y = (X[:, 0] > 19).astype(float)
    >>> trees = fit_trees(X, y, np.zeros(40), {**TREE_PARAMS, "n_trees": 60, "learning_rate": 0.3})
    >>> np.round(predict_trees(trees, np.array([[5.0], [30.0]])), 2)
    array([0., 1.])
    """
    rng = np.random.default_rng(params["seed"])
    n, F = X.shape
    cuts = []
    binned = np.empty((n, F), dtype=np.int64)
    for j in range(F):
        u = np.unique(X[:, j])
        if len(u) > params["max_bins"]:
            u = np.unique(np.quantile(X[:, j], np.linspace(0, 1, params["max_bins"] + 1)))
        cuts.append((u[:-1] + u[1:]) / 2)
        binned[:, j] = np.searchsorted(cuts[j], X[:, j], side="left")
    pred = np.asarray(base, dtype=np.float64).copy()
    trees = []
    for _ in range(int(params["n_trees"])):
        rows = np.flatnonzero(rng.random(n) < params["subsample"])
        tree = _grow_tree(rows, y - pred, binned, cuts, params)
        trees.append(tree)
        pred += predict_stacked(stack_trees([tree]), X)
    return trees


def _grow_tree(
    rows: np.ndarray,
    resid: np.ndarray,
    binned: np.ndarray,
    cuts: Sequence[np.ndarray],
    params: Mapping[str, Any],
) -> dict[str, list[float]]:
    """One regression tree on ``resid[rows]``: best histogram split per node, depth-first."""
    lam, min_leaf, depth = float(params["l2"]), int(params["min_leaf"]), int(params["depth"])
    lr = float(params["learning_rate"])
    F = binned.shape[1]
    nb = max(len(c) for c in cuts) + 1
    offsets = np.arange(F) * nb
    tree: dict[str, list[float]] = {k: [] for k in ("feature", "threshold", "left", "right")}
    tree["value"] = []

    def grow(idx: np.ndarray, level: int) -> int:
        node = len(tree["feature"])
        r = resid[idx]
        total, m = float(r.sum()), len(idx)
        for k, v in (("feature", -1), ("threshold", 0.0), ("left", -1), ("right", -1)):
            tree[k].append(v)
        tree["value"].append(round(lr * total / (m + lam), 6))
        if level == depth or m < 2 * min_leaf:
            return node
        codes = (binned[idx] + offsets).ravel()
        sums = np.bincount(codes, np.repeat(r, F), F * nb).reshape(F, nb)
        counts = np.bincount(codes, minlength=F * nb).reshape(F, nb)
        ls, lc = np.cumsum(sums, 1)[:, :-1], np.cumsum(counts, 1)[:, :-1]
        gain = ls**2 / (lc + lam) + (total - ls) ** 2 / (m - lc + lam)
        gain[(lc < min_leaf) | (m - lc < min_leaf)] = -np.inf
        jj, bb = np.unravel_index(int(np.argmax(gain)), gain.shape)
        j, b = int(jj), int(bb)
        if gain[j, b] - total**2 / (m + lam) <= 1e-12 or b >= len(cuts[j]):
            return node
        go_left = binned[idx, j] <= b
        tree["feature"][node], tree["threshold"][node] = j, float(cuts[j][b])
        tree["left"][node] = grow(idx[go_left], level + 1)
        tree["right"][node] = grow(idx[~go_left], level + 1)
        return node

    grow(rows, 0)
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


#: LightGBM's settings when it is the learner (``tacopt fit --learner lightgbm``).
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
    """Boosted trees fitting ``y - base`` with LightGBM, returned in :func:`fit_trees`' format
    (so a fitted model needs no LightGBM to predict and is stored as JSON, never pickle).

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
