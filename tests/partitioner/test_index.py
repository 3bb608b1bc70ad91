"""The index of a pick problem: memory is counted on a timeline bounded by the problem's size."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.index import compress_steps


def _contest(intervals, limit=5) -> dict:
    return {"problem": {"name": "t", "nodes": {
        "intervals": intervals, "costs": [[5, 1], [2, 3]], "usages": [[1, 4], [2, 1]]},
        "edges": {"nodes": [[0, 1]], "costs": [[1, 2, 3, 4]]}, "usage_limit": limit}}  # fmt: skip


def test_steps_between_endpoints_become_one():
    spans, n = compress_steps(np.array([[0, 10**15], [0, 10**15]]), 2)
    assert spans.tolist() == [[0, 3], [0, 3]] and n == 3
    spans, n = compress_steps(np.array([[0, 1], [1, 2]]), 2)  # within the units' steps: kept
    assert spans.tolist() == [[0, 1], [1, 2]] and n == 2


@pytest.mark.parametrize("far", [10**15, 2**62, 2**63 - 1])
def test_far_intervals_plan_as_near_ones(far):
    from tacopt.partitioner.pickers import pick

    near = problem_from_dict(_contest([[0, 2], [0, 2]]))
    wide = problem_from_dict(_contest([[0, far], [far // 2, far]]))
    for picker in ("exact", "greedy", "first-fit", "brute"):
        a, b = pick(near, picker), pick(wide, picker)
        assert a.objective == b.objective and a.fits == b.fits, picker


def _small_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_far_interval_needs_no_big_timeline(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_contest([[0, 2**62], [2**61, 2**63 - 1]])))
    done = subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", "pick", str(path), "--compare",
         "exact,greedy,first-fit,brute"],
        capture_output=True, text=True, preexec_fn=_small_address_space, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("where", ["nodes", "edges"])
def test_a_cost_above_the_forbidden_cost_is_one_line(where, tmp_path, capsys):
    from tacopt.partitioner.cli import main

    data = _contest([[0, 2], [1, 3]])
    data["problem"][where]["costs"][0][0] = 2**63 - 1
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["pick", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{where}.costs[0][0]" in err and "overflow" in err
    data["problem"][where]["costs"][0][0] = 10**18  # the contest's forbidden cost is taken
    path.write_text(json.dumps(data))
    assert main(["pick", str(path)]) == 0


def test_a_failing_worker_is_one_error_not_a_traceback(monkeypatch, capfd):
    """A forked worker that raises sends its error to the parent, which raises it as one
    PickerError; the worker prints no traceback."""
    from tacopt.partitioner.errors import PickerError
    from tacopt.partitioner.pickers import primal

    def broken(*args):
        raise ValueError("broken on purpose")

    with pytest.raises(PickerError, match="worker process failed: ValueError: broken on purpose"):
        primal.bounded(broken, deadline=time.monotonic() + 10, fallback=None, args=())
    assert "Traceback" not in capfd.readouterr().err
