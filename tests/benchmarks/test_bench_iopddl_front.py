"""The IOPDDL front benchmark (:mod:`tacopt.benchmarks.scripts.picking.bench_iopddl_front`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tacopt.benchmarks.scripts.picking import bench_iopddl_front as front
from tacopt.partitioner.problem.contest_like import memory_tight


def test_gap_of():
    assert front.gap_of(200.0, 150.0) == pytest.approx(0.25)
    assert front.gap_of(0.0, 0.0) == 0.0
    assert front.gap_of(None, 1.0) is None and front.gap_of(5.0, None) is None


def test_a_memory_tight_instance_runs_the_whole_command(tmp_path: Path, capsys):
    problem = tmp_path / "tight_60_4.json"
    problem.write_text(json.dumps(memory_tight(60, seed=4)))
    out = tmp_path / "out"
    assert front.main([str(problem), "--time-limit", "8", "--jobs", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "tight_60_4" in printed
    (record,) = [json.loads(line) for line in
                 gzip.decompress((out / "results.jsonl.gz").read_bytes()).splitlines()]  # fmt: skip
    assert record["valid"] and record["jobs"] == 1 and record["score"] is not None
    # the CPU the command got: more than reading the problem takes, within its wall time x cores
    assert 0.1 < record["cpu_s"] <= record["wall_s"] * record["cores"] + 1.0
    assert record["bound"] is None or record["bound"] <= record["score"]


def test_no_instance_is_one_line(tmp_path: Path, capsys):
    assert front.main([str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
