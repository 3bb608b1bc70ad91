"""``tacopt pick`` end to end: plans, comparisons, written plans and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.benchmarks.synthetic import layered_dag_problem
from tacopt.partitioner.cli import main
from tacopt.partitioner.problem import save_problem


@pytest.fixture
def problem_file(tmp_path: Path) -> Path:
    return save_problem(layered_dag_problem(30, seed=0), tmp_path / "problem.json")


def test_json_output_has_the_documented_fields(problem_file: Path, capsys) -> None:
    assert main(["pick", str(problem_file), "--picker", "exact", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ("objective", "picker", "status", "bound", "assignment", "breakdown", "seconds"):
        assert key in record
    assert record["status"] == "OPTIMAL"
    assert set(record["assignment"]["func_0"]) >= {"device", "type"}
    assert set(record["breakdown"]) == {"compute", "transfer", "quant"}


def test_compare_prints_a_table(problem_file: Path, capsys) -> None:
    assert main(["pick", str(problem_file), "--compare", "exact,tac,greedy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["picker", "status", "objective"]
    assert [line.split()[0] for line in lines[1:]] == ["exact", "tac", "greedy"]


def test_plan_is_written(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.json"
    argv = ["pick", str(problem_file), "--picker", "greedy", "--plan", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())["picker"] == "greedy"
    assert "func_0" in capsys.readouterr().out


def test_options_reach_the_exact_picker(problem_file: Path, capsys) -> None:
    argv = ["pick", str(problem_file), "--backend", "scip", "--time-limit", "5", "--json"]
    assert main(argv) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    assert params["backend"] == "scip" and params["time_limit_s"] == 5.0


def test_the_method_reaches_the_exact_picker(problem_file: Path, capsys) -> None:
    assert main(["pick", str(problem_file), "--method", "monolithic", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["method"] == "monolithic"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--picker", "nope"], "unknown picker 'nope'"),
        (["--picker", "exact", "--backend", "gurobi"], "unknown backend 'gurobi'"),
        (["--picker", "exact", "--method", "magic"], "unknown method 'magic'"),
        (["--picker", "mincut"], "mincut picker needs"),
    ],
)
def test_misuse_exits_2_with_one_line(problem_file: Path, capsys, argv, message) -> None:
    assert main(["pick", str(problem_file), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_broken_file_exits_2_through_the_installed_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"units": [')
    result = subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", "pick", str(bad)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"tacopt pick: error: {bad}: not valid JSON: Expecting value: line 1 column 12 (char 11)"
    ]
