"""``tacopt bench --zoo iopddl:DIR``: every picker on the contest problems of a folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tacopt.partitioner.cli import main

EXAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "iopddl" / "example.json"

@pytest.fixture
def contest_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "contest"
    folder.mkdir()
    if not EXAMPLE.is_file():
        pytest.skip("needs ../shared/iopddl/example.json")
    shutil.copy(EXAMPLE, folder / "example.json")
    return folder


def test_bench_runs_the_pickers_on_contest_problems(contest_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run" / "results.jsonl"
    assert main(["bench", "--zoo", f"iopddl:{contest_dir}", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["picker"] for r in records] == ["exact", "greedy"]
    exact = records[0]
    assert (exact["status"], exact["objective"]) == ("OPTIMAL", 445)
    assert records[1]["objective"] >= 445
    assert "| example |" in (out.parent / "report.md").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["bundled"], "run on their own"),
        (["--pickers", "nosuch"], "unknown picker 'nosuch'"),
        (["--time-limit", "0"], "--time-limit: must be"),
    ],
)
def test_bad_contest_runs_are_one_line_and_write_nothing(
    contest_dir: Path, tmp_path: Path, capsys, extra: list[str], message: str
) -> None:
    out = tmp_path / "run" / "results.jsonl"
    zoo = ["--zoo", f"iopddl:{contest_dir}"]
    assert main(["bench", *zoo, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not out.exists()


def test_bench_primal_times_the_tacopt_command_of_its_environment(monkeypatch) -> None:
    from tacopt.benchmarks.scripts.picking import bench_primal
    from tacopt.errors import TacoptError

    command = Path(bench_primal.tacopt_command())
    assert command.name == "tacopt" and command.is_file()
    monkeypatch.setattr(bench_primal.sys, "executable", "/nonexistent/python")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(TacoptError, match="'tacopt' command is not installed"):
        bench_primal.tacopt_command()
