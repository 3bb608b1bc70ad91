"""``learned``: per-op CPU latency predicted from features measured on a real runtime.

Fit (:func:`fit`) on records from :mod:`cost_models.measure`; the model is plain JSON (format
``tacopt-learned``), never pickle, and loads as a cost model with
``--cost-model path/to/model.json``. Predictions are *net* latencies: the measured single-op
latency minus the fixed cost of one Python ``invoke()`` call (``overhead_us``).

How a prediction is made, first match wins (the source is reported by :func:`predict`):

1. ``exact``: the configuration (same :func:`cost_models.measure.op_key`) was measured: its
   median latency.
2. ``group``: a least-squares fit of log latency on ``[1, log FLOPs, log bytes, log output
   elements]`` for the op's (kind, inference type), if that group had at least
   ``MIN_GROUP`` records; else for the kind alone.
3. ``fallback``: an op kind never seen in training uses the fit over every record, and is flagged
   (``strict=True`` raises :class:`CostModelError` instead).

WHILE loops cost their body and condition ops times the trip count plus a fitted per-trip
overhead (``while_trip_us``, from whole-model records). Quantize / dequantize at a boundary cost
``conversion_us_per_element`` (fitted on QUANTIZE / DEQUANTIZE records).

The model knows one device, the one it was measured on (``device``, default ``"CPU"``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from cost_models.base import (
    CostModelBase,
    CostModelError,
    LinkCost,
    check_inference_type,
    needs_conversion,
    register_model_format,
)
from cost_models.ops import trip_count

FORMAT = "tacopt-learned"
MIN_GROUP = 4
RIDGE = 1e-3
FLOOR_US = 0.05


def design_row(features: Mapping[str, Any]) -> list[float]:
    """The regression inputs of one op: ``[1, log FLOPs, log bytes, log output elements]``."""
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
    """A predicted net latency and where it came from (``exact``, ``group``, ``fallback``)."""

    latency_us: float
    source: str


def _fit_group(X: np.ndarray, y: np.ndarray) -> list[float]:
    A = X.T @ X + RIDGE * np.eye(X.shape[1])
    return np.linalg.solve(A, X.T @ y).tolist()


def fit(records: Sequence[Mapping[str, Any]], *, device: str = "CPU") -> dict[str, Any]:
    """Fit a learned model (a JSON-ready dict) on measurement records.

    Parameters
    ----------
    records : records from :func:`cost_models.measure.read_records` (``op`` and ``model``).
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
    Prediction(latency_us=10.0, source='exact')
    """
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        raise CostModelError("learned: no op records to fit on")
    table: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[tuple[list[float], float]]] = defaultdict(list)
    for r in ops:
        y = net_latency(r)
        table[r["key"]].append(y)
        row = design_row(r)
        groups[f"{r['kind']}|{r['inference_type']}"].append((row, math.log(y)))
        groups[r["kind"]].append((row, math.log(y)))
        groups["*"].append((row, math.log(y)))
    fits = {}
    for name, rows in sorted(groups.items()):
        if len(rows) < MIN_GROUP and name != "*":
            continue
        X = np.array([r for r, _ in rows])
        y = np.array([v for _, v in rows])
        w = _fit_group(X, y)
        resid = y - X @ np.array(w)
        fits[name] = {
            "w": [round(v, 6) for v in w],
            "n": len(rows),
            "rmse_log": round(float(np.sqrt(np.mean(resid**2))), 4),
        }
    model = {
        "format": FORMAT,
        "version": 1,
        "unit": "us",
        "device": device,
        "features": ["1", "log1p(flops)", "log1p(bytes)", "log1p(output elements)"],
        "min_group": MIN_GROUP,
        "table": {k: round(statistics.median(v), 4) for k, v in sorted(table.items())},
        "fits": fits,
        "overhead_us": statistics.median(r.get("overhead_us", 0.0) for r in ops),
        "while_trip_us": 0.0,
        "conversion_us_per_element": _conversion_rate(ops),
        "trained_on": {
            "ops": len(ops),
            "configs": len(table),
            "models": sorted({r["model"] for r in records if r.get("type") == "model"}),
        },
    }
    model["while_trip_us"] = _while_trip(records, LearnedCostModel(model))
    return model


def _conversion_rate(ops: Sequence[Mapping[str, Any]]) -> float:
    rates = []
    for r in ops:
        if r["kind"] in ("QUANTIZE", "DEQUANTIZE") and r.get("outputs") and r["outputs"][0]:
            n = math.prod(max(d, 1) for d in r["outputs"][0][0])
            rates.append(net_latency(r) / max(n, 1))
    return round(statistics.median(rates), 8) if rates else 0.0


def _while_trip(records: Sequence[Mapping[str, Any]], model: LearnedCostModel) -> float:
    per_trip = []
    for r in records:
        if r.get("type") == "model" and r.get("loop_trips"):
            predicted = model.predict_model(r, records_by_key(records), with_loops=False)
            per_trip.append(max(r["latency_us"] - predicted, 0.0) / r["loop_trips"])
    return round(statistics.median(per_trip), 4) if per_trip else 0.0


def records_by_key(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``op`` and ``skip`` records by configuration key."""
    return {r["key"]: r for r in records if r.get("type") in ("op", "skip")}


class LearnedCostModel(CostModelBase):
    """A fitted model (the dict from :func:`fit`) as a cost model in microseconds."""

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
            self.overhead_us = float(doc["overhead_us"])
            self.while_trip_us = float(doc.get("while_trip_us", 0.0))
            self.conversion_us = float(doc.get("conversion_us_per_element", 0.0))
            self.devices = (str(doc.get("device", "CPU")),)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CostModelError(f"learned model '{source}': bad or missing field {exc}") from None
        if "*" not in self.fits:
            raise CostModelError(f"learned model '{source}': no global fit '*'")
        self.doc = doc
        self.strict = strict

    def predict(self, features: Mapping[str, Any], *, key: str | None = None) -> Prediction:
        """Net latency of one op configuration (see the module docstring for the order)."""
        if key is not None and key in self.table:
            return Prediction(self.table[key], "exact")
        kind = features["kind"]
        row = np.asarray(design_row(features))
        for name in (f"{kind}|{features.get('inference_type')}", kind):
            if name in self.fits:
                return Prediction(float(np.exp(row @ self.fits[name])), "group")
        if self.strict:
            raise CostModelError(f"cost model 'learned': op kind {kind} was never measured")
        return Prediction(float(np.exp(row @ self.fits["*"])), "fallback")

    def predict_model(
        self,
        model_record: Mapping[str, Any],
        by_key: Mapping[str, Mapping[str, Any]],
        *,
        with_loops: bool = True,
    ) -> float:
        """Predicted whole-model latency (us) for a ``model`` record: ops + loops + one call."""
        total = self.overhead_us
        for key, count in model_record["ops"]:
            rec = by_key.get(key)
            if rec is None or rec.get("type") != "op":
                continue  # WHILE itself and ops that could not run alone
            total += count * self.predict(rec, key=key).latency_us
        if with_loops:
            total += self.while_trip_us * model_record.get("loop_trips", 0.0)
        return total

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        """Predicted net latency (us) of op ``node`` on this model's device."""
        from cost_models.measure import UNMEASURABLE, op_features, op_key

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
        return self.predict(feats, key=key).latency_us

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


def evaluate(model: LearnedCostModel, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy of ``model`` on held-out records.

    Returns ``within_10pct`` (share of ops whose predicted single-op latency, overhead included,
    is within ±10 % of the measured one), ``within_10pct_net`` (the same on net latencies),
    ``mape`` (%), ``spearman`` (rank correlation of predicted vs measured), ``model_error_median``
    (median over models of |predicted sum - measured| / measured, %), plus counts and the share
    of predictions per source.
    """
    from scipy.stats import spearmanr

    by_key = records_by_key(records)
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        raise CostModelError("learned: no op records to evaluate on")
    pred, meas, pred_net, meas_net = [], [], [], []
    sources: dict[str, int] = defaultdict(int)
    for r in ops:
        p = model.predict(r, key=r["key"])
        sources[p.source] += 1
        pred_net.append(p.latency_us)
        meas_net.append(net_latency(r))
        pred.append(p.latency_us + r.get("overhead_us", 0.0))
        meas.append(r["latency_us"])
    P, M = np.array(pred), np.array(meas)
    Pn, Mn = np.array(pred_net), np.array(meas_net)
    errors = []
    for r in records:
        if r.get("type") == "model":
            errors.append(abs(model.predict_model(r, by_key) - r["latency_us"]) / r["latency_us"])
    return {
        "ops": len(ops),
        "models": len(errors),
        "within_10pct": float(np.mean(np.abs(P - M) <= 0.1 * M)),
        "within_10pct_net": float(np.mean(np.abs(Pn - Mn) <= 0.1 * Mn)),
        "mape": float(np.mean(np.abs(P - M) / M) * 100),
        "spearman": float(spearmanr(P, M).statistic),
        "model_error_median": float(statistics.median(errors) * 100) if errors else float("nan"),
        "sources": {k: v / len(ops) for k, v in sorted(sources.items())},
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
