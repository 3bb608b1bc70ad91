"""IOPDDL contest problems read into the pick problem: reading, ``evaluate`` against the
contest's evaluator, every picker on them and ``tacopt pick``.

The big contest instances are never run here (benchmarks/scripts/picking/bench_iopddl.py does); the
contest's own example and tiny random problems are.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tacopt.benchmarks.scripts.picking.bench_iopddl import run_iopddl_bench
from tacopt.partitioner.cli import main
from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.memory import fits_batch
from tacopt.partitioner.pickers import pick
from tacopt.partitioner.plan import NoPlanError, evaluate, infeasibility, validate_plan
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import (
    IopddlError,
    load_iopddl,
    problem_from_dict,
    read_solution,
    solution_assignment,
    solution_indices,
)


def contest_cost(problem, solution: list[int]) -> tuple[int, bool]:
    """``evaluate``'s exact cost of a contest solution, and whether it fits the limit."""
    assignment = solution_assignment(problem, solution)
    index = index_problem(problem)
    chosen = index.choice_start[:-1] + np.array(solution, dtype=np.int64)
    return evaluate(problem, assignment).total, bool(fits_batch(index, chosen)[0])


def solve(problem, picker: str, **options):
    """``pick`` and the plan checked; the status when the picker says no plan fits. A plan that
    breaks the rules (a forbidden cost) comes back INFEASIBLE, with the checker's reason."""
    try:
        plan = pick(problem, picker, **options)
    except NoPlanError as exc:
        return exc.status
    validate_plan(problem, plan)  # an INFEASIBLE plan's reason is the checker's
    assert (plan.status == "INFEASIBLE") == (infeasibility(problem, plan) is not None)
    return plan

#: The contest's example (google/iopddl example.json): optimum 445 with [0, 0, 2, 1, 0].
EXAMPLE = {"problem": {
    "name": "example",
    "nodes": {"intervals": [[30, 70], [40, 70], [50, 120], [110, 140], [110, 150]],
              "costs": [[15], [55, 65], [25, 45, 35], [85, 75], [95]],
              "usages": [[10], [25, 25], [15, 20, 15], [10, 10], [15]]},
    "edges": {"nodes": [[0, 1], [0, 2], [1, 3], [2, 4], [3, 4]],
              "costs": [[30, 40], [50, 10, 40], [90, 10, 20, 80], [60, 20, 30], [70, 60]]},
    "usage_limit": 50}}  # fmt: skip


def contest_evaluate(data: dict, solution: list[int]) -> int | None:
    """The contest's evaluator transcribed literally: a usage total per time step, the edge
    entry at ``s_u * |S_v| + s_v``; None when a step exceeds the limit."""
    p = data["problem"]
    nodes, edges = p["nodes"], p["edges"]
    total_usage = [0] * max([end for _, end in nodes["intervals"]], default=0)
    cost = 0
    for i, (start, end) in enumerate(nodes["intervals"]):
        cost += nodes["costs"][i][solution[i]]
        for t in range(start, end):
            total_usage[t] += nodes["usages"][i][solution[i]]
    for (u, v), matrix in zip(edges["nodes"], edges["costs"]):
        cost += matrix[solution[u] * len(nodes["costs"][v]) + solution[v]]
    if "usage_limit" in p and any(t > p["usage_limit"] for t in total_usage):
        return None
    return cost


@st.composite
def tiny_problems(draw: st.DrawFn) -> dict:
    """Up to 5 nodes of up to 3 strategies; edges may repeat, loop, forbid pairs (10^18) or be
    permutations (so the reductions all fire)."""
    n = draw(st.integers(1, 5))
    k = [draw(st.integers(1, 3)) for _ in range(n)]
    cost = st.integers(0, 30) | st.just(10**18)
    intervals = []
    for _ in range(n):
        a = draw(st.integers(0, 6))
        intervals.append([a, draw(st.integers(a, 8))])  # end == start: holds nothing
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
    mats = []
    for u, v in pairs:
        if k[u] == k[v] and u != v and draw(st.booleans()):  # a permutation edge
            perm = draw(st.permutations(range(k[u])))
            w = draw(st.integers(0, 9))
            mats.append([w if perm[a] == b else 10**18 for a in range(k[u]) for b in range(k[v])])
        else:
            mats.append(draw(st.lists(cost, min_size=k[u] * k[v], max_size=k[u] * k[v])))
    problem = {
        "name": "tiny",
        "nodes": {"intervals": intervals,
                  "costs": [draw(st.lists(cost, min_size=s, max_size=s)) for s in k],
                  "usages": [draw(st.lists(st.integers(0, 6), min_size=s, max_size=s))
                             for s in k]},
        "edges": {"nodes": [list(p) for p in pairs], "costs": mats},
    }  # fmt: skip
    if draw(st.booleans()):
        problem["usage_limit"] = draw(st.integers(0, 15))
    return {"problem": problem}


def test_the_contest_example_is_solved_to_445() -> None:
    problem = problem_from_dict(EXAMPLE)
    for picker in ("exact", "brute"):
        plan = solve(problem, picker, **({"time_limit_s": 20} if picker == "exact" else {}))
        assert (plan.status, plan.objective) == ("OPTIMAL", 445)
        assert solution_indices(problem, plan.assignment) == [0, 0, 2, 1, 0]
    assert contest_cost(problem, [0, 0, 2, 1, 0]) == (445, True)
    assert not contest_cost(problem, [0, 1, 1, 0, 0])[1]  # 10 + 25 + 20 = 55 > 50 at step 50


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tiny_problems(), seed=st.integers(0, 2**32 - 1))
def test_evaluate_agrees_with_the_contest_evaluator(data: dict, seed: int) -> None:
    problem = problem_from_dict(data)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x = [int(rng.integers(len(u.choices))) for u in problem.units]
        expected = contest_evaluate(data, x)
        cost, fits = contest_cost(problem, x)
        assert fits == (expected is not None)
        assert type(cost) is int  # summed exactly, as the contest does
        if expected is not None:
            assert cost == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tiny_problems())
@example(data={"problem": {  # only solutions at 10^18 or more; the cheapest is not the obvious
    "nodes": {"intervals": [[0, 0], [0, 0]], "costs": [[1, 10**18, 10**18], [0]],
              "usages": [[0, 0, 0], [0]]},
    "edges": {"nodes": [[0, 1]], "costs": [[10**18, 0, 10**18]]}}})  # fmt: skip
def test_exact_equals_brute_on_tiny_problems(data: dict) -> None:
    problem = problem_from_dict(data)
    brute = solve(problem, "brute")
    exact = solve(problem, "exact", time_limit_s=20)
    if brute == "INFEASIBLE":
        assert exact == "INFEASIBLE"
        return
    solution = solution_indices(problem, exact.assignment)
    assert exact.objective == contest_evaluate(data, solution) >= brute.objective
    if brute.objective < 10**18:
        assert exact.status == "OPTIMAL" and exact.objective == brute.objective
    else:  # every plan holds a forbidden entry (10^18, the contest's infinity): exact finds one
        # with the fewest, and the one checker marks it, as every picker's, INFEASIBLE
        assert exact.status == brute.status == "INFEASIBLE" and "forbidden" in exact.reason
    for other in ("greedy", "first-fit", "tac"):  # may find none; INFEASIBLE if it breaks
        plan = solve(problem, other)
        if not isinstance(plan, str):
            assert contest_evaluate(data, solution_indices(problem, plan.assignment)) \
                == plan.objective  # fmt: skip
            # exact is never beaten by a plan that keeps the rules (among plans that all break
            # them, the cheapest need not be exact's)
            assert plan.status == "INFEASIBLE" or plan.objective >= exact.objective


def test_brute_refuses_a_big_problem() -> None:
    nodes = {"intervals": [[0, 1]] * 20, "costs": [[1, 2, 3]] * 20, "usages": [[1, 1, 1]] * 20}
    data = {"problem": {"nodes": nodes, "edges": {"nodes": [], "costs": []}}}
    with pytest.raises(PickerError, match="at most 12 units"):
        pick(problem_from_dict(data), "brute")


def test_gzip_files_load_and_solutions_round_trip(tmp_path: Path, capsys) -> None:
    gz = tmp_path / "example.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(EXAMPLE).encode()))
    out = tmp_path / "solution.json"
    assert main(["pick", str(gz), "--solution", str(out), "--time-limit", "20", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["status"], record["objective"], record["bound"]) == ("OPTIMAL", 445, 445)
    assert record["gap"] == 0
    assert json.loads(out.read_text()) == [0, 0, 2, 1, 0]
    assert read_solution(out, load_iopddl(gz)).tolist() == [0, 0, 2, 1, 0]


def test_compare_prints_every_picker(tmp_path: Path, capsys) -> None:
    f = tmp_path / "example.json"
    f.write_text(json.dumps(EXAMPLE))
    assert main(["pick", str(f), "--compare", "exact,greedy,brute", "--time-limit", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["exact", "greedy", "brute"]
    assert lines[1].split()[1:3] == ["OPTIMAL", "445"]


def _broken(data: dict, path: str, value: object) -> dict:
    data = json.loads(json.dumps(data))
    *keys, last = path.split(".")
    target = data
    for key in keys:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return data


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"problem": {"nodes": {"intervals": [[0, 1]], "costs": [[1]], "usages": [[1]]}, '
         '"edges": {"nodes": [], "costs": [', "not valid JSON"),
        (_broken(EXAMPLE, "problem.nodes.costs", KeyError), "problem.nodes: missing field 'costs'"),
        (_broken(EXAMPLE, "problem.edges.costs.2", [1, 2, 3]),
         "problem.edges.costs[2]: 3 entries, not |S_u| * |S_v|"),
        (_broken(EXAMPLE, "problem.nodes.costs.1", [55, -1]),
         "problem.nodes.costs[1][1]: -1 is not an integer"),
        (_broken(EXAMPLE, "problem.nodes.usages.2", [15, "x", 15]),
         "problem.nodes.usages[2][1]: 'x' is not an integer"),
        (_broken(EXAMPLE, "problem.edges.nodes.0", [0, 9]), "problem.edges.nodes[0]: a node index"),
        (_broken(EXAMPLE, "problem.nodes.usages.1", [25]), "problem.nodes.usages[1]: 1 strategies"),
        (_broken(EXAMPLE, "problem.usage_limit", 1.5), "problem.usage_limit: 1.5 is not"),
    ],
)  # fmt: skip
def test_bad_files_fail_with_one_line(tmp_path: Path, capsys, text, message) -> None:
    f = tmp_path / "bad.json"
    f.write_text(text if isinstance(text, str) else json.dumps(text))
    out = tmp_path / "solution.json"
    assert main(["pick", str(f), "--solution", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and str(f) in err[0], err
    assert not out.exists()


def test_nan_is_refused(tmp_path: Path, capsys) -> None:
    f = tmp_path / "nan.json"
    f.write_text(json.dumps(EXAMPLE).replace("[15, 20, 15]", "[15, NaN, 15]"))
    assert main(["pick", str(f)]) == 2
    assert "usages[2][1]: nan is not an integer" in capsys.readouterr().err


def test_out_of_scope_pickers_say_why(tmp_path: Path, capsys) -> None:
    f = tmp_path / "example.json"
    f.write_text(json.dumps(EXAMPLE))
    assert main(["pick", str(f), "--picker", "mincut"]) == 2
    assert "mincut picker does not handle capacities" in capsys.readouterr().err


def test_infeasible_problems_say_why_and_write_nothing(tmp_path: Path, capsys) -> None:
    f = tmp_path / "tight.json"
    f.write_text(json.dumps(_broken(EXAMPLE, "problem.usage_limit", 30)))
    out = tmp_path / "solution.json"
    assert main(["pick", str(f), "--solution", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no plan fits the capacities" in err and "limit 30" in err
    assert not out.exists()
    assert main(["pick", str(f), "--compare", "exact,brute", "--solution", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out.count("INFEASIBLE") == 2 and "nothing written" in captured.err
    assert not out.exists()


def test_a_solution_file_is_checked(tmp_path: Path) -> None:
    problem = problem_from_dict(EXAMPLE)
    f = tmp_path / "s.json"
    f.write_text("[0, 0, 3, 1, 0]")
    with pytest.raises(IopddlError, match=r"solution\[2\]: strategy 3 out of range"):
        read_solution(f, problem)
    f.write_text("[0, 0]")
    with pytest.raises(IopddlError, match="2 strategy indices for 5 nodes"):
        read_solution(f, problem)


def test_the_benchmark_writes_its_report(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "instances"
    folder.mkdir()
    (folder / "example.json").write_text(json.dumps(EXAMPLE))
    (folder / "README.md").write_text("not a problem")
    records = run_iopddl_bench(folder, ("exact", "greedy"), 20, tmp_path / "out")
    assert [(r["picker"], r["objective"]) for r in records][0] == ("exact", 445)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["picker"] for line in lines] == ["exact", "greedy"]
    assert "| example |" in (tmp_path / "out" / "report.md").read_text()


def test_every_pickers_plan_is_checked_the_same_way(tmp_path: Path, capsys) -> None:
    """A plan with a forbidden pair (10^18) is INFEASIBLE in its row, with why, whichever picker
    made it; ``--solution`` takes the cheapest plan that keeps the rules and says it wrote it.

    Node costs make (0, 0) the cheapest choice of each node on its own; the edge forbids it.
    """
    data = {"problem": {"name": "tiny", "nodes": {
        "intervals": [[0, 2], [1, 3]], "costs": [[0, 5], [0, 5]], "usages": [[1, 1], [1, 1]]},
        "edges": {"nodes": [[0, 1]], "costs": [[10**18, 0, 0, 10**18]]}, "usage_limit": 5}}
    path, out = tmp_path / "tiny.json", tmp_path / "tiny.solution.json"
    path.write_text(json.dumps(data))
    argv = ["pick", str(path), "--compare", "exact,first-fit", "--solution", str(out), "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    rows = {r["picker"]: r for r in json.loads(captured.out)["plans"]}
    assert rows["exact"]["status"] == "OPTIMAL" and rows["exact"]["objective"] == 5
    assert rows["first-fit"]["status"] == "INFEASIBLE"
    assert rows["first-fit"]["reason"] == "a forbidden pair (cost >= 1e+18): units '0' and '1'"
    assert json.loads(out.read_text()) in ([0, 1], [1, 0])
    wrote = f"tacopt pick: wrote exact's solution (2 strategy indices) to {out}"
    assert captured.err.strip() == wrote
    assert main(argv[:-3]) == 0  # the table: the row's status, and why under it
    table = capsys.readouterr().out
    assert "first-fit: INFEASIBLE: a forbidden pair" in table
