"""Plan pages in reports: ``tacopt bench report`` links a page per model it reports on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacopt.benchmarks.pages import plan_pages
from tacopt.partitioner.cli import main

MODEL = "keras__mobilenet_v2_int8"


def _rec(model: str, picker: str, ratio: float, **kw: object) -> dict:
    return {
        "key": f"{model}|{picker}|{kw.get('devices', 'GPU,NPU,CPU')}", "model": model,
        "zoo": "bundled", "kind": "tflite", "devices": "GPU,NPU,CPU", "granularity": "subgraph",
        "cost_model": "tac", "fusion": "fused", "units": 2, "picker": picker, "status": "OPTIMAL",
        "objective": ratio, "ratio_to_exact": ratio, "seconds": 0.01, "transfers": 0,
        "conversions": 0, "breakdown": {"compute": ratio, "transfer": 0.0, "quant": 0.0}, **kw,
    }  # fmt: skip


def test_one_page_per_model_for_the_case_where_pickers_differ_most() -> None:
    records = [
        _rec(MODEL, "exact", 1.0, devices="GPU,CPU"), _rec(MODEL, "tac", 1.0, devices="GPU,CPU"),
        _rec(MODEL, "exact", 1.0), _rec(MODEL, "tac", 1.2),
        _rec("nosuch", "exact", 1.0),
        _rec("layered_N10", "exact", 1.0, zoo="layered", kind="problem"),
    ]  # fmt: skip
    pages = {p.model: p for p in plan_pages(records)}
    assert sorted(pages) == ["keras__mobilenet_v2_int8", "layered_N10", "nosuch"]
    page = pages[MODEL]
    assert page.case.startswith("GPU,NPU,CPU") and page.html is not None
    data = json.loads(page.html.split('id="plan-data">', 1)[1].split("</script>", 1)[0])
    assert [p["picker"] for p in data["plans"]] == ["exact", "tac"]
    assert data["devices"] == ["GPU", "NPU", "CPU"]
    assert pages["nosuch"].html is None and "no model 'nosuch'" in pages["nosuch"].reason
    assert pages["layered_N10"].html is None and "pick problem" in pages["layered_N10"].reason


def test_bench_report_links_the_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "r.jsonl"
    records = [_rec(MODEL, "exact", 1.0), _rec(MODEL, "tac", 1.2)]
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["bench", "report", str(results), "-o", str(tmp_path / "a"), "--no-plots"]) == 0
    report = (tmp_path / "a" / "report.md").read_text()
    assert f"[{MODEL}](pages/{MODEL}.html)" in report
    assert (tmp_path / "a" / "pages" / f"{MODEL}.html").read_text().startswith("<!DOCTYPE html>")
    assert main(["bench", "report", str(results), "-o", str(tmp_path / "b"), "--no-plots",
                 "--no-pages"]) == 0  # fmt: skip
    assert "## Plan pages" not in (tmp_path / "b" / "report.md").read_text()
    assert not (tmp_path / "b" / "pages").exists()
