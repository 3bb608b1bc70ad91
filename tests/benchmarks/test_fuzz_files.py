"""The file fuzz campaign replayed on a fixed seed (CI): mutated learned-model files, mutated
records and hostile names through the commands that open them; every case is a plan, one line
and exit 2, with no traceback, hang, partial output or unsafe page, DOT or terminal text.

``TACOPT_FUZZ_FILES_SEED=N`` replays another seed; the long campaign is
``python -m tacopt.benchmarks fuzz --cases 0 --files N`` (benchmarks/fuzz/campaign.py).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from tacopt.benchmarks.fuzz.files import (
    KINDS,
    base_records,
    file_case,
    mutate_json,
    run_file_case,
)
from tacopt.benchmarks.fuzz.models import FAILURES

SEED = int(os.environ.get("TACOPT_FUZZ_FILES_SEED", "20261129"))
N_CASES = {"learned": 60, "records": 80, "names": 40}


@pytest.mark.parametrize("kind", KINDS)
def test_file_cases_of_a_fixed_seed(kind, tmp_path):
    if kind == "records" and not base_records():
        pytest.skip("no records file in benchmarks/results to mutate")
    counts: Counter[str] = Counter()
    failures = []
    for index in range(N_CASES[kind]):
        for o in run_file_case(file_case(kind, SEED, index), tmp_path):
            counts[o.outcome] += 1
            if o.outcome in FAILURES:
                failures.append(f"seed {SEED} {kind} case {index} {o.command}: {o.outcome}: "
                                f"{o.detail} [{o.mutation}]")  # fmt: skip
    assert failures == []
    # The mutations reach both sides: some files are refused, and (but for names) some pass.
    assert counts["ok"] > 0
    if kind != "names":
        assert counts["refused"] > 0


def test_cases_are_a_pure_function_of_kind_seed_and_index():
    for kind in KINDS:
        if kind == "records" and not base_records():
            continue
        a, b = file_case(kind, 3, 17), file_case(kind, 3, 17)
        assert a.files == b.files and a.argvs == b.argvs and a.mutation == b.mutation


def test_mutate_json_edits_a_copy_and_says_what():
    import random

    doc = {"a": [1, 2, {"b": "x"}], "c": {"left": [1, 2, -1], "feature": [0, -1, -1]}}
    note = mutate_json(doc, random.Random(5))
    assert isinstance(note, str) and note


def test_a_hang_is_caught_by_the_case_timer(tmp_path, monkeypatch):
    import time

    from tacopt.benchmarks.fuzz import files

    def slow(argv, out, **kwargs):
        time.sleep(5)
        return "ok", ""

    monkeypatch.setattr(files, "run_argv", slow)
    case = file_case("names", SEED, 0)
    outcomes = run_file_case(case, Path(tmp_path), timeout_s=0.5)
    assert [o.outcome for o in outcomes] == ["hang"]
