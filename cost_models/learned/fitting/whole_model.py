"""How a learned model's ops add up to a whole model, and the rates it falls back on: fitted on
the training records' whole-model latencies and GEMM / conversion ops
(:func:`tacopt.cost_models.learned.fitting.fit.fit`); what an op costs inside a model
(:func:`in_model_net`), and where a whole model's price error comes from (:func:`error_parts`:
the terms against the ops)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tacopt.cost_models.base import CostModelError
from tacopt.cost_models.learned.measurement.records import (
    cold_level,
    counted_ops,
    ops_bytes_weights,
    records_by_key,
    spill_level,
)

#: The least net latency (us) a fit sees or a prediction gives. An op that does next to nothing
#: (a RESHAPE of 128 floats) costs the invoke overhead: in a Zen 4 learn's records the net
#: latency of such ops (<= 64 output elements) was 0.003 us at the median and 0.017 us at the
#: 75th percentile. The floor of files before ``net_floor_us`` (0.05 us) priced them at 1.11x;
#: on the zoo's tuning half 0.02 us gave +1.7 points of ops within ±10 % (mean of four learns).
FLOOR_US = 0.02
#: The floor of model files that do not record theirs.
LEGACY_FLOOR_US = 0.05


def net_latency(record: Mapping[str, Any]) -> float:
    """Measured op latency minus the invoke overhead, floored at :data:`FLOOR_US`."""
    return max(record["latency_us"] - record.get("overhead_us", 0.0), FLOOR_US)


def in_model_net(model: Any, features: Mapping[str, Any], *, key: str | None = None) -> float:
    """What an op costs inside a whole model before the model's terms (us): its predicted
    single-op latency less the invoke overhead *of its own path*, floored at ``model``'s floor.

    An op the delegate refuses (a kind of ``model.fallback_kinds``, :func:`fallback_overhead`)
    runs in the builtin kernels, whose invoke path is shorter: alone it is timed at that
    overhead plus its work, and its prediction is built so (``fallback_overhead_us`` + net).
    Less the delegate's overhead, a refused GATHER of 4-64 rows (0.354 us alone, 0.279 the
    builtin path's) cost 0.02 us (the floor) where its work is 0.075 us; the recommendation
    models, 16-32 ops of 2-5 us with 4-12 such GATHERs, were priced 6-19 % fast by learn 3,
    their terms alone (each op at its measured latency) 18-23 % fast; 4-11 % and 3-6 % off with
    this (issue 47 session 5). An adapted model prices every kind over its own overhead
    (:meth:`~.model.LearnedCostModel.predict_net`).
    """
    if model.doc.get("adapted") or features.get("kind") not in model.fallback_kinds:
        return float(model.predict_net(features, key=key))
    latency = model.predict(features, key=key).latency_us
    return float(max(latency - model.fallback_overhead_us, model.floor_us))


def measured_in_model_net(record: Mapping[str, Any], fallback_overhead_us: float = 0.0) -> float:
    """A measured op record's :func:`in_model_net`: its latency less its path's invoke
    overhead (the builtin kernels' shorter one, ``fallback_overhead_us``, when the delegate
    refused it and that is known), floored at :data:`FLOOR_US`.

    >>> rec = {"latency_us": 0.354, "overhead_us": 0.344, "delegated": False}
    >>> net_latency(rec), round(measured_in_model_net(rec, 0.279), 3)
    (0.02, 0.075)
    """
    if record.get("delegated") is False and fallback_overhead_us > 0:
        overhead = min(record.get("overhead_us", 0.0), fallback_overhead_us)
        return max(record["latency_us"] - overhead, FLOOR_US)
    return net_latency(record)


#: Share of a kind's records the delegate must have refused for the kind to be priced with
#: the builtin kernels' invoke overhead (:func:`fallback_overhead`), and records it needs.
FALLBACK_SHARE, FALLBACK_MIN = 0.9, 5


def fallback_overhead(ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"overhead_us", "kinds"}``: the invoke overhead of an op the delegate refuses, and the
    kinds whose records it refused (:data:`FALLBACK_SHARE` of :data:`FALLBACK_MIN` or more),
    or ``{}`` when no record says (a resolver without a delegate, records before the field).

    The gate's invoke overhead is that of the delegated probe. An op XNNPACK refuses runs in
    the builtin kernels, whose invoke path is shorter: a SHAPE, a SELECT_V2 or a CAST of a few
    elements took 0.28 us where the overhead was 0.35 us (a 2-core Zen 5, 2026-11-29), and a
    model floored at the overhead priced them 1.3x; issue 47's SHAPE and SELECT_V2 were 4-5x
    off. The overhead is the 5th percentile of those kinds' latencies, at most the gate's.

    >>> ops = [{"kind": "SHAPE", "latency_us": 0.28 + i / 100, "overhead_us": 0.35,
    ...         "delegated": False} for i in range(6)]
    >>> fallback_overhead(ops)
    {'overhead_us': 0.2825, 'kinds': ['SHAPE']}
    """
    told: dict[str, list[Mapping[str, Any]]] = {}
    for r in ops:
        if r.get("delegated") is not None:
            told.setdefault(r["kind"], []).append(r)
    kinds = sorted(
        k for k, rs in told.items()
        if len(rs) >= FALLBACK_MIN
        and sum(r["delegated"] is False for r in rs) >= FALLBACK_SHARE * len(rs)
    )  # fmt: skip
    if not kinds:
        return {}
    lat = sorted(r["latency_us"] for k in kinds for r in told[k] if r["delegated"] is False)
    overhead = statistics.median(r.get("overhead_us", 0.0) for r in ops)
    low = float(np.percentile(lat, 5))
    return {"overhead_us": round(min(low, overhead), 4), "kinds": kinds}


def gemm_rate(ops: Sequence[Mapping[str, Any]]) -> float:
    """Median FLOPs per us of the GEMM-like ops (CONV_2D, FULLY_CONNECTED, BATCH_MATMUL) of
    over 1 MFLOP: the floor an unseen kind's prediction is held to."""
    kinds = ("CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL")
    rates = [r["flops"] / net_latency(r) for r in ops if r["kind"] in kinds and r["flops"] > 1e6]
    return round(statistics.median(rates), 4) if rates else 0.0


def conversion_rate(ops: Sequence[Mapping[str, Any]]) -> float:
    rates = []
    for r in ops:
        if r["kind"] in ("QUANTIZE", "DEQUANTIZE") and r.get("outputs") and r["outputs"][0]:
            n = math.prod(max(d, 1) for d in r["outputs"][0][0])
            rates.append(net_latency(r) / max(n, 1))
    return round(statistics.median(rates), 8) if rates else 0.0


def check_whole_model_terms(model: Any, source: str) -> None:
    """One line naming the file and the field for a whole-model term of a learned ``model`` that
    is not a finite number in range (the scale positive, the others non-negative), or caches
    that are not two sizes."""
    terms = {
        "in_model_scale": model.scale,
        "in_model_spill": model.spill,
        "per_op_us": model.per_op_us,
        "while_trip_us": model.while_trip_us,
        "cold_weight_us_per_mb": model.cold_weight_us_per_mb,
    }
    for name, v in terms.items():
        least = "positive" if name == "in_model_scale" else "non-negative"
        if not math.isfinite(v) or v < 0 or (name == "in_model_scale" and v == 0):
            raise CostModelError(
                f"learned model '{source}': {name} is {v}, not a {least} finite number"
            )
    caches = model.cache_bytes
    if caches is not None and (
        len(caches) != 2 or not all(math.isfinite(b) and b > 0 for b in caches)
    ):
        raise CostModelError(
            f"learned model '{source}': cache_bytes is {caches}, not [L2 bytes, L3 bytes]"
        )


def whole_model_terms(
    records: Sequence[Mapping[str, Any]], model: Any
) -> tuple[float, float, float, float, float]:
    """``(in_model_scale, in_model_spill, per_op_us, while_trip_us, cold_weight_us_per_mb)``
    from the training models' whole-model latencies.

    Inside a model an op is slower than alone: alone, its weights and inputs stay in a core's
    cache from one run to the next; in a model, the other ops' data pass through between two of
    its runs. Its net latency is scaled by ``in_model_scale + in_model_spill x s``, ``s`` the
    model's :func:`spill_level` (how far the bytes its ops read and write per invoke, the
    records' ``bytes``, overflow the L2 towards the size of the L3; the caches are ``model``'s,
    ``cache_bytes``, its training device's). Once the model's data overflow the L3 too, each
    op's weights come back from memory on every invoke: ``cold_weight_us_per_mb`` x the
    model's weight megabytes (:func:`~.records.weight_bytes`) x its :func:`~.records.cold_level`.
    Each op also costs the interpreter and delegate a dispatch (``per_op_us``). The four are
    fitted together on the loop-free models, (model latency - one invoke overhead) ~ (scale +
    spill x s) x (sum of single-op net latencies) + per_op x (ops) + cold x (weight MB x cold
    level), by least squares on relative errors with a robust loss (``soft_l1``: a few models
    the runtime runs differently do not pull the fit), over every loop-free model.
    ``while_trip_us`` is then the median leftover per loop trip over the models with WHILE
    loops.

    Why the spill: a learn's chains were short, most of their data in the L2, while real models'
    rarely are. In seven Zen 4 learns the chains whose ops moved under 8 MB ran at 1.00-1.01x
    their ops' sum at the median, those over the 32 MB L3 at 1.05-1.10x, and the zoo's tuning
    half at 1.05x. Refitted on those learns' own records, one scale for all (1.008-1.052) priced
    the tuning half's models at a median error of 3.3-5.8 % (mean 4.3), the spill at 2.4-5.8 %
    (mean 3.9; ``benchmarks/results/learn_v22/spill_variants.py`` at commit b3211eb). The
    network chains now repeat their blocks (``samplers_net.CHAIN_REPEATS``) so the spill is
    fitted on chains of real size.

    Why the cold weights (issue 47, session 4, a 2-core Zen 5 with a 32 MB L3): the zoo's test
    half ran at a median 1.087x its own measured ops' sum, where the spill priced 1.035x, so
    whole models were predicted 6.4 % fast (signed). The excess followed the weights, not the
    op count: 27-65 us a weight megabyte in the float and int8 convolution networks whose data
    overflow the L3 (resnet18 46.7 MB: 1.7 ms; mobilenet_v2 14 MB: 0.41 ms), 1.5 us in text
    models whose data stay in it; and the learn's own chains showed the same (a 50 MB-weight
    chain: +102 %, 27 us a megabyte; 15 MB in an L3-sized chain: 2.7 us). Refitted on learn 2's
    own records, the term (41 us a megabyte) took the zoo test half's whole-model error from
    7.8 to 4.8 % (signed -6.4 -> -0.6 %); with the ops as measured, 5.2 -> 3.0 %.

    Every loop-free model, not only those of 8 ops or more (on their own they gave scales of
    1.027-1.078 over four learns, a median whole-model error of 3.3-5.9 %).
    """
    rows, loops = model_rows(records, model)
    scale, spill_w, per_op, cold = _fit_scale(rows)
    per_trip = [
        max(y - (scale + spill_w * s) * net - per_op * n - cold * w, 0.0) / trips
        for y, net, n, s, w, trips in loops
    ]
    trip = round(statistics.median(per_trip), 4) if per_trip else 0.0
    return scale, spill_w, per_op, trip, cold


Row = tuple[float, float, float, float, float]


def model_rows(
    records: Sequence[Mapping[str, Any]], model: Any
) -> tuple[list[Row], list[tuple[float, float, float, float, float, float]]]:
    """What :func:`whole_model_terms` fits on: ``(measured, op sum, ops, spill level, cold
    weight MB)`` of each timed loop-free model whose ops sum to more than nothing (the last: its
    weight megabytes x its cold level), and the same with the loop trips appended for the
    models with WHILE loops. Times are net of ``model``'s invoke overhead; the op sum is
    ``model``'s plain sum of predicted net op latencies."""
    by_key = records_by_key(records)
    rows: list[Row] = []
    loops: list[tuple[float, float, float, float, float, float]] = []
    for r in records:
        if r.get("type") != "model" or not r.get("latency_us"):
            continue
        net = model.predict_model(r, by_key, with_loops=False, raw=True) - model.overhead_us
        n, moved, weights = ops_bytes_weights(r, by_key)
        # a tiny model can be timed below the median invoke overhead: floored, not log(<= 0)
        measured = max(r["latency_us"] - model.overhead_us, FLOOR_US)
        spill = spill_level(moved, model.cache_bytes)
        cold_mb = weights / 1e6 * cold_level(moved, model.cache_bytes)
        if r.get("loop_trips"):
            loops.append((measured, net, n, spill, cold_mb, r["loop_trips"]))
        elif net > 0:
            rows.append((measured, net, n, spill, cold_mb))
    return rows, loops


def _fit_scale(rows: Sequence[Row]) -> tuple[float, float, float, float]:
    """``(scale, spill, per_op, cold)`` minimizing the robust log ratio of (scale + spill x s) x
    sum + per_op x ops + cold x (cold weight MB) to the measured latency (symmetric: a relative
    error is bounded by -1 below and not above, so a few models measured far below their ops'
    sum pulled the scale down: two XNNPACK threads under load, models at 0.16-3.2x their sums,
    median 1.07, gave 0.34); ``(median ratio, 0, 0, 0)`` with fewer than 3 models; no spill
    when no model spills, no cold term when no model's data overflow the L3."""
    if not rows:
        return 1.0, 0.0, 0.0, 0.0
    y, a, n, s, w = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    if len(rows) < 3:
        return round(float(np.median(y / a)), 4), 0.0, 0.0, 0.0
    # Deferred: scipy only when fitting (pricing with a learned model does not load it).
    from scipy.optimize import least_squares

    top = 4.0 if s.any() else 1e-12  # nothing to fit it on: held at 0
    top_cold = 1000.0 if w.any() else 1e-12
    fit = least_squares(
        lambda p: np.log(((p[0] + p[2] * s) * a + p[1] * n + p[3] * w) / y),
        x0=[float(np.clip(np.median(y / a), 0.25, 4.0)), 0.0, 0.0, 0.0],
        bounds=([0.25, 0.0, 0.0, 0.0], [4.0, 100.0, top, top_cold]),
        loss="soft_l1",
        f_scale=0.05,
    )
    return (round(float(fit.x[0]), 4), round(float(fit.x[2]), 4), round(float(fit.x[1]), 4),
            round(float(fit.x[3]), 4))  # fmt: skip


@dataclass(frozen=True, slots=True)
class ErrorParts:
    """Where a whole model's price error comes from (:func:`error_parts`): ``measured_us``,
    ``predicted_us`` (:meth:`~.model.LearnedCostModel.predict_model`), ``terms_us`` (the same
    terms over each op's *measured* net latency: what the whole-model terms alone get wrong),
    and ``kinds``: each op kind's share of the rest, ``(kind, us)`` (its ops' predicted less
    measured net latency x count x the model's in-model scale), the largest first; ``ops`` the
    same by op configuration (record key)."""

    model: str
    measured_us: float
    predicted_us: float
    terms_us: float
    kinds: tuple[tuple[str, float], ...]
    ops: tuple[tuple[str, float], ...] = ()

    @property
    def error(self) -> float:
        """The whole model's relative price error."""
        return self.predicted_us / self.measured_us - 1

    @property
    def terms_error(self) -> float:
        """The relative error of the terms alone (each op at its measured latency)."""
        return self.terms_us / self.measured_us - 1


def error_parts(records: Sequence[Mapping[str, Any]], model: Any) -> list[ErrorParts]:
    """Each timed ``model`` record's price error split into the whole-model terms' part and
    each op kind's part, in ``model``'s units (records already put there:
    :func:`~tacopt.cost_models.learned.measurement.speed.normalize_records`).

    The model's price is its own (``model.predict_model``); the terms' part is that price with
    each op's in-model net latency (:func:`in_model_net`) put back to its measured one
    (:func:`measured_in_model_net`) at the model's in-model scale (the terms add the op sum up
    linearly); an op that could not run alone (a skip record) counts as predicted on both sides.
    So ``predicted - measured = (terms - measured) + sum of kinds``.

    >>> from types import SimpleNamespace
    >>> m = SimpleNamespace(overhead_us=0.5, floor_us=FLOOR_US, in_model_scale=lambda b: 1.0,
    ...     predict_net=lambda r, key=None: 2.0, doc={}, fallback_kinds=set(),
    ...     fallback_overhead_us=0.0, predict_model=lambda r, by_key: 6.5)
    >>> recs = [{"type": "op", "key": "a", "kind": "ADD", "inputs": [], "bytes": 8,
    ...          "latency_us": 1.5, "overhead_us": 0.5},
    ...         {"type": "model", "model": "m", "ops": [["a", 3]], "latency_us": 4.0}]
    >>> p = error_parts(recs, m)[0]
    >>> p.predicted_us, p.terms_us, p.kinds
    (6.5, 3.5, (('ADD', 3.0),))
    """
    by_key = records_by_key(records)
    out = []
    for r in records:
        if r.get("type") != "model" or not r.get("latency_us"):
            continue
        moved = 0.0
        kinds: dict[str, float] = {}
        ops: dict[str, float] = {}
        for key, rec, count in counted_ops(r, by_key):
            timed = rec.get("type") == "op"
            p = in_model_net(model, rec, key=key if timed else None)
            m = measured_in_model_net(rec, model.fallback_overhead_us) if timed else p
            kinds[rec["kind"]] = kinds.get(rec["kind"], 0.0) + count * (p - m)
            ops[key] = ops.get(key, 0.0) + count * (p - m)
            moved += count * float(rec.get("bytes", 0.0))
        scale = model.in_model_scale(moved)
        predicted = float(model.predict_model(r, by_key))
        by_kind = _largest(kinds, scale)
        out.append(ErrorParts(
            str(r["model"]), float(r["latency_us"]), predicted,
            predicted - sum(us for _, us in by_kind), by_kind, _largest(ops, scale),
        ))  # fmt: skip
    return out


def _largest(shares: Mapping[str, float], scale: float) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(((k, scale * v) for k, v in shares.items()), key=lambda kv: -abs(kv[1])))
