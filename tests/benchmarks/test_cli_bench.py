"""``tacopt bench`` and ``tacopt bench report``: options, outputs, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.benchmarks import cli
from tacopt.benchmarks.harness import DEFAULT_DEVICE_SETS, read_records
from tacopt.partitioner.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["bench", *argv])


def test_no_arguments_is_the_default_study() -> None:
    args = _args([])
    assert args.run is cli.run_bench and args.zoo is None and args.devices is None
    assert args.granularity == ("subgraph", "op")
    assert args.pickers == ("exact", "tac", "greedy", "first-fit")
    assert args.out == Path("tacopt-bench/results.jsonl")
    assert DEFAULT_DEVICE_SETS == (("GPU", "CPU"), ("NNAPI", "CPU"), ("GPU", "NNAPI", "CPU"))


def test_options_parse_into_lists() -> None:
    args = _args(["--zoo", "bundled", "layered:10", "--devices", "gpu,cpu", "NNAPI,CPU",
                  "--pickers", "exact,greedy", "--granularity", "op", "--jobs", "3"])  # fmt: skip
    assert args.zoo == ["bundled", "layered:10"]
    assert args.devices == [("GPU", "CPU"), ("NNAPI", "CPU")]
    assert (args.pickers, args.granularity, args.jobs) == (("exact", "greedy"), ("op",), 3)
    report = _args(["report", "r.jsonl", "-o", "out"])
    assert report.run is cli.run_report and report.results == Path("r.jsonl")


def test_bench_runs_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res" / "r.jsonl"
    code = main(["bench", "--zoo", "layered:10,20", "--pickers", "exact,greedy", "--jobs", "1",
                 "--no-progress", "--out", str(out)])  # fmt: skip
    assert code == 0
    stdout = capsys.readouterr().out
    assert "| exact | 2 | 0 | 1.0000 |" in stdout and "| greedy | 2 | 0 |" in stdout
    assert len(read_records(out)) == 4
    assert (tmp_path / "res" / "report.md").is_file()
    assert (tmp_path / "res" / "time_vs_units.png").is_file()
    code = main(["bench", "report", str(out), "-o", str(tmp_path / "rep"), "--no-plots"])
    assert code == 0
    assert "| greedy | 2 | 0 |" in (tmp_path / "rep" / "report.md").read_text()


def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--zoo", "nope", "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tacopt bench: error: unknown zoo 'nope'") and "\n" not in err
    assert main(["bench", "report", str(tmp_path / "missing.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_python_m_benchmarks_is_the_same_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--zoo", "layered:10", "--pickers", "greedy",
         "--jobs", "1", "--no-progress", "--no-report", "--out", str(tmp_path / "r.jsonl")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "| greedy | 1 | 0 |" in result.stdout
