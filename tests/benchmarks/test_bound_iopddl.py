"""The bounds-only study script (:mod:`tacopt.benchmarks.scripts.picking.bound_iopddl`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tacopt.benchmarks.scripts.picking.bound_iopddl import bound_lines, main
from tacopt.partitioner.pickers import pick
from tacopt.partitioner.problem.contest import load_iopddl
from tacopt.partitioner.problem.contest_like import contest_like


def test_the_bound_is_below_an_optimum(tmp_path: Path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(contest_like(40, seed=1, tightness=0.3)))
    plan = pick(load_iopddl(path), "exact", time_limit_s=30.0)
    assert plan.status == "OPTIMAL"
    lines = bound_lines(path, [1.0], int(plan.objective))
    found = [float(m.group(1).replace(",", "")) for line in lines
             if (m := re.search(r"lagrangian ([\d,]+)", line))]  # fmt: skip
    assert len(found) == 1 and found[0] <= plan.objective + 1e-6


def test_a_missing_file_is_one_line(tmp_path: Path, capsys):
    assert main([str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
