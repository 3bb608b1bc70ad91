"""The figures the README shows are the committed results', and the results stay small.

The README's headline table is recomputed from ``benchmarks/results/shared/results.jsonl.gz``
(which ``bash benchmarks/run_shared_zoo.sh --jobs 2`` regenerates); every figure link of the
README and the docs lands on an entry of ``docs/figures.md``, which the figures command wrote
from the studies' ``figures.json`` files and which is current.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tacopt.benchmarks.figures import RESULTS, read_studies, written_files
from tacopt.benchmarks.harness import read_records
from tacopt.benchmarks.tables import picker_summary

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
FIGURES = ROOT / "docs" / "figures.md"


def headline_rows() -> dict[str, tuple[str, str, str]]:
    """picker -> (geomean, worst, worse than exact) as the README's headline table prints them."""
    section = README.split("**Exact against greedy**", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        picker = re.match(r"\[([\w-]+)\]", cells[0])
        assert picker, f"headline row without a linked picker: {line}"
        rows[picker.group(1)] = (cells[1], cells[2], cells[3])
    return rows


def test_the_readme_headline_is_the_committed_shared_zoo_results() -> None:
    records = read_records(RESULTS / "shared" / "results.jsonl.gz")
    assert len(records) == 2304
    want = {}
    for s in picker_summary(records):
        assert s.geomean_ratio is not None and s.worst_ratio is not None
        worse = "—" if s.picker == "exact" else f"{100 * (s.share_worse or 0):.1f} %"
        want[s.picker] = (f"{s.geomean_ratio:.4f}", f"{s.worst_ratio:.2f}", worse)
    assert headline_rows() == want
    proven = sum(r["status"] == "OPTIMAL" for r in records
                 if r["picker"] == "exact" and r["fusion"] == "fused")  # fmt: skip
    assert f"proven optimal in {proven} / 288" in README


def test_the_figures_page_and_the_study_readmes_are_current() -> None:
    stale = [str(p.relative_to(ROOT)) for p, text in written_files().items()
             if not p.is_file() or p.read_text() != text]  # fmt: skip
    assert not stale, f"run python -m tacopt.benchmarks figures: {stale}"


@pytest.mark.parametrize(
    "page", ["README.md", *(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
)
def test_every_figure_link_lands_on_an_entry(page: str) -> None:
    anchors = set(re.findall(r'<a id="([\w-]+)"></a>', FIGURES.read_text()))
    links = re.findall(r"figures\.md#([\w-]+)", (ROOT / page).read_text())
    missing = sorted(set(links) - anchors)
    assert not missing, f"{page} links to no entry of docs/figures.md: {missing}"


def test_every_readme_figure_links_to_its_entry() -> None:
    headline = README.split("## Headline figures", 1)[1].split("\n## ", 1)[0]
    numbers = re.findall(r"\[[^\]]*\d[^\]]*\]\(docs/figures\.md#[\w-]+\)", headline)
    assert len(numbers) >= 6
    for row in headline.splitlines():
        if re.match(r"\| *\[", row):
            assert "docs/figures.md#" in row, row


def test_the_results_stay_small_and_hold_only_what_a_study_lists() -> None:
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 15 * 2**20
    studies = read_studies()
    listed = {RESULTS / s.folder / name for s in studies for name in s.data["records"]}
    listed |= {RESULTS / s.folder / n for s in studies for n in ("README.md", "figures.json")}
    described = {RESULTS / s.folder for s in studies}
    unlisted = sorted(str(p.relative_to(RESULTS)) for p in files
                      if p.parent in described and p not in listed)  # fmt: skip
    assert not unlisted, f"files no study lists (records go gzipped, logs go): {unlisted}"
    raw = sorted(str(p.relative_to(RESULTS)) for p in files if p.suffix in (".jsonl", ".log"))
    assert not raw, f"records go gzipped (.jsonl.gz), run logs do not go in: {raw}"
    assert not list(ROOT.glob("*.out"))


def test_the_readme_stays_short() -> None:
    assert len(README.encode()) <= 12 * 1024
