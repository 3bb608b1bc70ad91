"""The Markdown tables of a study's report: :func:`picker_summary` (one row per picker: cases,
failures, geometric-mean ratio to the exact optimum of the same problem, share worse / better,
times, moves), the per-case, fusion, memory and failure tables, and :func:`markdown`, the whole
report (:mod:`tacopt.benchmarks.report` writes it with the plots of
:mod:`tacopt.benchmarks.plots`).

Examples
--------
>>> recs = [
...     {"key": "m|e", "model": "m", "devices": "GPU,CPU", "granularity": "op", "units": 4,
...      "cost_model": "tac", "picker": "exact", "status": "OPTIMAL", "objective": 10.0,
...      "ratio_to_exact": 1.0, "seconds": 0.1, "transfers": 1, "conversions": 0},
...     {"key": "m|g", "model": "m", "devices": "GPU,CPU", "granularity": "op", "units": 4,
...      "cost_model": "tac", "picker": "greedy", "status": "HEURISTIC", "objective": 12.5,
...      "ratio_to_exact": 1.25, "seconds": 0.01, "transfers": 2, "conversions": 0}]
>>> [(r.picker, r.cases, r.geomean_ratio, r.share_worse) for r in picker_summary(recs)]
[('exact', 1, 1.0, 0.0), ('greedy', 1, 1.25, 1.0)]
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tacopt.benchmarks.study import FAILED

#: Relative tolerance under which a picker counts as equal to exact.
RATIO_TOL = 1e-6
#: Where a plot goes: a file path or a binary stream.
PlotTarget = Path | BinaryIO
COMPONENTS = ("compute", "transfer", "quant")
COMPONENT_LABELS = {"compute": "compute", "transfer": "transfer", "quant": "conversion"}
#: Statuses of a picker that found no plan within the capacities (not a failure).
NO_PLAN = frozenset({"INFEASIBLE", "UNKNOWN"})
_CASE_FIELDS = ("model", "devices", "granularity", "cost_model", "fusion")


@dataclass(frozen=True, slots=True)
class PickerSummary:
    """One picker over a study (ratios only over cases where exact and the picker succeeded)."""

    picker: str
    cases: int
    failed: int
    compared: int
    geomean_ratio: float | None
    worst_ratio: float | None
    share_worse: float | None
    share_better: float | None
    median_seconds: float | None
    total_seconds: float
    mean_transfers: float | None
    mean_conversions: float | None


def is_ok(record: Mapping[str, Any]) -> bool:
    return record.get("status") not in FAILED and record.get("objective") is not None


def pickers_of(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Pickers in first-seen order, exact first."""
    seen = list(dict.fromkeys(str(r["picker"]) for r in records))
    return sorted(seen, key=lambda p: p != "exact")


def pipeline_records(records: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The records of the pipeline as users run it: without the ``plain`` (unfused) cases when
    the study also ran fused ones."""
    if any(r.get("fusion") == "fused" for r in records):
        return [r for r in records if r.get("fusion") != "plain"]
    return records


def picker_summary(records: Sequence[Mapping[str, Any]]) -> list[PickerSummary]:
    """One :class:`PickerSummary` per picker, exact first.

    Parameters
    ----------
    records : sequence of dict
        Records as written by :func:`tacopt.benchmarks.harness.run_study`. When a study ran
        both fusion modes, only the fused cases (the partitioner's pipeline) count.

    Returns
    -------
    list of PickerSummary
    """
    records = pipeline_records(records)
    out = []
    for picker in pickers_of(records):
        mine = [r for r in records if r["picker"] == picker]
        ok = [r for r in mine if is_ok(r)]
        ratios = [r["ratio_to_exact"] for r in ok if r.get("ratio_to_exact") is not None]
        finite = [x for x in ratios if math.isfinite(x) and x > 0]
        seconds = [r["seconds"] for r in ok if r.get("seconds") is not None]
        transfers = [r["transfers"] for r in ok if r.get("transfers") is not None]
        conversions = [r["conversions"] for r in ok if r.get("conversions") is not None]
        out.append(
            PickerSummary(
                picker=picker,
                cases=len(mine),
                failed=sum(1 for r in mine if not is_ok(r) and r.get("status") not in NO_PLAN),
                compared=len(ratios),
                geomean_ratio=geomean(finite) if finite else None,
                worst_ratio=max(ratios) if ratios else None,
                share_worse=_share(ratios, lambda x: x > 1 + RATIO_TOL),
                share_better=_share(ratios, lambda x: x < 1 - RATIO_TOL),
                median_seconds=statistics.median(seconds) if seconds else None,
                total_seconds=math.fsum(seconds),
                mean_transfers=statistics.fmean(transfers) if transfers else None,
                mean_conversions=statistics.fmean(conversions) if conversions else None,
            )
        )
    return out


def geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def _share(values: Sequence[float], test: Any) -> float | None:
    return sum(1 for v in values if test(v)) / len(values) if values else None


# ---------------------------------------------------------------------------------------------
# Markdown


def _fmt(value: float | None, spec: str = ".4g", none: str = "–") -> str:
    if value is None:
        return none
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    return format(value, spec)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> str:
    align = align or "l" + "r" * (len(header) - 1)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def summary_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The headline table (one row per picker) in Markdown.

    Examples
    --------
    >>> print(summary_table([{"key": "k", "picker": "exact", "status": "OPTIMAL",
    ...     "objective": 1.0, "ratio_to_exact": 1.0, "seconds": 0.5}]).splitlines()[2])
    | exact | 1 | 0 | 1.0000 | 1.0000 | 0.0 % | 0.0 % | 0.5 | 0.5 | – | – |
    """
    header = (
        "picker", "cases", "failed", "geomean ratio to exact", "worst ratio", "worse than exact",
        "better than exact", "median s", "total s", "mean transfers", "mean conversions",
    )  # fmt: skip
    rows = [
        (
            s.picker,
            str(s.cases),
            str(s.failed),
            _fmt(s.geomean_ratio, ".4f"),
            _fmt(s.worst_ratio, ".4f"),
            _pct(s.share_worse),
            _pct(s.share_better),
            _fmt(s.median_seconds, ".3g"),
            _fmt(s.total_seconds, ".3g"),
            _fmt(s.mean_transfers, ".1f"),
            _fmt(s.mean_conversions, ".1f"),
        )
        for s in picker_summary(records)
    ]
    return _table(header, rows)


def cases_of(records: Sequence[Mapping[str, Any]]) -> dict[tuple, dict[str, Mapping[str, Any]]]:
    """Records by case (model, devices, granularity, cost model, fusion), then by picker."""
    cases: dict[tuple, dict[str, Mapping[str, Any]]] = {}
    for r in records:
        cases.setdefault(tuple(r.get(f) for f in _CASE_FIELDS), {})[r["picker"]] = r
    return cases


def case_table(records: Sequence[Mapping[str, Any]]) -> str:
    """One row per case: exact objective and gap, then each picker's ratio · seconds · T/C."""
    pickers = pickers_of(records)
    header = ["model", "devices", "gran.", "cost", "fusion", "units", "exact objective"]
    header += ["exact gap"]
    header += [f"{p}: ratio · s · T/C" for p in pickers]
    rows = []
    for (model, devices, gran, cost, fusion), by_picker in cases_of(records).items():
        any_rec = next(iter(by_picker.values()))
        exact = by_picker.get("exact", {})
        row = [
            str(model),
            str(devices),
            str(gran),
            str(cost),
            str(fusion or "–"),
            _fmt(any_rec.get("units"), "d"),
            _fmt(exact.get("objective"), ".6g") if is_ok(exact) else "–",
            _pct(exact.get("gap")) if is_ok(exact) else "–",
        ]
        for p in pickers:
            r = by_picker.get(p)
            if r is None:
                row.append("")
            elif not is_ok(r):
                row.append(str(r.get("status")))
            else:
                ratio = _fmt(r.get("ratio_to_exact"), ".4f")
                moves = f"{_fmt(r.get('transfers'), 'd')}/{_fmt(r.get('conversions'), 'd')}"
                row.append(f"{ratio} · {_fmt(r.get('seconds'), '.2g')} · {moves}")
        rows.append(row)
    return _table(header, rows, "lllllrrr" + "r" * len(pickers))


def fusion_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Per model: the fusions applied and the exact objective fused over plain (``fuse=False``).

    Only cases run both ways with an exact plan each count; empty when there are none.
    """
    exact = {
        (r["model"], r.get("devices"), r.get("granularity"), r.get("cost_model"), r["fusion"]): r
        for r in records
        if r.get("picker") == "exact" and is_ok(r) and r.get("fusion") in ("fused", "plain")
    }
    by_model: dict[str, list[float]] = {}
    fused_by: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for (model, devices, gran, cost, fusion), r in exact.items():
        plain = exact.get((model, devices, gran, cost, "plain"))
        if fusion != "fused" or plain is None or not plain.get("objective"):
            continue
        by_model.setdefault(model, []).append(r["objective"] / plain["objective"])
        fused_by[model] = (r.get("fusions") or {}, r.get("unfused") or {})
    if not by_model:
        return ""
    rows = []
    for model in sorted(by_model):
        ratios = by_model[model]
        fusions, unfused = fused_by[model]
        rows.append(
            (
                model,
                ", ".join(f"{k} {v}" for k, v in fusions.items()) or "none",
                ", ".join(f"{k} {v}" for k, v in unfused.items()) or "–",
                str(len(ratios)),
                f"{geomean(ratios):.4f}",
                f"{min(ratios):.4f}",
                f"{max(ratios):.4f}",
            )
        )
    header = ("model", "fusions", "unfused again", "cases", "fused / plain", "best", "worst")
    return _table(header, rows, "lllrrrr")


def failure_table(records: Sequence[Mapping[str, Any]], limit: int = 50) -> str:
    """The failed records (model, devices, granularity, picker, status, error), up to ``limit``;
    a picker that found no plan within the capacities is in :func:`memory_table` instead."""
    failed = [r for r in records if not is_ok(r) and r.get("status") not in NO_PLAN]
    rows = [
        (
            str(r.get("model")),
            str(r.get("devices")),
            str(r.get("granularity")),
            str(r.get("picker")),
            str(r.get("status")),
            str(r.get("error") or "").replace("|", "\\|")[:160],
        )
        for r in failed[:limit]
    ]
    more = f"\n… and {len(failed) - limit} more.\n" if len(failed) > limit else ""
    return _table(("model", "devices", "gran.", "picker", "status", "error"), rows, "llllll") + more


def markdown(
    records: Sequence[Mapping[str, Any]], *, title: str, plots: Sequence[str] = (), extra: str = ""
) -> str:
    """The whole Markdown report; ``extra`` (Markdown) goes after the per-picker table."""
    versions: Mapping[str, Any] = next((r["versions"] for r in records if r.get("versions")), {})
    params = next((r.get("params") for r in records if r.get("picker") == "exact"), None)
    distinct = {f: sorted({str(r.get(f)) for r in records}) for f in _CASE_FIELDS}
    parts = [
        f"# {title}\n",
        f"{len(records)} records: {len(distinct['model'])} models × device sets "
        f"{', '.join(distinct['devices'])} × granularity {', '.join(distinct['granularity'])} "
        f"× cost model {', '.join(distinct['cost_model'])}; pickers "
        f"{', '.join(pickers_of(records))}.\n",
        "Ratios are each picker's objective over the exact optimum of the same problem "
        "(geometric mean over the cases where both succeeded); *worse* / *better* count cases "
        f"beyond a relative {RATIO_TOL:g}. T/C = transfers / conversions in the plan.\n",
        "## Per picker\n",
        summary_table(records),
        *(
            ["Fused cases only; the fusion table below compares them with the plain ones.\n"]
            if len(pipeline_records(records)) < len(records)
            else []
        ),
    ]
    if params:
        parts.append(f"Exact picker parameters: `{params}`.\n")
    if versions:
        parts.append("Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".\n")
    if extra:
        parts.append(extra)
    parts += [f"![{Path(p).stem}]({p})\n" for p in plots]
    fusion = fusion_table(records)
    if fusion:
        parts += [
            "## Fusion\n",
            "The exact objective of the fused pipeline over the model partitioned as it is "
            "(`fuse=False`), per model (geometric mean over its cases). *Unfused again*: fused "
            "ops no listed device runs, unfused before partitioning.\n",
            fusion,
        ]
    parts += ["## Per case\n", case_table(records)]
    memory = memory_table(records)
    if memory:
        parts += [
            "## Memory\n",
            "Cases with device capacities (`--memory`): per picker, the plans found within them "
            "(each checked: it fits), the cases where it found none (INFEASIBLE: proven, "
            "UNKNOWN: it gave up) and the largest share of a capacity a plan used.\n",
            memory,
        ]
    if any(not is_ok(r) and r.get("status") not in NO_PLAN for r in records):
        parts += ["## Failures\n", failure_table(records)]
    return "\n".join(parts)


def memory_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Per picker over the cases with capacities: plans, INFEASIBLE, UNKNOWN, fits, the largest
    peak / capacity; empty when no case has a capacity.

    Examples
    --------
    >>> print(memory_table([{"picker": "greedy", "status": "UNKNOWN", "capacity": {"GPU": 8}},
    ...     {"picker": "greedy", "status": "HEURISTIC", "objective": 3.0, "fits": True,
    ...      "capacity": {"GPU": 8}, "peak_memory": {"GPU": 6, "CPU": 9}}]).splitlines()[2])
    | greedy | 2 | 1 | 1 | 0 | 1 | 75.0 % |
    """
    limited = [r for r in records if r.get("capacity")]
    if not limited:
        return ""
    rows = []
    for picker in pickers_of(limited):
        mine = [r for r in limited if r["picker"] == picker]
        plans = [r for r in mine if is_ok(r)]
        used = [
            r["peak_memory"].get(d, 0.0) / c
            for r in plans
            for d, c in r["capacity"].items()
            if r.get("peak_memory") and c > 0
        ]
        rows.append((
            picker, str(len(mine)), str(len(plans)), str(sum(bool(r.get("fits")) for r in plans)),
            str(sum(r.get("status") == "INFEASIBLE" for r in mine)),
            str(sum(r.get("status") == "UNKNOWN" for r in mine)),
            _pct(max(used)) if used else "–",
        ))  # fmt: skip
    header = ("picker", "cases", "plans", "fit", "infeasible", "unknown", "max peak / capacity")
    return _table(header, rows)

