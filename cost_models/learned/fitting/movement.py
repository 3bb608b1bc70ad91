"""Data-movement ops (SLICE, CONCATENATION, TRANSPOSE, PAD, ...) priced by what they copy:
fixed + per byte moved + per contiguous run, fitted on measured records."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.learned.fitting.features import bytes_moved, copy_runs
from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.ops import MOVEMENT

#: A kind's data-movement fit answers within this factor of the bytes it was fitted on.
RANGE = 2.0


#: The fit weighs each record's error relative to its net latency, or to this (us) when it is
#: smaller: a net latency below the invoke overhead's own spread (~0.5 us here) is noise, and
#: weighed relatively the copies that cost ~0 pulled the per-byte rate down (on the zoo's
#: tuning half the copy model priced big strided slices at 0.6x; with the floor 0.9-1.0x).
WEIGHT_FLOOR_US = 1.0

#: Where a group's per-byte cost may change (bytes moved): a copy whose operands no longer fit a
#: core's cache runs at the next level's bandwidth. Each group with :data:`MIN_KNEE_RECORDS`
#: records keeps the knee (or none) that fits it best.
KNEES = (2**18, 2**19, 2**20, 2**21, 2**22)
MIN_KNEE_RECORDS = 8


def _columns(moved: float, runs: float, knee: float | None) -> list[float]:
    below = moved if knee is None else min(moved, knee)
    return [1.0, below, runs, 0.0 if knee is None else max(moved - knee, 0.0)]


def movement_fits(
    ops: Sequence[Mapping[str, Any]], *, slice_spans: bool = True, pad_pixels: bool = True
) -> dict[str, list[float]]:
    """``{"KIND|TYPE" or "*|TYPE": [fixed_us, us_per_byte, us_per_run, min_bytes, max_bytes,
    knee_bytes, us_per_byte_beyond]}`` for data-movement ops (the bytes moved by the records
    fitted on bound where it answers).

    Net latency = fixed + per byte x :func:`bytes_moved` up to the knee + per byte beyond x the
    rest + per run x :func:`copy_runs` (``slice_spans`` / ``pad_pixels``: its way of counting a
    slice's / a channel pad's runs, False for learned models before version 10 / 11),
    non-negative least squares on the relative error (each record weighted by 1 / its net
    latency, or 1 / :data:`WEIGHT_FLOOR_US` when that is smaller). The knee is where the copy
    stops fitting a cache: the best of :data:`KNEES` for a group of :data:`MIN_KNEE_RECORDS`
    records, when it cuts the relative error by a tenth (else none, knee 0).
    LiteRT's builtin RESHAPE here copied 55 kB at ~95 GB/s and 0.9-3.1 MB at ~50 GB/s; one
    per-byte rate fitted on relative errors followed the many small copies and priced the big
    ones at 0.34-0.74x. A kind needs 3 records; ``*|TYPE`` pools every data-movement kind of
    an inference type and answers for the others.

    >>> ops = [{"kind": "TRANSPOSE", "inference_type": "FLOAT", "outputs": [[[n]]], "inputs": [],
    ...         "latency_us": 1.0 + n / 1000, "overhead_us": 0.5} for n in (10, 1000, 10000)]
    >>> [round(v, 4) for v in movement_fits(ops)["TRANSPOSE|FLOAT"]]
    [0.5, 0.0003, 0.0, 40.0, 40000.0, 0.0, 0.0]
    """
    # Deferred: scipy only when fitting (pricing with a learned model does not load it).
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
        w = 1.0 / np.maximum(y, WEIGHT_FLOOR_US)
        moved = [float(bytes_moved(r)) for r in rs]
        runs = [float(copy_runs(r, slice_spans=slice_spans, pad_pixels=pad_pixels)) for r in rs]
        best: tuple[float, float | None, np.ndarray] | None = None
        for knee in (None, *(KNEES if len(rs) >= MIN_KNEE_RECORDS else ())):
            if knee is not None and max(moved) <= knee:
                continue
            A = np.array([_columns(m, n, knee) for m, n in zip(moved, runs, strict=True)])
            A = A * w[:, None]
            scale = np.maximum(A.max(axis=0), 1e-30)
            coef, residual = nnls(A / scale, y * w)
            # a knee must cut the relative error by a tenth: a free knee always fits a little
            if best is None or residual < (1.0 if best[1] is not None else 0.9) * best[0] - 1e-12:
                best = (residual, knee, coef / scale)
        assert best is not None
        _, knee, coef = best
        values = (coef[0], coef[1], coef[2], min(moved), max(moved), knee or 0.0, coef[3])
        fits[name] = [float(f"{c:.6g}") for c in values]
    return fits


def predict_movement(
    fits: Mapping[str, Sequence[float]],
    features: Mapping[str, Any],
    *,
    slice_spans: bool = True,
    pad_pixels: bool = True,
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
    knee, beyond = (fit[5], fit[6]) if len(fit) > 6 and fit[5] > 0 else (None, 0.0)
    runs = copy_runs(features, slice_spans=slice_spans, pad_pixels=pad_pixels)
    return float(np.dot([a, b, c, beyond], _columns(moved, runs, knee)))
