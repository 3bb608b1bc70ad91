"""``learned``: per-op CPU latency predicted from features measured on a real runtime.

Fit (:func:`fit`) on records from :mod:`tacopt.cost_models.measure`; the model is plain JSON (format
``tacopt-learned``, version 3), never pickle, and loads as a cost model with
``--cost-model path/to/model.json``. The target is the log of the measured single-op latency
(one ``invoke()``, its fixed Python overhead ``overhead_us`` included); ``op_cost`` reports the
latency *inside a model*: the prediction net of that overhead, times ``in_model_scale``.

How a prediction is made (the source is reported by :meth:`LearnedCostModel.predict`):

1. ``exact``: the configuration (same :func:`tacopt.cost_models.measure.op_key`) was measured: its
   latency.
2. ``group``: a ridge fit of log net latency on ``[1, log FLOPs, log bytes, log output
   elements]`` for the op's (kind, inference type), shrunk towards the kind's fit, itself shrunk
   towards the fit over every record (``SHRINK``: a group of a few records stays near its
   parent); plus gradient-boosted regression trees (numpy, :func:`fit_trees`, stored as JSON
   lists) fitted on the residuals over :data:`FEATURES` (types, log FLOPs / bytes, kernel
   geometry, and features that follow the kernels: GEMM K and N, im2col bytes, channel tiles of
   8 / 16, broadcast pattern, strided-copy runs) and one flag per frequent kind.
3. ``movement``: a data-movement op (:data:`tacopt.cost_models.ops.MOVEMENT`: SLICE, CONCATENATION,
   TRANSPOSE, PAD, ...) costs fixed + per byte x bytes moved + per run x contiguous runs
   copied (:func:`movement_fits`), fitted per (kind, inference type); a kind with fewer than 3
   records, or asked beyond ``RANGE`` x the bytes it was fitted on, uses the fit pooled over
   every data-movement kind of the type. The trees extrapolate badly to copies of shapes
   training never saw (chosen on the validation split inside the training half).
4. ``fallback``: an op kind never seen in training uses the fit over every record plus the trees,
   and is flagged (``strict=True`` raises :class:`CostModelError` instead).

Whole models (:meth:`LearnedCostModel.predict_model`): one invoke overhead + ``in_model_scale`` x
the sum of net op latencies + ``while_trip_us`` per WHILE trip; both terms are fitted on the
training models' measured latencies. Quantize / dequantize at a boundary cost
``conversion_us_per_element`` (fitted on QUANTIZE / DEQUANTIZE records).

The model knows one device, the one it was measured on (``device``, default ``"CPU"``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.base import (
    CostModelBase,
    CostModelError,
    LinkCost,
    check_inference_type,
    needs_conversion,
    register_model_format,
)
from tacopt.cost_models.ops import MOVEMENT, trip_count

FORMAT = "tacopt-learned"
VERSION = 3
MIN_GROUP = 4
RIDGE = 1e-3
SHRINK = 3.0
FLOOR_US = 0.05
#: A kind's data-movement fit answers within this factor of the bytes it was fitted on.
RANGE = 2.0

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

_ITYPES = {"FLOAT": 0, "QUANTIZED_INT8": 1, "QUANTIZED_UINT8": 2, "HYBRID": 3}
_DTYPES = {"float32": 0, "int8": 1, "uint8": 2, "int32": 3, "bool": 4, "int64": 5, "int16": 6}
_ITEMSIZE = {"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "float16": 2, "int64": 8}
_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU6": 2, "RELU_N1_TO_1": 3, "TANH": 4}
_KERNELS = ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV")

#: Names of the entries of :func:`op_vector` (the tree features), in order.
FEATURES = (
    "inference_type",
    "dtype",
    "log_flops",
    "log_bytes",
    "log_activation_bytes_in",
    "log_weight_bytes",
    "log_bytes_out",
    "log_output_elements",
    "log_input_elements",
    "kernel_h",
    "kernel_w",
    "log_kernel_area",
    "stride",
    "dilation",
    "log_channels_in",
    "log_channels_out",
    "depthwise",
    "broadcast",
    "rank",
    "inputs",
    "outputs",
    "activation",
    "padding_same",
    "log_flops_per_output",
    "log_spatial",
    "constant_operand",
    "log_batch",
    # how the kernels work (XNNPACK / TFLite CPU): GEMM size and tiles, im2col, broadcasting,
    # strided copies
    "log_macs",
    "log_gemm_k",
    "log_gemm_n",
    "pointwise",
    "log_im2col_bytes",
    "channels_in_mod8",
    "channels_out_mod8",
    "channels_out_mod16",
    "broadcast_pattern",
    "log_small_operand",
    "log_outer",
    "log_inner",
    "log_data_moved",
    "is_int8",
)

#: Binary elementwise broadcast patterns (:func:`op_vector` ``broadcast_pattern``).
_BROADCAST = {"none": 0, "scalar": 1, "channel": 2, "spatial": 3, "other": 4}

_NO_TENSOR: list[Any] = [[1], "float32", False, False]


def _desc(d: Sequence[Any]) -> list[Any]:
    """A tensor description ``[shape, dtype, is_constant, ...]`` with defaults filled in."""
    return [list(d[0]), d[1] if len(d) > 1 else "float32", len(d) > 2 and bool(d[2])]


def _elements(d: Sequence[Any]) -> int:
    return math.prod(max(int(x), 1) for x in d[0])


def _nbytes(d: Sequence[Any]) -> int:
    return _elements(d) * _ITEMSIZE.get(d[1], 4)


def op_vector(features: Mapping[str, Any], kinds: Sequence[str] = ()) -> list[float]:
    """The tree inputs of one op record (see :data:`FEATURES`), then one flag per kind in
    ``kinds``.

    >>> f = {"kind": "ADD", "inference_type": "FLOAT", "flops": 8.0, "bytes": 96.0,
    ...      "inputs": [[[2, 4], "float32", False, False], [[2, 4], "float32", False, False]],
    ...      "outputs": [[[2, 4], "float32", False, False]], "options": {}}
    >>> v = op_vector(f, ["ADD", "MUL"])
    >>> len(v) == len(FEATURES) + 2, v[-2:], v[FEATURES.index("broadcast")]
    (True, [1.0, 0.0], 0.0)
    """
    ins = [_desc(d) for d in features.get("inputs", []) if d]
    outs = [_desc(d) for d in features.get("outputs", []) if d]
    acts = [d for d in ins if not d[2]]
    consts = [d for d in ins if d[2]]
    main = max(acts, key=_elements) if acts else (ins[0] if ins else _NO_TENSOR)
    out = outs[0] if outs else _NO_TENSOR
    shape = list(out[0])
    opts = features.get("options") or {}
    kind = features["kind"]
    kh = kw = 1
    if kind in _KERNELS and len(ins) > 1 and len(ins[1][0]) == 4:
        kh, kw = ins[1][0][1], ins[1][0][2]
    if "filter_height" in opts:
        kh, kw = opts["filter_height"], opts["filter_width"]
    out_elems = sum(_elements(d) for d in outs) or 1
    flops = float(features.get("flops", 0.0))
    sizes = {_elements(d) for d in acts if _elements(d) > 1}
    row = [
        _ITYPES.get(features.get("inference_type", ""), 4),
        _DTYPES.get(main[1], 7),
        math.log1p(flops),
        math.log1p(features.get("bytes", 0.0)),
        math.log1p(sum(_nbytes(d) for d in acts)),
        math.log1p(sum(_nbytes(d) for d in consts)),
        math.log1p(sum(_nbytes(d) for d in outs)),
        math.log1p(out_elems),
        math.log1p(_elements(main)),
        kh,
        kw,
        math.log1p(kh * kw),
        opts.get("stride_h", 1),
        opts.get("dilation_h_factor", 1),
        math.log1p(main[0][-1] if main[0] else 1),
        math.log1p(shape[-1] if shape else 1),
        float(kind == "DEPTHWISE_CONV_2D"),
        float(len(sizes) > 1),
        len(shape),
        len(ins),
        len(outs),
        _ACTIVATIONS.get(opts.get("fused_activation_function", "NONE"), 5),
        float(opts.get("padding") == "SAME"),
        math.log1p(flops / out_elems),
        math.log1p(shape[1] * shape[2] if len(shape) == 4 else 1),
        float(bool(consts)),
        math.log1p(shape[0] if shape else 1),
    ]
    return (
        [float(x) for x in row]
        + _kernel_terms(kind, ins, acts, outs, opts, flops)
        + [float(kind == k) for k in kinds]
    )


def _kernel_terms(
    kind: str,
    ins: Sequence[list[Any]],
    acts: Sequence[list[Any]],
    outs: Sequence[list[Any]],
    opts: Mapping[str, Any],
    flops: float,
) -> list[float]:
    """The features that follow the kernels: a convolution / matmul is a GEMM of M output
    pixels x N output channels x K = kernel area x input channels (im2col when the kernel is
    not 1x1 / stride 1), tiled by 8 / 16 channels; a binary elementwise op streams its output
    with one operand broadcast in a pattern; a data-movement op copies ``outer`` runs of
    ``inner`` elements."""
    out = outs[0] if outs else _NO_TENSOR
    oshape = [max(int(d), 1) for d in out[0]]
    out_elems = math.prod(oshape) if oshape else 1
    k = n = 1
    pointwise = 0.0
    im2col = 0.0
    cin = cout = 1
    if kind in _KERNELS + ("FULLY_CONNECTED", "BATCH_MATMUL") and len(ins) > 1:
        w = [max(int(d), 1) for d in ins[1][0]] or [1]
        x = [max(int(d), 1) for d in ins[0 if kind != "TRANSPOSE_CONV" else 2][0]] or [1]
        cin, cout = x[-1], oshape[-1] if oshape else 1
        if kind == "DEPTHWISE_CONV_2D":
            k, n = math.prod(w[1:3]), cout
        elif kind in ("CONV_2D", "TRANSPOSE_CONV") and len(w) == 4:
            k, n = math.prod(w[1:]), w[0]
            pointwise = float(w[1] * w[2] == 1 and opts.get("stride_h", 1) == 1)
            if not pointwise:
                im2col = out_elems / max(n, 1) * k * _ITEMSIZE.get(ins[0][1], 4)
        else:
            k, n = x[-1], cout
    pattern = "none"
    small = 1
    if len(ins) == 2 and kind not in _KERNELS:
        sizes = sorted(ins, key=_elements)
        small = _elements(sizes[0])
        big = sizes[1]
        if small == _elements(big):
            pattern = "none"
        elif small == 1:
            pattern = "scalar"
        elif big[0] and small == max(int(big[0][-1]), 1):
            pattern = "channel"
        elif big[0] and len(big[0]) >= 2 and small * max(int(big[0][-1]), 1) == _elements(big):
            pattern = "spatial"
        else:
            pattern = "other"
    axis = opts.get("axis")
    outer = inner = 1.0
    if isinstance(axis, int) and oshape:
        ax = axis % len(oshape)
        outer = float(math.prod(oshape[:ax]))
        inner = float(math.prod(oshape[ax:]))
    moved = sum(_nbytes(d) for d in acts) + sum(_nbytes(d) for d in outs)
    dtype = (acts[0] if acts else out)[1]
    return [
        math.log1p(flops / 2),
        math.log1p(k),
        math.log1p(n),
        pointwise,
        math.log1p(im2col),
        float(cin % 8 == 0),
        float(cout % 8 == 0),
        float(cout % 16 == 0),
        float(_BROADCAST[pattern]),
        math.log1p(small),
        math.log1p(outer),
        math.log1p(inner),
        math.log1p(moved),
        float(dtype in ("int8", "uint8")),
    ]


def design_row(features: Mapping[str, Any]) -> list[float]:
    """The group-fit inputs of one op: ``[1, log FLOPs, log bytes, log output elements]``."""
    outs = [o for o in features.get("outputs", []) if o]
    out_elems = sum(math.prod(max(d, 1) for d in o[0]) for o in outs) if outs else 1
    return [
        1.0,
        math.log1p(features.get("flops", 0.0)),
        math.log1p(features.get("bytes", 0.0)),
        math.log1p(out_elems),
    ]


def net_latency(record: Mapping[str, Any]) -> float:
    """Measured op latency minus the invoke overhead, floored at 0.05 us."""
    return max(record["latency_us"] - record.get("overhead_us", 0.0), FLOOR_US)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A predicted single-op latency, ``invoke()`` overhead included (``latency_us``), and where
    it came from (``exact``, ``group``, ``fallback``)."""

    latency_us: float
    source: str


def _fit_group(X: np.ndarray, y: np.ndarray, prior: np.ndarray, strength: float) -> np.ndarray:
    """Least squares with a ridge pulling the weights towards ``prior``."""
    A = X.T @ X + strength * np.eye(X.shape[1])
    return np.linalg.solve(A, X.T @ y + strength * prior)


# --------------------------------------------------------------------------------------------
# gradient-boosted regression trees (numpy; stored as JSON lists)
# --------------------------------------------------------------------------------------------


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
        pred += _predict_stacked(_stack_trees([tree]), X)
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
    return _predict_stacked(_stack_trees(trees), X)


def _stack_trees(trees: Sequence[Mapping[str, Sequence[float]]]) -> tuple[np.ndarray, ...]:
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


def _predict_stacked(stacked: tuple[np.ndarray, ...], X: np.ndarray) -> np.ndarray:
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


# --------------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------------


def fit(records: Sequence[Mapping[str, Any]], *, device: str = "CPU") -> dict[str, Any]:
    """Fit a learned model (a JSON-ready dict) on measurement records.

    Parameters
    ----------
    records : records from :func:`tacopt.cost_models.measure.read_records` (``op`` and ``model``).
    device : the device the records were measured on.

    Raises
    ------
    CostModelError
        When there is no ``op`` record to learn from.

    Examples
    --------
    >>> recs = [{"type": "op", "key": f"k{i}", "kind": "ADD", "inference_type": "FLOAT",
    ...          "flops": 10.0 ** i, "bytes": 12.0 * 10 ** i, "outputs": [[[10 ** i]]],
    ...          "latency_us": 1 + 10.0 ** i / 1000, "overhead_us": 1.0} for i in range(2, 7)]
    >>> m = LearnedCostModel(fit(recs))
    >>> m.predict({"kind": "ADD", "inference_type": "FLOAT", "flops": 1e4, "bytes": 1.2e5,
    ...            "outputs": [[[10 ** 4]]]}, key="k4")
    Prediction(latency_us=11.0, source='exact')
    """
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        raise CostModelError("learned: no op records to fit on")
    table: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[tuple[list[float], float]]] = defaultdict(list)
    for r in ops:
        table[r["key"]].append(r["latency_us"])
        row, target = design_row(r), math.log(net_latency(r))
        for name in (f"{r['kind']}|{r['inference_type']}", r["kind"], "*"):
            groups[name].append((row, target))
    # the hierarchy global -> kind -> (kind, type): each level shrunk towards its parent, so a
    # group of a few records stays close to its kind's fit instead of extrapolating on its own
    fits: dict[str, dict[str, Any]] = {}
    for name in sorted(groups, key=lambda g: (g != "*", "|" in g, g)):
        rows = groups[name]
        parent = None if name == "*" else fits[name.split("|")[0] if "|" in name else "*"]
        X = np.array([r for r, _ in rows])
        y = np.array([v for _, v in rows])
        prior = np.zeros(X.shape[1]) if parent is None else np.asarray(parent["w"])
        w = _fit_group(X, y, prior, RIDGE if parent is None else SHRINK)
        resid = y - X @ w
        fits[name] = {
            "w": [round(v, 6) for v in w.tolist()],
            "n": len(rows),
            "rmse_log": round(float(np.sqrt(np.mean(resid**2))), 4),
        }
    counts: dict[str, int] = defaultdict(int)
    for r in ops:
        counts[r["kind"]] += 1
    kinds = sorted(k for k, c in counts.items() if c >= MIN_GROUP)
    model: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "unit": "us",
        "device": device,
        "target": "groups: log(latency_us - overhead_us); trees: log(latency_us) residual",
        "group_features": ["1", "log1p(flops)", "log1p(bytes)", "log1p(output elements)"],
        "tree_features": [*FEATURES, *(f"kind={k}" for k in kinds)],
        "tree_kinds": kinds,
        "tree_params": dict(TREE_PARAMS),
        "min_group": MIN_GROUP,
        "table": {k: round(statistics.median(v), 4) for k, v in sorted(table.items())},
        "fits": fits,
        "movement": {},  # after the trees: they are fitted on the group fits' residuals
        "trees": [],
        "overhead_us": statistics.median(r.get("overhead_us", 0.0) for r in ops),
        "in_model_scale": 1.0,
        "while_trip_us": 0.0,
        "conversion_us_per_element": _conversion_rate(ops),
        "trained_on": {
            "ops": len(ops),
            "configs": len(table),
            "models": sorted({r["model"] for r in records if r.get("type") == "model"}),
        },
    }
    base_model = LearnedCostModel(model)
    X = np.array([op_vector(r, kinds) for r in ops])
    base = np.array([math.log(base_model.predict(r).latency_us) for r in ops])
    y = np.log(np.maximum([r["latency_us"] for r in ops], FLOOR_US))
    model["trees"] = fit_trees(X, y, base)
    model["movement"] = movement_fits(ops)
    model["in_model_scale"], model["while_trip_us"] = _whole_model_terms(
        records, LearnedCostModel(model)
    )
    return model


def bytes_moved(features: Mapping[str, Any]) -> int:
    """Bytes a data-movement op reads (non-constant inputs) and writes (outputs)."""
    ins = [_desc(d) for d in features.get("inputs", []) if d]
    outs = [_desc(d) for d in features.get("outputs", []) if d]
    return sum(_nbytes(d) for d in ins if not d[2]) + sum(_nbytes(d) for d in outs)


def copy_runs(features: Mapping[str, Any]) -> int:
    """How many contiguous runs a data-movement op copies: with an ``axis`` option
    (CONCATENATION, SPLIT, PACK, ...) the elements before the axis times the operands; else the
    output elements over the trailing dimensions the main input and the output share (a PAD of
    H and W copies one run of C per pixel).

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> copy_runs({"inputs": [t(1, 8, 8, 3)], "outputs": [t(1, 10, 10, 3)], "options": {}})
    100
    >>> copy_runs({"inputs": [t(1, 4, 6), t(1, 4, 2)], "outputs": [t(1, 4, 8)],
    ...            "options": {"axis": 2}})
    8
    """
    ins = [_desc(d) for d in features.get("inputs", []) if d]
    outs = [_desc(d) for d in features.get("outputs", []) if d]
    acts = [d for d in ins if not d[2]]
    if not acts or not outs:
        return 1
    out = [max(int(x), 1) for x in outs[0][0]]
    axis = (features.get("options") or {}).get("axis")
    if isinstance(axis, int) and out:
        return math.prod(out[: axis % len(out)]) * max(len(acts), len(outs))
    main = [max(int(x), 1) for x in max(acts, key=_elements)[0]]
    inner = 1
    if len(main) == len(out):
        for a, b in zip(reversed(main), reversed(out), strict=True):
            if a != b:
                break
            inner *= a
    else:
        inner = math.prod(out)
    return max(math.prod(out) // max(inner, 1), 1)


def movement_fits(ops: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """``{"KIND|TYPE" or "*|TYPE": [fixed_us, us_per_byte, us_per_run, min_bytes, max_bytes]}``
    for data-movement ops (the bytes moved by the records fitted on bound where it answers).

    Net latency = fixed + per byte x :func:`bytes_moved` + per run x :func:`copy_runs`,
    non-negative least squares on the relative error (each record weighted by 1 / its
    latency). A kind needs 3 records; ``*|TYPE`` pools every data-movement kind of an
    inference type and answers for the others.

    >>> ops = [{"kind": "SLICE", "inference_type": "FLOAT", "outputs": [[[n]]], "inputs": [],
    ...         "latency_us": 1.0 + n / 1000, "overhead_us": 0.5} for n in (10, 1000, 10000)]
    >>> [round(v, 4) for v in movement_fits(ops)["SLICE|FLOAT"]]
    [0.5, 0.0003, 0.0, 40.0, 40000.0]
    """
    from scipy.optimize import nnls

    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in ops:
        if r["kind"] in MOVEMENT:
            groups[f"{r['kind']}|{r['inference_type']}"].append(r)
            groups[f"*|{r['inference_type']}"].append(r)
    fits: dict[str, list[float]] = {}
    for name, rs in sorted(groups.items()):
        if len(rs) < 3:
            continue
        y = np.array([net_latency(r) for r in rs])
        A = np.array([[1.0, bytes_moved(r), copy_runs(r)] for r in rs]) / y[:, None]
        scale = np.maximum(A.max(axis=0), 1e-30)
        coef, _ = nnls(A / scale, np.ones_like(y))
        moved = [bytes_moved(r) for r in rs]
        fits[name] = [float(f"{c:.6g}") for c in (*(coef / scale), min(moved), max(moved))]
    return fits


def _conversion_rate(ops: Sequence[Mapping[str, Any]]) -> float:
    rates = []
    for r in ops:
        if r["kind"] in ("QUANTIZE", "DEQUANTIZE") and r.get("outputs") and r["outputs"][0]:
            n = math.prod(max(d, 1) for d in r["outputs"][0][0])
            rates.append(net_latency(r) / max(n, 1))
    return round(statistics.median(rates), 8) if rates else 0.0


def _whole_model_terms(
    records: Sequence[Mapping[str, Any]], model: LearnedCostModel
) -> tuple[float, float]:
    """``(in_model_scale, while_trip_us)`` from the training models' whole-model latencies.

    ``in_model_scale`` is the median over loop-free models of (model latency - one invoke
    overhead) / (sum of single-op net latencies): ops run inside a model are not exactly as fast
    as alone (cache state, delegate partitions). ``while_trip_us`` is then the median leftover
    per loop trip over the models with WHILE loops.
    """
    by_key = records_by_key(records)
    scales, per_trip = [], []
    whole = [r for r in records if r.get("type") == "model"]
    for r in whole:
        net = model.predict_model(r, by_key, with_loops=False, scaled=False) - model.overhead_us
        if not r.get("loop_trips") and net > 0:
            scales.append((r["latency_us"] - model.overhead_us) / net)
    scale = round(statistics.median(scales), 4) if scales else 1.0
    for r in whole:
        if r.get("loop_trips"):
            net = model.predict_model(r, by_key, with_loops=False, scaled=False) - model.overhead_us
            per_trip.append(max(r["latency_us"] - model.overhead_us - scale * net, 0.0))
            per_trip[-1] /= r["loop_trips"]
    return scale, round(statistics.median(per_trip), 4) if per_trip else 0.0


def records_by_key(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``op`` and ``skip`` records by configuration key."""
    return {r["key"]: r for r in records if r.get("type") in ("op", "skip")}


class LearnedCostModel(CostModelBase):
    """A fitted model (the dict from :func:`fit`) as a cost model in microseconds.

    ``op_cost`` is the latency of the op inside a model: the predicted single-op latency net of
    the invoke overhead, times ``in_model_scale``.
    """

    name = "learned"
    unit = "us"

    def __init__(
        self, doc: Mapping[str, Any], *, strict: bool = False, source: str = "<dict>"
    ) -> None:
        if doc.get("format") != FORMAT:
            raise CostModelError(f"learned model '{source}': format is not '{FORMAT}'")
        try:
            self.table: dict[str, float] = dict(doc["table"])
            self.fits = {k: np.asarray(v["w"], dtype=np.float64) for k, v in doc["fits"].items()}
            self.movement = {
                k: tuple(float(v) for v in fit) for k, fit in doc.get("movement", {}).items()
            }
            self.trees = _stack_trees(doc["trees"]) if doc.get("trees") else None
            self.tree_kinds = list(doc.get("tree_kinds", []))
            self.overhead_us = float(doc["overhead_us"])
            self.scale = float(doc.get("in_model_scale", 1.0))
            self.while_trip_us = float(doc.get("while_trip_us", 0.0))
            self.conversion_us = float(doc.get("conversion_us_per_element", 0.0))
            self.devices = (str(doc.get("device", "CPU")),)
            gross = int(doc.get("version", 1)) >= 2
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CostModelError(f"learned model '{source}': bad or missing field {exc}") from None
        expected = [*FEATURES, *(f"kind={k}" for k in self.tree_kinds)]
        if self.trees is not None and list(doc.get("tree_features", expected)) != expected:
            raise CostModelError(
                f"learned model '{source}': fitted on other tree features (version "
                f"{doc.get('version')}); refit it with `tacopt fit`"
            )
        if "*" not in self.fits:
            raise CostModelError(f"learned model '{source}': no global fit '*'")
        # version 1 files stored net latencies in the table: add the overhead back
        self.table_offset = 0.0 if gross else self.overhead_us
        self.doc = doc
        self.strict = strict

    def predict(self, features: Mapping[str, Any], *, key: str | None = None) -> Prediction:
        """Single-op latency (us, invoke overhead included) of one op configuration (see the
        module docstring for the order)."""
        if key is not None and key in self.table:
            return Prediction(self.table[key] + self.table_offset, "exact")
        kind = features["kind"]
        if kind in MOVEMENT:
            itype = features.get("inference_type")
            moved = bytes_moved(features)
            fit_ = self.movement.get(f"{kind}|{itype}")
            if fit_ is None or not fit_[3] / RANGE <= moved <= fit_[4] * RANGE:
                fit_ = self.movement.get(f"*|{itype}")
            if fit_ is not None:
                a, b, c = fit_[:3]
                net = max(a + b * moved + c * copy_runs(features), FLOOR_US)
                return Prediction(self.overhead_us + net, "movement")
        row = np.asarray(design_row(features))
        log_net, source = float(row @ self.fits["*"]), "fallback"
        for name in (f"{kind}|{features.get('inference_type')}", kind):
            if name in self.fits:
                log_net, source = float(row @ self.fits[name]), "group"
                break
        if source == "fallback" and self.strict:
            raise CostModelError(f"cost model 'learned': op kind {kind} was never measured")
        gross = self.overhead_us + math.exp(log_net)
        if self.trees is not None:
            x = np.asarray([op_vector(features, self.tree_kinds)])
            gross *= math.exp(float(_predict_stacked(self.trees, x)[0]))
        return Prediction(gross, source)

    def predict_net(self, features: Mapping[str, Any], *, key: str | None = None) -> float:
        """Single-op latency net of the invoke overhead (us), floored at 0.05 us."""
        return max(self.predict(features, key=key).latency_us - self.overhead_us, FLOOR_US)

    def predict_model(
        self,
        model_record: Mapping[str, Any],
        by_key: Mapping[str, Mapping[str, Any]],
        *,
        with_loops: bool = True,
        scaled: bool = True,
    ) -> float:
        """Predicted whole-model latency (us) for a ``model`` record: one invoke overhead +
        ``in_model_scale`` x the net op latencies + the per-trip loop overhead."""
        total = 0.0
        for key, count in model_record["ops"]:
            rec = by_key.get(key)
            if rec is None or rec.get("type") != "op":
                continue  # WHILE itself and ops that could not run alone
            total += count * self.predict_net(rec, key=key)
        total = self.overhead_us + (self.scale if scaled else 1.0) * total
        if with_loops:
            total += self.while_trip_us * model_record.get("loop_trips", 0.0)
        return total

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        """Predicted latency (us) of op ``node`` inside a model on this model's device."""
        from tacopt.cost_models.singleop import UNMEASURABLE, op_features, op_key

        self.check_device(device)
        check_inference_type(inference_type, model=self.name)
        if node not in G:
            raise CostModelError(f"cost model 'learned': op '{node}' is not in the graph")
        op = G.nodes[node]["op"]
        if op.kind == "WHILE":
            return self._while_cost(G, node, device, inference_type)
        if op.kind in UNMEASURABLE:
            return 0.0
        feats = op_features(G, node, root=G)
        key = op_key(feats) if feats["inference_type"] == inference_type else None
        feats["inference_type"] = inference_type
        return self.scale * self.predict_net(feats, key=key)

    def _while_cost(self, G: nx.MultiDiGraph, node: str, device: str, itype: str) -> float:
        op = G.nodes[node]["op"]
        trips, _ = trip_count(G, node, root=G)
        subs = G.graph.get("subgraphs", {})
        total = self.while_trip_us * trips
        for part, mult in (("body_subgraph", trips), ("cond_subgraph", trips + 1)):
            S = subs[op.options[part]]
            S_root = _with_subgraphs(S, subs)
            for n in S.nodes:
                c = self.op_cost(S_root, n, device, itype)
                total += mult * (c or 0.0)
        return total

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        self.check_device(src_device)
        self.check_device(dst_device)
        return LinkCost(0.0, 0.0)

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        if not needs_conversion(src_type, dst_type, model=self.name):
            return 0.0
        return self.conversion_us


def _with_subgraphs(S: nx.MultiDiGraph, subs: Mapping[str, nx.MultiDiGraph]) -> nx.MultiDiGraph:
    if "subgraphs" in S.graph:
        return S
    view = S.copy(as_view=False)
    view.graph["subgraphs"] = dict(subs)
    return view


def evaluate(
    model: LearnedCostModel,
    records: Sequence[Mapping[str, Any]],
    *,
    train_keys: Collection[str] = (),
) -> dict[str, Any]:
    """Accuracy of ``model`` on held-out records.

    Returns ``within_10pct`` (share of ops whose predicted single-op latency, overhead included,
    is within ±10 % of the measured one), ``within_10pct_net`` (the same on net latencies: the
    model's overhead subtracted from the prediction, each record's own from the measurement),
    ``within_10pct_unseen`` (only configurations not in ``train_keys``, i.e. not answered by the
    lookup table), ``mape`` (%), ``spearman`` (rank correlation of predicted vs measured),
    ``model_error_median`` (median over models of |predicted - measured| / measured, %, see
    :meth:`LearnedCostModel.predict_model`), ``model_bias_median`` (signed, %), counts, the
    share of predictions per source and ``per_kind``: the same figures per (kind, inference
    type).
    """
    from scipy.stats import spearmanr

    by_key = records_by_key(records)
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        raise CostModelError("learned: no op records to evaluate on")
    pred, meas, pred_net, meas_net, unseen = [], [], [], [], []
    sources: dict[str, int] = defaultdict(int)
    for r in ops:
        p = model.predict(r, key=r["key"])
        sources[p.source] += 1
        pred.append(p.latency_us)
        meas.append(r["latency_us"])
        pred_net.append(max(p.latency_us - model.overhead_us, FLOOR_US))
        meas_net.append(net_latency(r))
        unseen.append(r["key"] not in train_keys)
    P, M = np.array(pred), np.array(meas)
    Pn, Mn = np.array(pred_net), np.array(meas_net)
    U = np.array(unseen)
    errors = []
    for r in records:
        if r.get("type") == "model":
            errors.append((model.predict_model(r, by_key) - r["latency_us"]) / r["latency_us"])
    close = np.abs(P - M) <= 0.1 * M
    per_kind: dict[str, dict[str, float]] = {}
    groups = np.array([f"{r['kind']}|{r['inference_type']}" for r in ops])
    for g in sorted(set(groups.tolist())):
        sel = groups == g
        per_kind[g] = {
            "n": int(sel.sum()),
            "within_10pct": float(np.mean(close[sel])),
            "unseen": int((sel & U).sum()),
            "within_10pct_unseen": float(np.mean(close[sel & U]))
            if (sel & U).any()
            else float("nan"),
            "mape": float(np.mean(np.abs(P[sel] - M[sel]) / M[sel]) * 100),
        }
    return {
        "ops": len(ops),
        "ops_unseen": int(U.sum()),
        "models": len(errors),
        "within_10pct": float(np.mean(close)),
        "within_10pct_unseen": float(np.mean(close[U])) if U.any() else float("nan"),
        "within_10pct_net": float(np.mean(np.abs(Pn - Mn) <= 0.1 * Mn)),
        "mape": float(np.mean(np.abs(P - M) / M) * 100),
        "spearman": float(spearmanr(P, M).statistic),
        "model_error_median": float(statistics.median(np.abs(errors)) * 100)
        if errors
        else float("nan"),
        "model_bias_median": float(statistics.median(errors) * 100) if errors else float("nan"),
        "sources": {k: v / len(ops) for k, v in sorted(sources.items())},
        "per_kind": per_kind,
    }


def load_learned(path: str | Path, *, strict: bool = False) -> LearnedCostModel:
    """Load a ``tacopt fit`` JSON file as a cost model."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CostModelError(f"learned model '{p}': {exc}") from None
    return LearnedCostModel(doc, source=str(p), strict=strict)


register_model_format(FORMAT, lambda doc, path: LearnedCostModel(doc, source=str(path)))
