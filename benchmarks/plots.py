"""The report's plots (PNG, via matplotlib):

- ``ratio_to_exact.png``: per model, each picker's geometric-mean ratio to exact;
- ``time_vs_units.png``: solve time against problem size, log-log, one line per picker;
- ``breakdown.png``: each picker's geometric-mean cost relative to the exact optimum (the
  summary table's number, so models with different cost units can be averaged), split into
  compute, transfer and conversion by their mean shares of the picker's cost.

Each ``plot_*`` writes its PNG; the ``*_figure`` functions build the figure (tests read them).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from tacopt.benchmarks.tables import (
    COMPONENT_LABELS,
    COMPONENTS,
    PlotTarget,
    cases_of,
    geomean,
    is_ok,
    pickers_of,
    pipeline_records,
)
from tacopt.benchmarks.zoos import BenchmarkError


def pyplot() -> Any:
    """matplotlib.pyplot with the report's style (Agg backend); BenchmarkError without it."""
    try:
        # Deferred: matplotlib (~0.4 s to import) only when a report draws its plots.
        import matplotlib
    except ImportError:
        raise BenchmarkError("plots need matplotlib: pip install 'tacopt[plots]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    plt.rcParams.update(
        {
            "font.size": 10,
            "axes.titlesize": 11,
            "axes.labelsize": 10,
            "legend.fontsize": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "savefig.dpi": 150,
            "savefig.bbox": "tight",
        }
    )
    return plt


def _colors(pickers: Sequence[str]) -> dict[str, Any]:
    cmap = pyplot().colormaps["tab10"]
    return {p: cmap(i % 10) for i, p in enumerate(pickers)}


def plot_ratio(records: Sequence[Mapping[str, Any]], path: PlotTarget) -> PlotTarget | None:
    """Per model, each non-exact picker's geometric-mean ratio to exact (horizontal bars)."""
    return _save(ratio_figure(records), path)


def _save(fig: Any, path: PlotTarget) -> PlotTarget | None:
    if fig is None:
        return None
    fig.savefig(path, format="png")
    pyplot().close(fig)
    return path


def ratio_figure(records: Sequence[Mapping[str, Any]]) -> Any:
    """The figure of :func:`plot_ratio` (None without ratios): a bar from 1 to each ratio, and a
    marker at its end, so that a ratio of exactly 1.0 (a tie with exact) shows too."""
    pickers = [p for p in pickers_of(records) if p != "exact"]
    ratios: dict[str, dict[str, list[float]]] = {}
    for r in records:
        x = r.get("ratio_to_exact")
        if r["picker"] in pickers and is_ok(r) and x is not None and math.isfinite(x) and x > 0:
            ratios.setdefault(str(r["model"]), {}).setdefault(r["picker"], []).append(x)
    if not ratios:
        return None
    plt = pyplot()
    models = sorted(ratios, key=lambda m: (-geomean(sum(ratios[m].values(), [])), m))
    colors = _colors(pickers_of(records))
    height = 0.8 / max(len(pickers), 1)
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.26 * len(models) * max(1, len(pickers) / 2)))
    for k, p in enumerate(pickers):
        ys = [i + (k - (len(pickers) - 1) / 2) * height for i in range(len(models))]
        xs = [geomean(ratios[m][p]) if p in ratios[m] else math.nan for m in models]
        ax.barh(ys, [x - 1 for x in xs], left=1, height=height, color=colors[p], label=p)
        # a bar of length 0 draws nothing: the marker shows where every ratio is, 1.0 included
        ax.scatter(xs, ys, marker="|", s=(72 * 0.26 * height) ** 2, color=colors[p],
                   linewidths=2.5, zorder=3, clip_on=False)  # fmt: skip
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    ax.invert_yaxis()
    top = max(geomean(v) for m in models for v in ratios[m].values())
    if top > 3:
        ax.set_xscale("log")
        ticks = [t for t in (1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100) if t <= top * 1.05]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    ax.set_xlim(1.0 - 0.002 * max(top - 1, 0.05), max(top * 1.05, 1.01))
    ax.margins(y=0.01)
    ax.set_xlabel("objective / exact optimum (geometric mean over device sets and granularities)")
    ax.set_title("Cost of each picker's plan relative to the exact optimum (1 = optimal)")
    ax.legend(loc="lower right", frameon=True, framealpha=0.9, edgecolor="none")
    ax.grid(axis="x", alpha=0.3)
    return fig


def plot_time(records: Sequence[Mapping[str, Any]], path: PlotTarget) -> PlotTarget | None:
    """Solve time against units, log-log: points per case, a line through per-size medians."""
    return _save(time_figure(records), path)


def time_figure(records: Sequence[Mapping[str, Any]]) -> Any:
    """The figure of :func:`plot_time` (None without timed records); the legend sits outside
    the axes, right of them, so that it covers no line."""
    rows = [r for r in records if is_ok(r) and r.get("seconds") and r.get("units")]
    if not rows:
        return None
    plt = pyplot()
    pickers = pickers_of(rows)
    colors = _colors(pickers_of(records))
    sizes = sorted({r["units"] for r in rows})
    # Distinct sizes when there are few (a scaling study), else log-spaced bins (a model zoo).
    if len(sizes) <= 24:
        bins = [(s, s) for s in sizes]
    else:
        lo, hi = math.log10(sizes[0]), math.log10(sizes[-1]) + 1e-9
        edges = [10 ** (lo + (hi - lo) * i / 12) for i in range(13)]
        bins = list(zip(edges[:-1], edges[1:]))
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for p in pickers:
        mine = [r for r in rows if r["picker"] == p]
        ax.scatter([r["units"] for r in mine], [r["seconds"] for r in mine], s=10, alpha=0.35,
                   color=colors[p], linewidths=0)  # fmt: skip
        xs, ys = [], []
        for a, b in bins:
            inside = [r for r in mine if a <= r["units"] <= b]
            if inside:
                xs.append(statistics.median(r["units"] for r in inside))
                ys.append(statistics.median(r["seconds"] for r in inside))
        ax.plot(xs, ys, marker="o", ms=4, lw=1.8, color=colors[p], label=p)
    limited = [r for r in rows if r.get("status") == "FEASIBLE"]
    if limited:  # stopped by the time limit: the time says nothing about proving optimality
        xs, ys = [r["units"] for r in limited], [r["seconds"] for r in limited]
        ax.scatter(xs, ys, s=60, marker="x", color="black", zorder=3, label="time limit hit")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("units in the pick problem")
    ax.set_ylabel("picker wall time (s)")
    ax.set_title("Solve time against problem size (median per size)")
    ax.grid(which="major", alpha=0.3)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return fig


def plot_breakdown(records: Sequence[Mapping[str, Any]], path: PlotTarget) -> PlotTarget | None:
    """Each picker's geometric-mean cost / exact optimum, split by component (see the module)."""
    return _save(breakdown_figure(records), path)


def breakdown_bars(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per picker: its bar's height per component; the heights sum to the geometric mean of
    its cost / exact optimum over the cases where both have a plan (the summary table's
    ``geomean ratio to exact``), split by the component's mean share of the picker's cost.

    Examples
    --------
    >>> recs = [{"key": k, "model": k, "picker": p, "status": "OPTIMAL", "objective": obj,
    ...          "ratio_to_exact": obj / e, "breakdown": {"compute": obj, "transfer": 0.0,
    ...          "quant": 0.0}} for k, e in (("a", 1.0), ("b", 4.0))
    ...         for p, obj in (("exact", e), ("greedy", 2 * e if k == "a" else e))]
    >>> {p: round(sum(b.values()), 4) for p, b in breakdown_bars(recs).items()}
    {'exact': 1.0, 'greedy': 1.4142}
    """
    ratios: dict[str, list[float]] = {}
    shares: dict[str, list[list[float]]] = {}
    for r in pipeline_records(records):  # the records and ratios picker_summary uses
        x, b = r.get("ratio_to_exact"), r.get("breakdown")
        if not (is_ok(r) and x is not None and math.isfinite(x) and x > 0):
            continue
        ratios.setdefault(r["picker"], []).append(x)
        total = math.fsum(b[c] for c in COMPONENTS) if b else 0.0
        if b and total > 0:
            shares.setdefault(r["picker"], []).append([b[c] / total for c in COMPONENTS])
    bars = {}
    for p in pickers_of(records):
        if p in ratios and p in shares:
            height = geomean(ratios[p])
            mean_share = [statistics.fmean(s[i] for s in shares[p]) for i in range(len(COMPONENTS))]
            bars[p] = {c: height * mean_share[i] for i, c in enumerate(COMPONENTS)}
    return bars


def breakdown_figure(records: Sequence[Mapping[str, Any]]) -> Any:
    """The figure of :func:`plot_breakdown` (None without a case that exact solved)."""
    bars = breakdown_bars(records)
    if not bars:
        return None
    pickers = list(bars)
    n_cases = len(cases_of(pipeline_records(records)))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    bottom = [0.0] * len(pickers)
    for c, color in zip(COMPONENTS, ("#4c72b0", "#dd8452", "#55a868")):
        heights = [bars[p][c] for p in pickers]
        ax.bar(pickers, heights, bottom=bottom, color=color, label=COMPONENT_LABELS[c], width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for i, total in enumerate(bottom):
        ax.annotate(f"{total:.4f}", (i, total), ha="center", va="bottom", fontsize=9,
                    xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_ylim(0, max(bottom) * 1.12)
    ax.set_ylabel("geometric-mean cost / exact optimum")
    ax.set_title(f"Cost per picker, split by component ({n_cases} problems)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig
