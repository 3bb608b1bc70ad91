"""Comparing two runs of a study (the check behind ``run_shared_zoo.sh``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tacopt.benchmarks.compare import main
from tacopt.benchmarks.harness import Study, run_study

ROOT = Path(__file__).resolve().parents[2]


def test_same_ratios_match_and_a_moved_ratio_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.jsonl"
    run_study(Study(zoos=("layered:10,20",), pickers=("exact", "greedy")), old, jobs=1)
    assert main([str(old), str(old)]) == 0
    out = capsys.readouterr().out
    assert "| greedy | 2 / 2 |" in out and "ratios match" in out
    assert "exact objective: 2 cases in both runs, 0 differ" in out
    moved = tmp_path / "new.jsonl"
    records = [json.loads(line) for line in old.read_text().splitlines()]
    for r in records:
        if r["picker"] == "greedy":
            r["ratio_to_exact"] *= 1.01
    moved.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main([str(old), str(moved)]) == 1
    assert "ratios differ beyond 0.0005 for: greedy" in capsys.readouterr().out


def test_the_headline_script_never_reuses_a_folder(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "run_shared_zoo.sh")],
        env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert f"{tmp_path} exists; give OUT=DIR a new folder" in result.stderr
    assert list(tmp_path.iterdir()) == []
