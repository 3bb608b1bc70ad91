"""bench_race: one record per instance and arm, the constant put back after each run."""

from __future__ import annotations

import gzip
import json

from tacopt.benchmarks.scripts.picking import bench_race
from tacopt.partitioner.pickers import pairwise
from tacopt.partitioner.problem.contest_like import memory_tight


def test_each_arm_gives_a_record_and_the_constant_is_put_back(tmp_path, capsys):
    path = tmp_path / "tight_30_1.json.gz"
    path.write_bytes(gzip.compress(json.dumps(memory_tight(30, seed=1)).encode()))
    kept = pairwise.RACE_ENTRIES
    assert bench_race.main([str(path), "--time-limit", "8", "--out", str(tmp_path / "out")]) == 0
    assert pairwise.RACE_ENTRIES == kept
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    saved = [json.loads(x) for x in gzip.open(tmp_path / "out" / "results.jsonl.gz")]
    assert [r["arm"] for r in saved] == ["race", "large"] and saved == lines
    assert all(r["status"] in ("OPTIMAL", "FEASIBLE") and r["objective"] >= r["bound"]
               for r in saved)  # fmt: skip
