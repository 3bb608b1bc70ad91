"""The IOPDDL sweep: instances x seeds x limits on Dask, one CSV in the organisers' format."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.benchmarks.scripts.picking.sweep_iopddl import best_known, main, results_csv
from tests.partitioner.test_iopddl import EXAMPLE

pytest.importorskip("dask.distributed")  # the [test] and [dask] extras

#: A two-node problem whose cheapest choices on their own meet at a forbidden pair (optimum 5);
#: EXAMPLE is the contest's example (optimum 445 with [0, 0, 2, 1, 0]).
TINY = {"problem": {"name": "tiny", "nodes": {
    "intervals": [[0, 2], [1, 3]], "costs": [[0, 5], [0, 5]], "usages": [[1, 1], [1, 1]]},
    "edges": {"nodes": [[0, 1]], "costs": [[10**18, 0, 0, 10**18]]}, "usage_limit": 5}}
README = """# instances
| instance | contest best | best known now | how |
|---|---|---|---|
| example | 450 | 445 (optimal) | - |
| tiny | 5 | 5 | - |
"""


def test_a_tiny_sweep_on_dask_writes_the_organisers_csv(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "instances"
    folder.mkdir()
    (folder / "example.json").write_text(json.dumps(EXAMPLE))
    (folder / "tiny.json.gz").write_bytes(gzip.compress(json.dumps(TINY).encode()))
    (folder / "README.md").write_text(README)
    out = tmp_path / "sweep"
    argv = [str(folder), "--seeds", "0,1", "--time-limits", "5,3", "--out", str(out)]
    assert main(argv) == 0
    runs = [json.loads(line) for line in gzip.decompress((out / "runs.jsonl.gz").read_bytes())
            .decode().splitlines()]  # fmt: skip
    assert len(runs) == 2 * 2 * 2  # instances x limits x seeds
    assert all(r["valid"] and r["exit"] == 0 and r["wall_s"] <= r["time_limit_s"] for r in runs)
    assert {(r["instance"], r["score"]) for r in runs} == {("example", 445), ("tiny", 5)}
    table = list(csv.reader(io.StringIO((out / "results.csv").read_text())))
    assert table[0] == ["TEAM #", "example", "tiny"]
    assert [row[0] for row in table[1:]] == [
        "tacopt-exact-5-seed0", "tacopt-exact-5-seed1", "tacopt-exact-5-best",
        "tacopt-exact-3-seed0", "tacopt-exact-3-seed1", "tacopt-exact-3-best"]
    assert all(row[1:] == ["445", "5"] for row in table[1:])
    report = (out / "report.md").read_text()
    assert "| tacopt-exact-5-best | 1.00000 | 1.00000 | 1.00000 |" in report
    assert "within its limit: 8 / 8 runs" in report
    assert capsys.readouterr().out == report


def test_an_invalid_run_leaves_its_cell_empty() -> None:
    base = {"picker": "exact", "limit": "contest", "seed": 0}
    records = [{**base, "instance": "A", "valid": True, "score": 7},
               {**base, "instance": "B", "valid": False, "score": 10**18}]
    assert results_csv(records).splitlines()[1] == "tacopt-exact-contest-seed0,7,"


def test_best_known_reads_the_readme_table(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README)
    assert best_known(tmp_path / "README.md") == {"example": 445, "tiny": 5}
    assert best_known(tmp_path / "none.md") == {}


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep_iopddl: error: ") and "no such file" in err
    (tmp_path / "tiny.json").write_text(json.dumps(TINY))
    assert main([str(tmp_path), "--time-limits", "-1", "--out", str(tmp_path / "o")]) == 2
    assert "must be positive" in capsys.readouterr().err



def test_the_sweep_runs_as_a_benchmark_script(tmp_path: Path) -> None:
    """Run by ``python -m tacopt.benchmarks`` the module is ``__main__``: the workers must still
    get a function they can import."""
    (tmp_path / "tiny.json").write_text(json.dumps(TINY))
    out = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "tacopt.benchmarks", "sweep_iopddl", str(tmp_path / "tiny.json"),
         "--time-limits", "5", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "results.csv").read_text() == (
        "TEAM #,tiny\ntacopt-exact-5-seed0,5\ntacopt-exact-5-best,5\n")
