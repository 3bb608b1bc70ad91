"""Mutated pick problems through ``tacopt pick --compare``: a valid plan, or one line and exit 2.

Every run takes a new seed (printed when a case fails); ``TACOPT_FUZZ_PROBLEMS_SEED=N`` replays
one (``.ci/run`` sets a fixed one: CI is deterministic). Cases run in-process, through the CLI's
``main``, with ``--plan`` into ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import traceback
import warnings
from pathlib import Path

import pytest

from tacopt.benchmarks.fuzz.problems import (
    DOC_EXAMPLE,
    TREE_MUTATORS,
    mutated_problem,
    mutated_problems,
)
from tacopt.partitioner.cli import main
from tacopt.partitioner.plan import Plan, validate_plan
from tacopt.partitioner.problem import load_problem

DOC = Path(__file__).resolve().parents[2] / "docs" / "pick-problem.md"
SEED_VARIABLE = "TACOPT_FUZZ_PROBLEMS_SEED"
N_CASES = 500
PICKERS = "exact,tac,greedy,first-fit"


def run_case(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``tacopt pick`` on one file: its exit code, and what was wrong ("" when nothing was)."""
    problem_file, plan_file = tmp_path / "problem.json", tmp_path / "plan.json"
    problem_file.write_bytes(data)
    argv = ["pick", str(problem_file), "--compare", PICKERS, "--plan", str(plan_file)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's way out
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # the failure this test exists to catch
            return -1, "raised " + traceback.format_exc(limit=-3).replace("\n", " | ")
    err = capsys.readouterr().err
    if caught:
        return code, f"warned {caught[0].category.__name__}: {caught[0].message}"
    left = sorted(p.name for p in tmp_path.iterdir() if p not in (problem_file, plan_file))
    if left:
        return code, f"left files behind: {left}"
    if code == 2:
        if err.count("\n") != 1 or not err.endswith("\n"):
            return code, f"exit 2 with {err.count(chr(10))} stderr lines: {err[:300]!r}"
        if plan_file.exists():
            return code, "exit 2 but the plan file was written"
        return code, ""
    if code != 0:
        return code, f"exit {code}: {err[:300]!r}"
    if err:
        return code, f"exit 0 with stderr: {err[:300]!r}"
    problem = load_problem(problem_file)
    records = json.loads(plan_file.read_text())["plans"]
    if [r["picker"] for r in records] != PICKERS.split(","):
        return code, f"plans of {[r['picker'] for r in records]}"
    for record in records:
        validate_plan(problem, Plan.from_dict(record))
    plan_file.unlink()
    return code, ""


def test_the_doc_example_is_the_fuzz_base() -> None:
    example = DOC.read_text().split("```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(example) == json.loads(DOC_EXAMPLE)


def test_a_case_can_be_rebuilt_alone() -> None:
    assert list(mutated_problems(3, 5))[4] == mutated_problem(3, 4)


WRONG_VALUES = (None, True, 0, 1.5, "1", "", [], {}, [1, 2], {"a": 1}, [[[]]], [True])


@pytest.mark.parametrize("name, mutate", TREE_MUTATORS, ids=[n for n, _ in TREE_MUTATORS])
def test_every_mutator_takes_any_value_in_any_top_level_field(name, mutate) -> None:
    """A mutator runs after others, so it meets every field already of the wrong type."""
    for key in json.loads(DOC_EXAMPLE):
        for value in WRONG_VALUES:
            for seed in range(8):
                data = json.loads(DOC_EXAMPLE)
                data[key] = value
                mutate(random.Random(seed), data)  # raises if it assumes a type


def test_mutated_problems_get_a_valid_plan_or_one_line(tmp_path: Path, capsys) -> None:
    seed = int(os.environ.get(SEED_VARIABLE) or secrets.randbelow(2**31))
    failures, planned = [], 0
    for i in range(N_CASES):
        try:
            name, data = mutated_problem(seed, i)
        except Exception:  # a fuzzer bug: say which case, with the seed to replay it
            failures.append(f"{seed}:{i}: building it raised {traceback.format_exc(limit=-2)}")
            continue
        code, problem = run_case(tmp_path, data, capsys)
        planned += code == 0 and not problem
        if problem:
            failures.append(f"{name}: {problem}")
    assert not failures, (
        f"{len(failures)} of {N_CASES} cases failed; replay with {SEED_VARIABLE}={seed}:\n"
        + "\n".join(failures[:10])
    )
    # Both ways out are exercised: some mutations keep the problem valid.
    assert planned >= N_CASES // 20, f"only {planned} valid problems (seed {seed})"
