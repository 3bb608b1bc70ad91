"""The report's plots: what the new user's hour found wrong with them (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tacopt.benchmarks.harness import read_records
from tacopt.benchmarks.plots import breakdown_bars, breakdown_figure, ratio_figure, time_figure
from tacopt.benchmarks.tables import picker_summary

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "shared" / "results.jsonl.gz"


def record(model, picker, objective, exact, units=10, seconds=0.01, **extra):
    return {"key": f"{model}|{picker}", "model": model, "devices": "GPU,CPU", "units": units,
            "granularity": "subgraph", "cost_model": "tac", "picker": picker,
            "status": "OPTIMAL" if picker == "exact" else "HEURISTIC", "objective": objective,
            "ratio_to_exact": objective / exact, "seconds": seconds,
            "breakdown": {"compute": objective, "transfer": 0.0, "quant": 0.0},
            **extra}  # fmt: skip


def test_a_ratio_of_exactly_one_is_drawn():
    runs = (("a", "exact", 1.0), ("a", "greedy", 1.0), ("b", "exact", 1.0), ("b", "greedy", 1.5))
    recs = [record(m, p, obj, 1.0) for m, p, obj in runs]
    fig = ratio_figure(recs)
    ax = fig.axes[0]
    drawn = [tuple(map(float, xy)) for c in ax.collections for xy in c.get_offsets()]
    xs = sorted(x for x, _ in drawn)
    assert xs == [1.0, 1.5]  # greedy's tie with exact on model a has a mark of its own
    lo, hi = ax.get_xlim()
    assert lo < 1.0 < hi  # and it is inside the axes, not on their edge


def test_the_time_legend_covers_no_line():
    recs = [record(f"m{n}", p, 1.0, 1.0, units=n, seconds=s * n)
            for n in (10, 100, 1000) for p, s in (("exact", 0.01), ("greedy", 0.001))]  # fmt: skip
    fig = time_figure(recs)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # beside the axes, so over no data


@pytest.mark.skipif(not RESULTS.is_file(), reason="no committed shared-zoo results")
def test_breakdown_shows_the_tables_geometric_means():
    recs = read_records(RESULTS)
    table = {s.picker: s.geomean_ratio for s in picker_summary(recs)}
    bars = breakdown_bars(recs)
    assert set(bars) == {p for p, g in table.items() if g is not None}
    for picker, parts in bars.items():
        assert sum(parts.values()) == pytest.approx(table[picker], rel=1e-9), picker
    fig = breakdown_figure(recs)
    labels = sorted(t.get_text() for t in fig.axes[0].texts)
    assert labels == sorted(f"{table[p]:.4f}" for p in bars)
