"""``bench_tight --write DIR``: the memory-tight sets as contest files the whole command reads."""

from __future__ import annotations

import gzip
import json

from tacopt.benchmarks.scripts.picking import bench_tight
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import TIGHT_SMALL, memory_tight


def test_write_puts_each_instance_of_the_set_in_a_contest_file(tmp_path, capsys):
    assert bench_tight.main(["--set", "small", "--max-nodes", "100", "--write",
                             str(tmp_path)]) == 0  # fmt: skip
    wanted = [spec for spec in TIGHT_SMALL if spec[0] <= 100]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"tight_{n}_{seed}.json.gz" for n, seed, _, _ in wanted)
    n, seed, share, mean_k = wanted[0]
    data = json.loads(gzip.decompress((tmp_path / f"tight_{n}_{seed}.json.gz").read_bytes()))
    assert data == memory_tight(n, seed, min_peak_share=share, mean_strategies=mean_k)
    assert len(problem_from_dict(data).units) == n
    assert len(capsys.readouterr().out.splitlines()) == len(wanted)
