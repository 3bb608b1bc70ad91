"""The report's plots (PNG, via matplotlib):

- ``ratio_to_exact.png``: per model, each picker's geometric-mean ratio to exact;
- ``time_vs_units.png``: solve time against problem size, log-log, one line per picker;
- ``breakdown.png``: each picker's cost split into compute, transfer and conversion, relative
  to the exact optimum (so models with different cost units can be averaged).
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
)
from tacopt.benchmarks.zoos import BenchmarkError


def pyplot() -> Any:
    """matplotlib.pyplot with the report's style (Agg backend); BenchmarkError without it."""
    try:
        import matplotlib
    except ImportError:
        raise BenchmarkError("plots need matplotlib: pip install 'tacopt[plots]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {p: cmap(i % 10) for i, p in enumerate(pickers)}


def plot_ratio(records: Sequence[Mapping[str, Any]], path: PlotTarget) -> PlotTarget | None:
    """Per model, each non-exact picker's geometric-mean ratio to exact (horizontal bars)."""
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
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    ax.invert_yaxis()
    top = max(geomean(v) for m in models for v in ratios[m].values())
    if top > 3:
        ax.set_xscale("log")
        ticks = [t for t in (1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100) if t <= top * 1.05]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    ax.set_xlim(1.0, top * 1.05)
    ax.margins(y=0.01)
    ax.set_xlabel("objective / exact optimum (geometric mean over device sets and granularities)")
    ax.set_title("Cost of each picker's plan relative to the exact optimum (1 = optimal)")
    ax.legend(loc="lower right", frameon=True, framealpha=0.9, edgecolor="none")
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def plot_time(records: Sequence[Mapping[str, Any]], path: PlotTarget) -> PlotTarget | None:
    """Solve time against units, log-log: points per case, a line through per-size medians."""
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
    ax.legend(frameon=False)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def plot_breakdown(records: Sequence[Mapping[str, Any]], path: PlotTarget) -> PlotTarget | None:
    """Mean compute / transfer / conversion cost per picker, each case scaled by its optimum."""
    exact_of = {
        c: by["exact"]["objective"]
        for c, by in cases_of(records).items()
        if "exact" in by and is_ok(by["exact"]) and by["exact"]["objective"] > 0
    }
    pickers = pickers_of(records)
    shares: dict[str, list[list[float]]] = {p: [] for p in pickers}
    for case, by in cases_of(records).items():
        if case not in exact_of:
            continue
        for p, r in by.items():
            if is_ok(r) and r.get("breakdown"):
                shares[p].append([r["breakdown"][c] / exact_of[case] for c in COMPONENTS])
    pickers = [p for p in pickers if shares[p]]
    if not pickers:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    bottom = [0.0] * len(pickers)
    for c, color in zip(COMPONENTS, ("#4c72b0", "#dd8452", "#55a868")):
        means = [statistics.fmean(s[COMPONENTS.index(c)] for s in shares[p]) for p in pickers]
        ax.bar(pickers, means, bottom=bottom, color=color, label=COMPONENT_LABELS[c], width=0.6)
        bottom = [b + m for b, m in zip(bottom, means)]
    for i, total in enumerate(bottom):
        ax.annotate(f"{total:.3f}", (i, total), ha="center", va="bottom", fontsize=9,
                    xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_ylim(0, max(bottom) * 1.12)
    ax.set_ylabel("mean cost / exact optimum")
    ax.set_title(f"Cost breakdown per picker ({len(exact_of)} problems)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path
