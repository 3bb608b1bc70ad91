"""How a learned model's ops add up to a whole model, and the rates it falls back on: fitted on
the training records' whole-model latencies and GEMM / conversion ops
(:func:`tacopt.cost_models.learned.fitting.fit.fit`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.learned.measurement.singleop import UNMEASURABLE

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


def whole_model_terms(
    records: Sequence[Mapping[str, Any]], model: Any
) -> tuple[float, float, float]:
    """``(in_model_scale, per_op_us, while_trip_us)`` from the training models' whole-model
    latencies.

    Inside a model an op is slower than alone (its weights and inputs no longer stay in a
    core's cache between runs: ``in_model_scale`` x its net latency) and each op costs the
    interpreter and delegate a dispatch (``per_op_us``). Both are fitted together on the
    loop-free models, (model latency - one invoke overhead) ~ scale x (sum of single-op net
    latencies) + per_op x (ops), by least squares on relative errors with a robust loss
    (``soft_l1``: a few models the runtime runs differently do not pull the fit), over every
    loop-free model. ``while_trip_us`` is then the median leftover per loop trip over the
    models with WHILE loops.

    Every loop-free model, not only those of 8 ops or more: a learn's models of 8 ops or more
    are its network chains (blocks of MobileNet V3, sampled), whose ratio of whole to summed
    latency varied 1.006-1.057 at the median from learn to learn on one Zen 4, while its
    2-6-op chains held at 1.004-1.011. On their own they gave scales of 1.027-1.078 over four
    learns; with every model 1.020-1.035. Median whole-model error on the zoo's tuning half over
    those learns: 3.3-5.9 % before, 4.1-5.0 % after (and :data:`FLOOR_US` at 0.02 us).
    """
    by_key = records_by_key(records)
    rows: list[tuple[float, float, float]] = []  # (measured, op sum, ops)
    loops: list[tuple[float, float, float, float]] = []  # (measured, op sum, ops, trips)
    for r in records:
        if r.get("type") != "model" or not r.get("latency_us"):
            continue
        net = model.predict_model(r, by_key, with_loops=False, raw=True) - model.overhead_us
        absorbed = dict(r.get("absorbed", []))  # fused into their consumer: not dispatched
        n = float(sum(c - absorbed.get(k, 0.0) for k, c in r["ops"] if _counted(by_key.get(k))))
        # a tiny model can be timed below the median invoke overhead: floored, not log(<= 0)
        measured = max(r["latency_us"] - model.overhead_us, FLOOR_US)
        if r.get("loop_trips"):
            loops.append((measured, net, n, r["loop_trips"]))
        elif net > 0:
            rows.append((measured, net, n))
    scale, per_op = _fit_scale(rows)
    per_trip = [max(y - scale * net - per_op * n, 0.0) / trips for y, net, n, trips in loops]
    return scale, per_op, round(statistics.median(per_trip), 4) if per_trip else 0.0


def _counted(rec: Mapping[str, Any] | None) -> bool:
    """Whether a model's op counts as one the model runs (WHILE and variables do not)."""
    return rec is not None and rec.get("kind") not in UNMEASURABLE and "inputs" in rec


def _fit_scale(rows: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """``(scale, per_op)`` minimizing the robust log ratio of scale x sum + per_op x ops to the
    measured latency (symmetric: a relative error is bounded by -1 below and not above, so a
    few models measured far below their ops' sum pulled the scale down: two XNNPACK threads
    under load, models at 0.16-3.2x their sums, median 1.07, gave 0.34);
    ``(median ratio, 0)`` with fewer than 3 models."""
    if not rows:
        return 1.0, 0.0
    y, a, n = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    if len(rows) < 3:
        return round(float(np.median(y / a)), 4), 0.0
    from scipy.optimize import least_squares

    fit = least_squares(
        lambda p: np.log((p[0] * a + p[1] * n) / y),
        x0=[float(np.clip(np.median(y / a), 0.25, 4.0)), 0.0],
        bounds=([0.25, 0.0], [4.0, 100.0]),
        loss="soft_l1",
        f_scale=0.05,
    )
    return round(float(fit.x[0]), 4), round(float(fit.x[1]), 4)


def records_by_key(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``op`` and ``skip`` records by configuration key."""
    return {r["key"]: r for r in records if r.get("type") in ("op", "skip")}
