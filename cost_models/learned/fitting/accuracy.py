"""How well a learned model predicts held-out measurements (``tacopt fit --eval``)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.base import (
    CostModelError,
)
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.fingerprint import describe
from tacopt.cost_models.learned.measurement.records import ops_and_bytes, records_by_key
from tacopt.cost_models.learned.measurement.speed import normalize_records


def model_accuracy(
    model: LearnedCostModel,
    records: Sequence[Mapping[str, Any]],
    *,
    train_keys: Collection[str] = (),
) -> dict[str, Any]:
    """Accuracy of ``model`` on held-out records.

    Records that carry the machine's ``speed`` are first put in the model's units
    (:func:`tacopt.cost_models.learned.measurement.speed.normalize_records`), so a model fitted on
    one day is evaluated on measurements of another without the machine's drift; its
    predictions are then put back in the units the records were measured in
    (:meth:`LearnedCostModel.predict_as_measured`) and compared with the latencies as measured.

    Returns ``within_10pct`` (share of ops whose predicted single-op latency, overhead included,
    is within ±10 % of the measured one), ``within_10pct_net`` (the same on net latencies: the
    model's overhead subtracted from the prediction, each record's own from the measurement),
    ``within_10pct_unseen`` (only configurations not in ``train_keys``, i.e. not answered by the
    lookup table), ``mape`` (%), ``spearman`` (rank correlation of predicted vs measured),
    ``model_error_median`` (median over models of |predicted - measured| / measured, %, see
    :meth:`LearnedCostModel.predict_model`), ``model_bias_median`` (signed, %), ``per_model``
    (each whole model, by name: measured and predicted latency in the model's units, the signed
    relative error, the in-model scale its ops were priced at and the memory index its measured
    latency was divided by: :func:`~tacopt.cost_models.learned.measurement.speed.memory_index`),
    counts
    (``unseen_share``, ``skips`` and ``skip_share`` of op records that could not run alone,
    ``skip_reasons``: kind and reason -> count, ``folded``: ops folded at init, priced 0 and
    counted as neither),
    the share of predictions per source and ``per_kind``: the same figures per (kind, inference
    type).
    """
    # Deferred: scipy only when an accuracy report is asked for (a model that only prices
    # does not load it).
    from scipy.stats import spearmanr

    # measured on another day or machine: put the times in the model's units first
    raw_ops = [r for r in records if r.get("type") == "op"]
    records = normalize_records(records, model.anchor_speed)
    by_key = records_by_key(records)
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        raise CostModelError("learned: no op records to evaluate on")
    pred, meas, pred_net, meas_net, unseen = [], [], [], [], []
    sources: dict[str, int] = defaultdict(int)
    for r, measured in zip(ops, raw_ops, strict=True):
        p = model.predict(r, key=r["key"])
        sources[p.source] += 1
        pred.append(model.as_measured(r, p.latency_us))  # compared as measured
        meas.append(measured["latency_us"])
        pred_net.append(max(p.latency_us - model.overhead_us, model.floor_us))
        meas_net.append(net_latency(r))
        unseen.append(r["key"] not in train_keys)
    P, M = np.array(pred), np.array(meas)
    Pn, Mn = np.array(pred_net), np.array(meas_net)
    U = np.array(unseen)
    errors, per_model = [], []
    for r in records:
        if r.get("type") == "model" and r.get("latency_us"):
            predicted = model.predict_model(r, by_key)
            errors.append((predicted - r["latency_us"]) / r["latency_us"])
            per_model.append(
                {
                    "model": str(r.get("model")),
                    "measured_us": float(r["latency_us"]),
                    "predicted_us": predicted,
                    "error": errors[-1],
                    "in_model_scale": model.in_model_scale(ops_and_bytes(r, by_key)[1]),
                    "memory_index": float(r.get("memory_index", 1.0)),
                }
            )
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
    skip_records = [r for r in records if r.get("type") == "skip"]
    skips = len(skip_records)
    reasons: dict[str, int] = defaultdict(int)
    for r in skip_records:
        reasons[f"{r.get('kind')}: {str(r.get('reason', ''))[:100]}"] += 1
    return {
        "skip_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "folded": sum(1 for r in records if r.get("type") == "folded"),
        "ops": len(ops),
        "ops_unseen": int(U.sum()),
        "unseen_share": float(U.mean()),
        "skips": skips,
        "skip_share": skips / (skips + len(ops)),
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
        "per_model": sorted(per_model, key=lambda m: m["model"]),
        "sources": {k: v / len(ops) for k, v in sorted(sources.items())},
        "per_kind": per_kind,
    }


def _share(x: float, absent: str) -> str:
    """``x`` (a share) in percent, or ``absent`` when it is NaN (nothing to count).

    >>> _share(0.5, "none"), _share(float("nan"), "none")
    ('50.0 %', 'none')
    """
    return absent if math.isnan(x) else f"{x * 100:.1f} %"


def report_lines(result: Mapping[str, Any]) -> list[str]:
    """The text form of :func:`evaluate`'s result (``tacopt fit --eval``, ``tacopt evaluate``),
    with the fingerprints of the model and the records when ``result`` holds them."""
    r = result
    lines = [
        f"ops {r['ops']}, models {r['models']}",
        f"within ±10 %: {r['within_10pct'] * 100:.1f} % (net of invoke overhead: "
        f"{r['within_10pct_net'] * 100:.1f} %; configurations not in training: "
        f"{_share(r['within_10pct_unseen'], 'none in these records')})",
        f"MAPE {r['mape']:.1f} %, Spearman {r['spearman']:.3f}, "
        + (
            f"median whole-model error {r['model_error_median']:.1f} % "
            f"(signed median {r.get('model_bias_median', float('nan')):+.1f} %)"
            if not math.isnan(r["model_error_median"])
            else "no whole-model records"
        ),
        f"unseen configurations {r['unseen_share'] * 100:.1f} %, skips {r['skips']} "
        f"({r['skip_share'] * 100:.1f} % of op records), folded at init {r.get('folded', 0)}",
    ]
    lines += [f"  skipped {n} x {why}" for why, n in r.get("skip_reasons", {}).items()]
    if "fingerprints" in r:
        lines.append(f"model fitted on: {describe(r['fingerprints']['model'])}")
        lines.append(f"records measured on: {describe(r['fingerprints']['records'])}")
    lines.append("per kind: ops, within ±10 %, unseen ops, MAPE")
    for kind, v in r["per_kind"].items():
        lines.append(
            f"  {kind:36s} {v['n']:5d} {v['within_10pct'] * 100:6.1f} % {v['unseen']:5d} "
            f"{v['mape']:7.1f} %"
        )
    if r.get("per_model"):
        lines.append("per model: measured us, predicted us, error, in-model scale, memory index")
        width = max(len(m["model"]) for m in r["per_model"])
        for m in r["per_model"]:
            lines.append(
                f"  {m['model']:{width}s} {m['measured_us']:11.1f} {m['predicted_us']:11.1f} "
                f"{m['error'] * 100:+7.1f} % {m['in_model_scale']:7.4f} "
                f"{m.get('memory_index', 1.0):7.4f}"
            )
    return lines
