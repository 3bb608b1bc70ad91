"""Reports of a study: a Markdown summary and paper-ready PNG plots from a results JSONL file.

:func:`picker_summary` reduces the records to one row per picker: cases, failures, the
geometric-mean ratio of its objective to the exact optimum of the same problem, the share of
cases where it is worse (or better: exact stopped by its time limit) than exact, solve times,
transfers and conversions. :func:`write_report` writes ``report.md`` with that headline table, a
table per case (exact objective and gap; each picker's ratio, time, transfers / conversions) and
the failures, plus three plots:

- ``ratio_to_exact.png``: per model, each picker's geometric-mean ratio to exact;
- ``time_vs_units.png``: solve time against problem size, log-log, one line per picker;
- ``breakdown.png``: each picker's cost split into compute, transfer and conversion, relative
  to the exact optimum (so models with different cost units can be averaged).

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

import io
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tacopt.benchmarks.harness import FAILED, read_records
from tacopt.benchmarks.zoos import BenchmarkError
from tacopt.fusion.io import all_or_nothing, check_output_folder

#: Relative tolerance under which a picker counts as equal to exact.
RATIO_TOL = 1e-6
#: Where a plot goes: a file path or a binary stream.
_Target = Path | BinaryIO
_COMPONENTS = ("compute", "transfer", "quant")
_COMPONENT_LABELS = {"compute": "compute", "transfer": "transfer", "quant": "conversion"}
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


def _ok(record: Mapping[str, Any]) -> bool:
    return record.get("status") not in FAILED and record.get("objective") is not None


def _pickers(records: Iterable[Mapping[str, Any]]) -> list[str]:
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
    for picker in _pickers(records):
        mine = [r for r in records if r["picker"] == picker]
        ok = [r for r in mine if _ok(r)]
        ratios = [r["ratio_to_exact"] for r in ok if r.get("ratio_to_exact") is not None]
        finite = [x for x in ratios if math.isfinite(x) and x > 0]
        seconds = [r["seconds"] for r in ok if r.get("seconds") is not None]
        transfers = [r["transfers"] for r in ok if r.get("transfers") is not None]
        conversions = [r["conversions"] for r in ok if r.get("conversions") is not None]
        out.append(
            PickerSummary(
                picker=picker,
                cases=len(mine),
                failed=len(mine) - len(ok),
                compared=len(ratios),
                geomean_ratio=_geomean(finite) if finite else None,
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


def _geomean(values: Sequence[float]) -> float:
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


def _cases(records: Sequence[Mapping[str, Any]]) -> dict[tuple, dict[str, Mapping[str, Any]]]:
    cases: dict[tuple, dict[str, Mapping[str, Any]]] = {}
    for r in records:
        cases.setdefault(tuple(r.get(f) for f in _CASE_FIELDS), {})[r["picker"]] = r
    return cases


def case_table(records: Sequence[Mapping[str, Any]]) -> str:
    """One row per case: exact objective and gap, then each picker's ratio · seconds · T/C."""
    pickers = _pickers(records)
    header = ["model", "devices", "gran.", "cost", "fusion", "units", "exact objective"]
    header += ["exact gap"]
    header += [f"{p}: ratio · s · T/C" for p in pickers]
    rows = []
    for (model, devices, gran, cost, fusion), by_picker in _cases(records).items():
        any_rec = next(iter(by_picker.values()))
        exact = by_picker.get("exact", {})
        row = [
            str(model),
            str(devices),
            str(gran),
            str(cost),
            str(fusion or "–"),
            _fmt(any_rec.get("units"), "d"),
            _fmt(exact.get("objective"), ".6g") if _ok(exact) else "–",
            _pct(exact.get("gap")) if _ok(exact) else "–",
        ]
        for p in pickers:
            r = by_picker.get(p)
            if r is None:
                row.append("")
            elif not _ok(r):
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
        if r.get("picker") == "exact" and _ok(r) and r.get("fusion") in ("fused", "plain")
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
                f"{_geomean(ratios):.4f}",
                f"{min(ratios):.4f}",
                f"{max(ratios):.4f}",
            )
        )
    header = ("model", "fusions", "unfused again", "cases", "fused / plain", "best", "worst")
    return _table(header, rows, "lllrrrr")


def failure_table(records: Sequence[Mapping[str, Any]], limit: int = 50) -> str:
    """The failed records (model, devices, granularity, picker, status, error), up to ``limit``."""
    failed = [r for r in records if not _ok(r)]
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
        f"{', '.join(_pickers(records))}.\n",
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
    if any(not _ok(r) for r in records):
        parts += ["## Failures\n", failure_table(records)]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# plots


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


def plot_ratio(records: Sequence[Mapping[str, Any]], path: _Target) -> _Target | None:
    """Per model, each non-exact picker's geometric-mean ratio to exact (horizontal bars)."""
    pickers = [p for p in _pickers(records) if p != "exact"]
    ratios: dict[str, dict[str, list[float]]] = {}
    for r in records:
        x = r.get("ratio_to_exact")
        if r["picker"] in pickers and _ok(r) and x is not None and math.isfinite(x) and x > 0:
            ratios.setdefault(str(r["model"]), {}).setdefault(r["picker"], []).append(x)
    if not ratios:
        return None
    plt = pyplot()
    models = sorted(ratios, key=lambda m: (-_geomean(sum(ratios[m].values(), [])), m))
    colors = _colors(_pickers(records))
    height = 0.8 / max(len(pickers), 1)
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.26 * len(models) * max(1, len(pickers) / 2)))
    for k, p in enumerate(pickers):
        ys = [i + (k - (len(pickers) - 1) / 2) * height for i in range(len(models))]
        xs = [_geomean(ratios[m][p]) if p in ratios[m] else math.nan for m in models]
        ax.barh(ys, [x - 1 for x in xs], left=1, height=height, color=colors[p], label=p)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    ax.invert_yaxis()
    top = max(_geomean(v) for m in models for v in ratios[m].values())
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


def plot_time(records: Sequence[Mapping[str, Any]], path: _Target) -> _Target | None:
    """Solve time against units, log-log: points per case, a line through per-size medians."""
    rows = [r for r in records if _ok(r) and r.get("seconds") and r.get("units")]
    if not rows:
        return None
    plt = pyplot()
    pickers = _pickers(rows)
    colors = _colors(_pickers(records))
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


def plot_breakdown(records: Sequence[Mapping[str, Any]], path: _Target) -> _Target | None:
    """Mean compute / transfer / conversion cost per picker, each case scaled by its optimum."""
    exact_of = {
        c: by["exact"]["objective"]
        for c, by in _cases(records).items()
        if "exact" in by and _ok(by["exact"]) and by["exact"]["objective"] > 0
    }
    pickers = _pickers(records)
    shares: dict[str, list[list[float]]] = {p: [] for p in pickers}
    for case, by in _cases(records).items():
        if case not in exact_of:
            continue
        for p, r in by.items():
            if _ok(r) and r.get("breakdown"):
                shares[p].append([r["breakdown"][c] / exact_of[case] for c in _COMPONENTS])
    pickers = [p for p in pickers if shares[p]]
    if not pickers:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    bottom = [0.0] * len(pickers)
    for c, color in zip(_COMPONENTS, ("#4c72b0", "#dd8452", "#55a868")):
        means = [statistics.fmean(s[_COMPONENTS.index(c)] for s in shares[p]) for p in pickers]
        ax.bar(pickers, means, bottom=bottom, color=color, label=_COMPONENT_LABELS[c], width=0.6)
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


def write_report(
    records: Sequence[Mapping[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    title: str = "tacopt benchmark",
    plots: bool = True,
    extra: str = "",
) -> Path:
    """Write ``report.md`` and the PNG plots into ``out_dir``; return the Markdown path.

    Parameters
    ----------
    records : sequence of dict
        Records of a study (see :mod:`tacopt.benchmarks.harness`).
    out_dir : path
        Created if needed.
    title : str
        The report's heading.
    plots : bool
        Draw the PNGs (needs matplotlib).
    extra : str
        More Markdown, placed after the per-picker table.

    Raises
    ------
    BenchmarkError
        If there are no records, or plots are asked for without matplotlib.

    Examples
    --------
    >>> import tempfile
    >>> rec = {"key": "k", "model": "m", "picker": "exact", "status": "OPTIMAL",
    ...        "objective": 2.0, "ratio_to_exact": 1.0, "seconds": 0.1, "units": 3}
    >>> write_report([rec], tempfile.mkdtemp(), plots=False).name
    'report.md'
    """
    if not records:
        raise BenchmarkError("no records to report")
    out = check_output_folder(out_dir, what="report folder")
    names = ("ratio_to_exact.png", "time_vs_units.png", "breakdown.png") if plots else ()
    out.mkdir(parents=True, exist_ok=True)
    with all_or_nothing([("report", out / n) for n in ("report.md", *names)]) as staging:
        drawn: list[str] = []
        for name, draw in zip(names, (plot_ratio, plot_time, plot_breakdown)):
            png = io.BytesIO()
            if draw(records, png) is not None:
                staging.write(out / name, png.getvalue())
                drawn.append(name)
        staging.write(out / "report.md", markdown(records, title=title, plots=drawn, extra=extra))
    return out / "report.md"


def default_title(records: Sequence[Mapping[str, Any]]) -> str:
    """``tacopt benchmark: ZOO, ...``: the heading ``tacopt bench`` gives a study's report.

    >>> default_title([{"zoo": "shared"}, {"zoo": "layered"}, {"zoo": "shared"}])
    'tacopt benchmark: shared, layered'
    """
    zoos = dict.fromkeys(str(r.get("zoo")) for r in records if r.get("zoo"))
    return "tacopt benchmark: " + (", ".join(zoos) or "results")


def title_of(report: str | os.PathLike[str]) -> str | None:
    """The heading of an existing ``report.md`` (its first ``# `` line), or None."""
    path = Path(report)
    if not path.is_file():
        return None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def report_file(
    results: str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
    plots: bool = True,
) -> Path:
    """:func:`write_report` on the records of a results file.

    Parameters
    ----------
    results : path
        A results JSONL file.
    out_dir : path, optional
        Where the report goes. Default: beside ``results``, which must not hold a report yet
        (an existing report is replaced only when its folder is given here).
    title : str, optional
        Default: the title of the report being replaced, else :func:`default_title`.
    plots : bool
        Draw the PNGs.

    Raises
    ------
    BenchmarkError
        If ``results`` is missing or not a results file, holds no record, or the default folder
        already holds a report.
    """
    path = Path(results)
    if not path.is_file():
        raise BenchmarkError(f"results file {str(path)!r} does not exist")
    folder = Path(out_dir) if out_dir is not None else path.parent
    if out_dir is None and (folder / "report.md").exists():
        raise BenchmarkError(
            f"{folder / 'report.md'} exists; give -o {folder} to replace it, or another folder"
        )
    check_output_folder(folder, what="-o")
    records = read_records(path)
    title = title or title_of(folder / "report.md") or default_title(records)
    return write_report(records, folder, title=title, plots=plots)
