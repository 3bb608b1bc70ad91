"""One model per (op kind, inference type): a log-linear base on the work the kernel does,
boosted trees on what it leaves; both on the net latency (the invoke overhead, ``overhead_us``,
added back; files before version 6 fitted the gross one and store no overhead).

The learned model's shared trees (:mod:`tacopt.cost_models.learned.fitting.model`) see every kind at
once, so a kind with many configurations (CONV_2D, DEPTHWISE_CONV_2D, MUL, ...) gets only the splits
it wins against the others. A kind model is fitted on that kind's records alone: first a ridge fit
of ``log(latency_us - overhead_us)`` on ``[1, log padded MACs, log bytes, log FLOPs, log output
elements]``
(:data:`BASE_FEATURES`: XNNPACK's tiled work and the bytes it streams; it extrapolates in size
where trees cannot), then LightGBM's boosted trees
(:func:`~tacopt.cost_models.learned.fitting.trees.fit_lightgbm`) on its residual over every tree
feature. Which kinds use their own model is chosen on held-out training configurations
(:func:`tacopt.cost_models.learned.fitting.fit.fit`); the rest keep the shared trees. A kind
XNNPACK runs as another (a FULLY_CONNECTED is a 1x1 CONV_2D's GEMM, :data:`ALIASES`) may be priced
by that kind's model instead, chosen the same way.

Stored as JSON (``{"w": [...], "trees": [...], "n": N, "range": [lo, hi]}`` per
``"KIND|TYPE"``), never pickle.

>>> rng = np.random.default_rng(0)
>>> recs = [{"kind": "ADD", "inference_type": "FLOAT", "flops": float(n), "bytes": 12.0 * n,
...          "outputs": [[[n]]], "inputs": [[[n], "float32"], [[n], "float32"]],
...          "latency_us": 0.5 + n / 2000 * (1 + 0.01 * rng.random())}
...         for n in rng.integers(1000, 10 ** 6, 80)]
>>> fits = fit_kind_models(recs, "lightgbm", min_records=40)
>>> m = KindModels(fits)
>>> x = {**recs[0], "flops": 5e5, "bytes": 6e6, "outputs": [[[500000]]],
...      "inputs": [[[500000], "float32"], [[500000], "float32"]]}
>>> round(m.predict(x) / (0.5 + 5e5 / 2000), 1)
1.0
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.learned.fitting.features import (
    FEATURES,
    fc_as_pointwise_conv,
    global_pool,
    op_vector,
)
from tacopt.cost_models.learned.fitting.runs import deconv_runs
from tacopt.cost_models.learned.fitting.trees import (
    fit_lightgbm,
    predict_stacked,
    stack_trees,
)
from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.speed import family

#: Inputs of a kind model's log-linear base (after a constant 1), by :data:`FEATURES` name.
BASE_FEATURES = ("log_padded_macs", "log_bytes", "log_flops", "log_output_elements")

#: Records a (kind, inference type) needs for a model of its own.
MIN_RECORDS = 60

#: Ridge strength of the base fit: its inputs are nearly collinear for some kinds (bytes and
#: outputs of a copy), where a weak ridge (1e-3) gave weights of +-40 and a CONCATENATION of
#: odd proportions predicted 1e11 x too slow; 1.0 keeps them tame at no cost in
#: cross-validation (CONV_2D 89.3 vs 89.6 %, MUL 89.7 vs 89.6 % within ±10 %).
RIDGE = 1.0

#: A prediction stays within e^-1 x the group's fastest and e^2 x its slowest training latency.
LOW_MARGIN, HIGH_MARGIN = 1.0, 2.0

#: Tree settings per learner: chosen by 5-fold cross-validation on the sweep's CONV_2D,
#: DEPTHWISE_CONV_2D, MUL and FULLY_CONNECTED records (smaller trees or fewer rounds lost 2-10
#: points of ops within ±10 %).
KIND_PARAMS: dict[str, dict[str, Any]] = {
    "lightgbm": {
        # Huber on the log net latency (model.HUBER says why); quadratic within 0.05: on net
        # latencies 0.05 beat 0.1 on the zoo's tuning half (71.1 vs 68.3 % of ops within ±10 %)
        # and lost 0.7 points on held-out sweep configurations (67.2 vs 67.9 %)
        "objective": "huber",
        "alpha": 0.05,
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
}

_FIT = {"lightgbm": fit_lightgbm}
_BASE_COLUMNS = [FEATURES.index(f) for f in BASE_FEATURES]
_BASE_W = 1 + len(BASE_FEATURES)
#: The largest log-latency priced: e^700 µs is far past any plan's total and e^710 overflows a
#: float, which a model file's weights (data from anyone) may otherwise ask for.
EXP_MAX = 700.0


def group_of(features: Mapping[str, Any]) -> str:
    """``"KIND|INFERENCE_TYPE"`` of an op record."""
    return f"{features['kind']}|{features.get('inference_type')}"


def family_group(group: str) -> str:
    """The family model's name for ``group``: its kernel family
    (:func:`~tacopt.cost_models.learned.measurement.speed.family`) and inference type.

    >>> family_group("MUL|FLOAT"), family_group("PAD|QUANTIZED_INT8")
    ('family:elementwise|FLOAT', 'family:movement|QUANTIZED_INT8')
    """
    kind, _, itype = group.partition("|")
    return f"family:{family(kind, itype)}|{itype}"


#: Kinds that may be priced as another kind runs them: kind -> (that kind, the conversion).
ALIASES: dict[str, tuple[str, Callable[[Mapping[str, Any]], dict[str, Any] | None]]] = {
    "FULLY_CONNECTED": ("CONV_2D", fc_as_pointwise_conv),
}


def base_step(features: Mapping[str, Any], *, runs: bool = True) -> float:
    """The last input of a kind model's base fit where its group has one (:func:`_base_rows`):
    a reduction's :func:`~tacopt.cost_models.learned.fitting.features.global_pool` (0 / 1,
    version 12), a transposed convolution's ``log(1 + RUN_MACS x runs / MACs)`` (version 15).

    XNNPACK's deconvolution costs ~0.02 ns a MAC and ~10 ns a run (an output pixel x a tap
    landing on it, :func:`~tacopt.cost_models.learned.fitting.runs.deconv_runs`) here: with
    the base's ``log MACs`` the step makes ``log(a MACs + b runs)``, which a log-linear base
    cannot otherwise follow from wide decoders (MAC-bound) to a segmenter's 8 -> 8 channel head
    (run-bound, 9.8 ns a run; priced at 0.57x with the runs left to the trees). Strided only:
    at stride 1 it runs as a convolution (1.7-2.2 ns a tap and output pixel); else 0."""
    if runs and features.get("kind") == "TRANSPOSE_CONV":
        ins, outs = features.get("inputs") or [], features.get("outputs") or []
        x = ins[2][0] if len(ins) > 2 and ins[2] else None
        y = outs[0][0] if outs and outs[0] else None
        if ins[1] and x and y and len(y) == 4 and len(x) == 4 and y[1] * y[2] > x[1] * x[2]:
            n = math.expm1(deconv_runs(ins[1][0], ins[2][0], outs[0][0])[0])
            return math.log1p(RUN_MACS * n / max(float(features.get("flops", 0.0)) / 2, 1.0))
    return float(global_pool(features))


#: MACs of XNNPACK's deconvolution that cost what one of its runs costs (:func:`base_step`).
RUN_MACS = 500.0


def _base_rows(X: np.ndarray, pools: np.ndarray | None = None) -> np.ndarray:
    """The inputs of a kind model's log-linear base: ``[1, BASE_FEATURES...]``, then, for a
    group with a :func:`base_step`, each op's (``pools``): a reduction's global pool kept 4-D
    (version 12), a transposed convolution's runs (version 15).

    That is a kernel path of its own, 30x faster an element on LiteRT's builtin int8 kernels, and
    the trees cannot carry such a step: on the Huber loss (:data:`KIND_PARAMS`) a round moves a
    leaf by at most ``learning_rate x alpha``, 2.0 in log over 800 rounds, and the int8 MEAN's
    model of a 3-minute builtin adaptation priced its own training global pools at 2x (tuning
    half: 2 of 16 int8 MEANs within ±10 %, MobileNet V3's at 2.2-3.0x). In the base fit the
    step is one weight."""
    A = np.c_[np.ones(len(X)), X[:, _BASE_COLUMNS]]
    return A if pools is None else np.c_[A, pools]


def _round(values: Sequence[float], digits: int = 7) -> list[float]:
    return [float(f"{v:.{digits}g}") for v in values]


def fit_kind_models(
    records: Sequence[Mapping[str, Any]],
    learner: str,
    *,
    min_records: int = MIN_RECORDS,
    groups: Collection[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """A model per (kind, inference type) with at least ``min_records`` ``op`` records, and one
    per (kernel family, inference type) (:func:`family_group`; only those in ``groups`` when
    given): ``{"KIND|TYPE": {"w", "trees", "n", "range", "overhead_us"}}``, JSON-ready. A kind's
    group also learns from the records of the kinds that are its aliases (:data:`ALIASES`:
    CONV_2D from FULLY_CONNECTED as 1x1 convolutions: one GEMM model). A family model learns from
    every kind of its family (two or more), told apart by one tree input per kind (``kinds``): a
    kind with few configurations borrows what the others show of how the kernels scale."""
    by_group: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("type", "op") == "op" and r.get("latency_us"):
            by_group[group_of(r)].append(r)
            by_group[family_group(group_of(r))].append(r)
            # the kind that runs it learns from it too (a FULLY_CONNECTED is a 1x1 CONV_2D)
            converted = ALIASES[r["kind"]][1](r) if r["kind"] in ALIASES else None
            if converted is not None:
                by_group[group_of(converted)].append(converted)
    fits: dict[str, dict[str, Any]] = {}
    for name in sorted(by_group):
        rows = by_group[name]
        if len(rows) < min_records or (groups is not None and name not in groups):
            continue
        kinds: list[str] = []
        if name.startswith("family:"):  # one input per kind; a family of one kind adds nothing
            kinds = sorted(k for k, n in Counter(r["kind"] for r in rows).items() if n >= 4)
            if len(kinds) < 2:
                continue
        X = np.array([op_vector(r, kinds) for r in rows])
        y = np.log([net_latency(r) for r in rows])
        pools = np.array([base_step(r) for r in rows])
        A = _base_rows(X, pools if pools.any() else None)
        w = np.linalg.solve(A.T @ A + RIDGE * np.eye(A.shape[1]), A.T @ y)
        trees = _FIT[learner](X, y, A @ w, KIND_PARAMS[learner])
        fits[name] = {
            "n": len(rows),
            **({"kinds": kinds} if kinds else {}),
            "overhead_us": _round([statistics.median(r.get("overhead_us", 0.0) for r in rows)])[0],
            "w": _round(w.tolist()),
            "range": _round([float(y.min()) - LOW_MARGIN, float(y.max()) + HIGH_MARGIN]),
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


def alias_group(group: str) -> str:
    """The group whose model prices ``group`` as an alias (``"FULLY_CONNECTED|FLOAT"`` ->
    ``"CONV_2D|FLOAT"``)."""
    kind, _, itype = group.partition("|")
    return f"{ALIASES[kind][0]}|{itype}" if kind in ALIASES else group


class KindModels:
    """The fitted kind models of a learned model, ready to predict."""

    def __init__(
        self, fits: Mapping[str, Mapping[str, Any]], *, reductions: bool = True, runs: bool = True
    ) -> None:
        #: whether the trees see a reduction's keep_dims and axes (model version 12), and the
        #: innermost runs of a broadcast or a reduction (version 15)
        self.reductions, self.flags = reductions, {"reductions": reductions, "runs": runs}
        self.w = {k: np.asarray(v["w"], dtype=np.float64) for k, v in fits.items()}
        self.trees = {k: stack_trees(v["trees"]) for k, v in fits.items() if v.get("trees")}
        self.range = {k: tuple(v.get("range", (-math.inf, math.inf))) for k, v in fits.items()}
        # fitted on net latencies (the invoke overhead added back), or gross (older files: 0)
        self.overhead = {k: float(v.get("overhead_us", 0.0)) for k, v in fits.items()}
        self.kinds = {k: list(v.get("kinds", [])) for k, v in fits.items()}

    def __contains__(self, group: str) -> bool:
        return group in self.w

    def alias_target(self, features: Mapping[str, Any]) -> dict[str, Any] | None:
        """``features`` converted to the kind that prices them (:data:`ALIASES`), when that
        kind's group has a model."""
        alias = ALIASES.get(features["kind"])
        if alias is None or alias_group(group_of(features)) not in self.w:
            return None
        return alias[1](features)

    def predict(
        self,
        features: Mapping[str, Any],
        *,
        own: bool = True,
        alias: bool = True,
        by_family: bool = False,
    ) -> float | None:
        """Predicted single-op latency (us, invoke overhead included) by the op's family model
        (``by_family``), else its own group model (``own``), else as the kind it is an alias of
        (``alias``); None when none applies."""
        name = group_of(features)
        if by_family:
            name = family_group(name)
            if name not in self.w:
                return None
        elif not (own and name in self.w):
            converted = self.alias_target(features) if alias else None
            if converted is None:
                return None
            features, name = converted, group_of(converted)
        x = np.asarray([op_vector(features, self.kinds[name], **self.flags)])
        # a group of reductions steps for a global pool (version 12; before, 5 weights)
        pools = (
            np.array([base_step(features, runs=self.flags["runs"])])
            if len(self.w[name]) > _BASE_W
            else None
        )
        log_latency = float(_base_rows(x, pools)[0] @ self.w[name])
        if name in self.trees:
            log_latency += float(predict_stacked(self.trees[name], x)[0])
        lo, hi = self.range[name]
        return self.overhead[name] + math.exp(min(max(log_latency, lo), hi, EXP_MAX))
