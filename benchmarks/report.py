"""Reports of a study: a Markdown summary and paper-ready PNG plots from a results JSONL file.

:func:`picker_summary` reduces the records to one row per picker: cases, failures, the
geometric-mean ratio of its objective to the exact optimum of the same problem, the share of
cases where it is worse (or better: exact stopped by its time limit) than exact, solve times,
transfers and conversions. :func:`write_report` writes ``report.md`` with that headline table, a
table per case (exact objective and gap; each picker's ratio, time, transfers / conversions),
the memory table and the failures, plus three plots:

- ``ratio_to_exact.png``: per model, each picker's geometric-mean ratio to exact;
- ``time_vs_units.png``: solve time against problem size, log-log, one line per picker;
- ``breakdown.png``: each picker's cost split into compute, transfer and conversion, relative
  to the exact optimum (so models with different cost units can be averaged).

The tables are :mod:`tacopt.benchmarks.tables` (with a Memory table for cases with device
capacities), the plots :mod:`tacopt.benchmarks.plots`; this module writes them.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tacopt.benchmarks.harness import read_records
from tacopt.benchmarks.pages import pages_markdown, plan_pages
from tacopt.benchmarks.plots import plot_breakdown, plot_ratio, plot_time, pyplot  # noqa: F401
from tacopt.benchmarks.tables import (  # noqa: F401  (re-exported: the report's API)
    RATIO_TOL,
    PickerSummary,
    case_table,
    failure_table,
    fusion_table,
    markdown,
    memory_table,
    picker_summary,
    pipeline_records,
    summary_table,
)
from tacopt.benchmarks.zoos import BenchmarkError
from tacopt.io import all_or_nothing, check_output_folder

#: The folder of a report's plan pages, beside report.md.
PAGES = "pages"


def write_report(
    records: Sequence[Mapping[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    title: str = "tacopt benchmark",
    plots: bool = True,
    extra: str = "",
    pages: bool = False,
) -> Path:
    """Write ``report.md`` and the PNG plots into ``out_dir``; return the Markdown path.

    With ``pages``, also a plan page per model in ``out_dir/pages/``
    (:func:`tacopt.benchmarks.pages.plan_pages`), linked from the report.

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
    pages : bool
        Write and link a plan page per model (rebuilt from its zoo: one case per model).

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
    made = []
    if pages:
        made = plan_pages(records)
        extra += pages_markdown(made, PAGES)
        (out / PAGES).mkdir(exist_ok=True)
    files = [("report", out / n) for n in ("report.md", *names)]
    files += [("plan page", out / PAGES / p.file) for p in made if p.html is not None]
    with all_or_nothing(files) as staging:
        for p in made:
            if p.html is not None:
                staging.write(out / PAGES / p.file, p.html)
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
    pages: bool = True,
) -> Path:
    """:func:`write_report` on the records of a results file (plan pages included).

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
    pages : bool
        Write and link a plan page per model (:func:`write_report`).

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
    return write_report(records, folder, title=title, plots=plots, pages=pages)
