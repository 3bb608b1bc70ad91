"""Reports: the per-picker summary (geometric-mean ratio, share worse), Markdown and PNG plots."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tacopt.benchmarks.harness import Study, run_study
from tacopt.benchmarks.report import case_table, markdown, picker_summary, report_file, write_report
from tacopt.benchmarks.zoos import BenchmarkError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rec(model: str, picker: str, objective: float | None, exact: float, **kw: object) -> dict:
    return {
        "key": f"{model}|{picker}", "model": model, "devices": "GPU,CPU", "granularity": "op",
        "cost_model": "tac", "units": 10, "picker": picker, "status": "OPTIMAL",
        "objective": objective, "seconds": 0.01,
        "ratio_to_exact": None if objective is None else objective / exact,
        "transfers": 1, "conversions": 0,
        "breakdown": {"compute": objective or 0.0, "transfer": 0.0, "quant": 0.0}, **kw,
    }  # fmt: skip


RECORDS = [
    _rec("a", "exact", 10.0, 10.0), _rec("a", "greedy", 10.0, 10.0),
    _rec("b", "exact", 5.0, 5.0), _rec("b", "greedy", 20.0, 5.0),
    _rec("c", "exact", 2.0, 2.0),
    _rec("c", "greedy", None, 2.0, status="ERROR", error="PickerError: boom"),
]  # fmt: skip


def test_summary_geomean_and_share_worse() -> None:
    exact, greedy = picker_summary(RECORDS)
    assert (exact.picker, exact.geomean_ratio, exact.share_worse) == ("exact", 1.0, 0.0)
    assert greedy.cases == 3 and greedy.failed == 1 and greedy.compared == 2
    assert greedy.geomean_ratio == pytest.approx(2.0)  # sqrt(1 * 4)
    assert greedy.worst_ratio == pytest.approx(4.0)
    assert greedy.share_worse == 0.5 and greedy.share_better == 0.0


def test_infinite_ratio_counts_as_worse_but_not_in_the_geomean() -> None:
    recs = [
        _rec("a", "greedy", 2.0, 2.0),
        {**_rec("z", "greedy", 1.0, 1.0), "ratio_to_exact": math.inf},
    ]
    (s,) = picker_summary(recs)
    assert s.geomean_ratio == 1.0 and s.share_worse == 0.5 and s.worst_ratio == math.inf


def test_markdown_has_headline_case_and_failure_rows() -> None:
    md = markdown(RECORDS, title="T")
    assert md.startswith("# T\n")
    assert "| greedy | 3 | 1 | 2.0000 | 4.0000 | 50.0 % | 0.0 % |" in md
    assert (
        "| b | GPU,CPU | op | tac | – | 10 | 5 | – | 1.0000 · 0.01 · 1/0 | 4.0000 · 0.01 · 1/0 |"
        in md
    )
    assert "PickerError: boom" in md
    assert case_table(RECORDS).count("\n") == 2 + 3


def test_write_report_on_a_real_study(tmp_path: Path) -> None:
    study = Study(zoos=("layered:10,30", "resnet:2"), device_sets=(("GPU", "CPU"),),
                  pickers=("exact", "tac", "greedy", "first-fit"))  # fmt: skip
    records = run_study(study, tmp_path / "r.jsonl", jobs=1)
    md = write_report(records, tmp_path / "rep", title="tiny")
    text = md.read_text()
    for picker in ("exact", "tac", "greedy", "first-fit"):
        assert f"\n| {picker} | 4 | 0 |" in text
    for model in ("layered_N10", "layered_N30", "resnet_B2"):
        assert f"| {model} |" in text
    for png in ("ratio_to_exact.png", "time_vs_units.png", "breakdown.png"):
        data = (tmp_path / "rep" / png).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000
        assert f"]({png})" in text
    assert report_file(tmp_path / "r.jsonl", plots=False).read_text().startswith("# tacopt")


def test_no_records_or_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="no records"):
        write_report([], tmp_path)
    with pytest.raises(BenchmarkError, match="does not exist"):
        report_file(tmp_path / "missing.jsonl")
