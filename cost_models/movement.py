"""Data-movement ops (SLICE, CONCATENATION, TRANSPOSE, PAD, ...) priced by what they copy:
fixed + per byte moved + per contiguous run, fitted on measured records."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.learned.fitting.features import bytes_moved, copy_runs
from tacopt.cost_models.ops import MOVEMENT

#: A kind's data-movement fit answers within this factor of the bytes it was fitted on.
RANGE = 2.0


def _net(record: Mapping[str, Any]) -> float:
    return max(record["latency_us"] - record.get("overhead_us", 0.0), 0.05)


def movement_fits(ops: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """``{"KIND|TYPE" or "*|TYPE": [fixed_us, us_per_byte, us_per_run, min_bytes, max_bytes]}``
    for data-movement ops (the bytes moved by the records fitted on bound where it answers).

    Net latency = fixed + per byte x :func:`bytes_moved` + per run x :func:`copy_runs`,
    non-negative least squares on the relative error (each record weighted by 1 / its
    latency). A kind needs 3 records; ``*|TYPE`` pools every data-movement kind of an
    inference type and answers for the others.

    >>> ops = [{"kind": "TRANSPOSE", "inference_type": "FLOAT", "outputs": [[[n]]], "inputs": [],
    ...         "latency_us": 1.0 + n / 1000, "overhead_us": 0.5} for n in (10, 1000, 10000)]
    >>> [round(v, 4) for v in movement_fits(ops)["TRANSPOSE|FLOAT"]]
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
        y = np.array([_net(r) for r in rs])
        A = np.array([[1.0, bytes_moved(r), copy_runs(r)] for r in rs]) / y[:, None]
        scale = np.maximum(A.max(axis=0), 1e-30)
        coef, _ = nnls(A / scale, np.ones_like(y))
        moved = [bytes_moved(r) for r in rs]
        fits[name] = [float(f"{c:.6g}") for c in (*(coef / scale), min(moved), max(moved))]
    return fits



def predict_movement(
    fits: Mapping[str, Sequence[float]], features: Mapping[str, Any]
) -> float | None:
    """Net latency (us) of a data-movement op from :func:`movement_fits` (its kind's fit within
    ``RANGE`` of the bytes it was fitted on, else the type's pooled fit), None without a fit.

    >>> fits = {"*|FLOAT": [0.5, 0.001, 0.0, 1.0, 1e9]}
    >>> t = [[1, 100], "float32", False, False]
    >>> predict_movement(fits, {"kind": "SLICE", "inference_type": "FLOAT", "inputs": [t],
    ...                         "outputs": [t], "options": {}})
    1.3
    """
    itype = features.get("inference_type")
    moved = bytes_moved(features)
    fit = fits.get(f"{features['kind']}|{itype}")
    if fit is None or not fit[3] / RANGE <= moved <= fit[4] * RANGE:
        fit = fits.get(f"*|{itype}")
    if fit is None:
        return None
    a, b, c = fit[:3]
    return float(a + b * moved + c * copy_runs(features))
