"""``tacopt pick`` end to end: plans, comparisons, written plans and one-line errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.partitioner.cli import main
from tacopt.partitioner.problem import save_problem
from tacopt.partitioner.problem.synthetic import layered_dag_problem
from tests.partitioner.test_cli_partition import interrupt_once_started


@pytest.fixture
def problem_file(tmp_path: Path) -> Path:
    return save_problem(layered_dag_problem(30, seed=0), tmp_path / "problem.json")


def test_json_output_has_the_documented_fields(problem_file: Path, capsys) -> None:
    assert main(["pick", str(problem_file), "--picker", "exact", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ("objective", "picker", "status", "bound", "assignment", "breakdown", "seconds"):
        assert key in record
    assert record["status"] == "OPTIMAL"
    assert set(record["assignment"]["func_0"]) >= {"device", "type"}
    assert set(record["breakdown"]) == {"compute", "transfer", "quant", "pairwise"}


def test_compare_prints_a_table(problem_file: Path, capsys) -> None:
    assert main(["pick", str(problem_file), "--compare", "exact,tac,greedy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["picker", "status", "objective"]
    assert [line.split()[0] for line in lines[1:-1]] == ["exact", "tac", "greedy"]
    assert lines[-1] == "costs in the problem's own units"


def test_plan_is_written(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.json"
    argv = ["pick", str(problem_file), "--picker", "greedy", "--plan", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())["picker"] == "greedy"
    printed = capsys.readouterr().out
    assert "func_0" not in printed  # the units only with --units
    assert printed.splitlines()[-1] == f"tacopt pick: wrote the plan to {out}"
    assert main([*argv, "--units"]) == 0
    assert "func_0" in capsys.readouterr().out


def test_options_reach_the_exact_picker(problem_file: Path, capsys) -> None:
    argv = ["pick", str(problem_file), "--backend", "scip", "--time-limit", "5", "--json"]
    assert main(argv) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    # the limit counts from the process's start: at most 3 s of startup come off it
    assert params["backend"] == "scip" and 1.5 <= params["time_limit_s"] <= 5.0


def test_the_method_reaches_the_exact_picker(problem_file: Path, capsys) -> None:
    assert main(["pick", str(problem_file), "--method", "monolithic", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["method"] == "monolithic"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--picker", "nope"], "unknown picker 'nope'"),
        (["--picker", "exact", "--backend", "gurobi"], "unknown backend 'gurobi'"),
        (["--picker", "exact", "--method", "magic"], "unknown method 'magic'"),
        (["--picker", "mincut"], "mincut picker needs"),
    ],
)
def test_misuse_exits_2_with_one_line(problem_file: Path, capsys, argv, message) -> None:
    assert main(["pick", str(problem_file), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_broken_file_exits_2_through_the_installed_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"units": [')
    result = subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", "pick", str(bad)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"tacopt pick: error: {bad}: not valid JSON: Expecting value: line 1 column 12 (char 11)"
    ]


# --------------------------------------------------------------------------------------------
# options checked before any work; outputs all or nothing; custom pickers; Ctrl-C
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--compare", ""], "--compare: empty list"),
        (["--compare", "exact,exact"], "--compare: 'exact' is listed twice in 'exact,exact'"),
        (["--compare", "exact,,tac"], "--compare: empty name in 'exact,,tac'"),
        (["--compare", "exact,bogus"], "unknown picker 'bogus'"),
        (["--compare", "tac,greedy", "--time-limit", "5"], "--time-limit: none of the pickers"),
        (["--time-limit", "-1"], "--time-limit: must be positive and finite (seconds), got -1"),
        (["--time-limit", "0"], "--time-limit: must be positive"),
        (["--time-limit", "inf"], "--time-limit: must be positive"),
        (["--time-limit", "nan"], "--time-limit: must be positive"),
        (["--picker", "tac", "--time-limit", "5"], "picker 'tac' takes no option 'time_limit_s'"),
        (["--load", "no_such.py"], "--load no_such.py: no such file"),
    ],
)
def test_bad_options_write_nothing(problem_file: Path, tmp_path: Path, capsys, argv, message):
    out = tmp_path / "out"
    out.mkdir()
    assert main(["pick", str(problem_file), *argv, "--plan", str(out / "plan.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    "plan, message",
    [("nodir/plan.json", "--plan: folder '{tmp}/nodir' does not exist"),
     (".", "--plan: '{tmp}' is a folder, not a file")],
)  # fmt: skip
def test_a_bad_plan_path_is_refused_before_solving(
    problem_file: Path, tmp_path: Path, capsys, plan, message
) -> None:
    target = str(tmp_path) if plan == "." else str(tmp_path / plan)
    assert main(["pick", str(problem_file), "--plan", target]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(tmp=tmp_path) in err


def test_a_picker_out_of_scope_is_a_row_that_says_why_as_in_bench(
    problem_file: Path, tmp_path: Path, capsys
) -> None:
    plan = tmp_path / "plan.json"
    argv = ["pick", str(problem_file), "--compare", "exact,mincut,greedy", "--plan", str(plan)]
    assert main(argv) == 0  # the others run, as `tacopt bench` records an error and goes on
    captured = capsys.readouterr()
    rows = {line.split()[0]: line.split()[1] for line in captured.out.splitlines()[1:4]}
    assert rows == {"exact": "OPTIMAL", "mincut": "ERROR", "greedy": "HEURISTIC"}
    assert "mincut: mincut picker needs" in captured.out
    assert captured.err.count("\n") == 1 and "1 of 3 pickers gave no plan" in captured.err
    plans = json.loads(plan.read_text())["plans"]
    assert [(p["picker"], p["status"]) for p in plans] == [
        ("exact", "OPTIMAL"), ("mincut", "ERROR"), ("greedy", "HEURISTIC")
    ]
    assert "mincut picker needs" in plans[1]["error"]


def test_a_picker_failing_mid_comparison_keeps_the_other_rows(
    problem_file: Path, tmp_path: Path, capsys, private_registries
) -> None:
    boom = tmp_path / "boom.py"
    boom.write_text(
        "from tacopt.partitioner.errors import PickerError\n"
        "from tacopt.partitioner.pickers import register_picker\n"
        "def boom(problem, **options):\n"
        "    raise PickerError('boom picker: gave up')\n"
        "register_picker('boom', boom)\n"
    )
    plan = tmp_path / "plan.json"
    argv = ["pick", str(problem_file), "--load", str(boom), "--compare", "exact,boom,greedy",
            "--plan", str(plan)]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    rows = {line.split()[0]: line.split()[1] for line in captured.out.splitlines()[1:4]}
    assert rows == {"exact": "OPTIMAL", "boom": "ERROR", "greedy": "HEURISTIC"}
    assert "boom: boom picker: gave up" in captured.out
    assert captured.err.count("\n") == 1 and "1 of 3 pickers gave no plan" in captured.err
    assert plan.exists()
    argv = ["pick", str(problem_file), "--compare", "boom,mincut"]  # boom is registered now
    assert main(argv) == 2  # no picker gave a plan: one line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no picker gave a plan: boom: boom picker: gave up" in err


def test_text_output_says_which_units_costs_are_in(problem_file: Path, tmp_path, capsys):
    assert main(["pick", str(problem_file), "--compare", "tac,greedy"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "costs in the problem's own units"
    tac = save_problem(
        dataclasses.replace(layered_dag_problem(5, seed=0), cost_unit="tac"), tmp_path / "t.json"
    )
    assert main(["pick", str(tac), "--picker", "greedy"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "costs in TAC units"


def test_help_lists_the_pickers(capsys) -> None:
    assert main(["pick", "--help"]) == 0
    assert "pickers: brute, exact, first-fit, greedy, mincut, tac" in capsys.readouterr().out


MY_PICKER = """
from tacopt.partitioner.pickers import get_picker, register_picker

def cheapest_first(problem):
    plan = get_picker("first-fit")(problem)
    return plan

register_picker("mine", cheapest_first, replace=True)
"""


def test_load_registers_a_picker(
    problem_file: Path, tmp_path: Path, capsys, private_registries: None
) -> None:
    # 'mine' vanishes after (patching the package's name left the registry's own binding, so
    # 'mine' stayed registered and showed in later tests' --help)
    module = tmp_path / "my_picker.py"
    module.write_text(MY_PICKER)
    argv = ["pick", str(problem_file), "--load", str(module), "--compare", "mine,greedy", "--json"]
    assert main(argv) == 0
    assert [p["picker"] for p in json.loads(capsys.readouterr().out)["plans"]] == [
        "first-fit",
        "greedy",
    ]


WRAPPED_EXACT = """
from pathlib import Path
from tacopt.partitioner.pickers import get_picker, register_picker

def exact_started(problem, **options):
    Path({marker!r}).write_text("solving")
    return get_picker("exact")(problem, **options)

register_picker("exact-started", exact_started)
"""


def test_ctrl_c_mid_solve_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    problem = save_problem(layered_dag_problem(10_000, seed=0), tmp_path / "big.json")
    marker = tmp_path / "solving"
    module = tmp_path / "wrapped.py"
    module.write_text(WRAPPED_EXACT.format(marker=str(marker)))
    out = tmp_path / "out"
    out.mkdir()
    plan = str(out / "plan.json")
    argv = [sys.executable, "-m", "tacopt.partitioner.cli", "pick", str(problem),
            "--load", str(module), "--picker", "exact-started", "--plan", plan]  # fmt: skip
    assert interrupt_once_started(argv, marker) == (130, "tacopt pick: interrupted\n")
    assert list(out.iterdir()) == []


INTERRUPTED_IN_EXEC = """
import ctypes, os, signal
from tacopt.partitioner.pickers import register_picker

def interrupted(problem, **options):
    run = ctypes.pythonapi.PyRun_String
    run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object]
    run.restype = ctypes.py_object
    code = b"import os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(1)"
    run(code, 257, {{}}, {{}})  # Py_file_input

register_picker("interrupted-in-exec", interrupted)
"""


def test_ctrl_c_inside_an_extensions_exec_still_exits_130(problem_file: Path, tmp_path: Path):
    """CPython ends a ``python -m`` process by SIGINT (status -2) once a KeyboardInterrupt passed
    through ``PyRun_String`` (as when it lands while OR-Tools' pybind11 code runs), even when
    caught: the entry point exits 130 all the same."""
    module = tmp_path / "exec_picker.py"
    module.write_text(INTERRUPTED_IN_EXEC.format())
    argv = [sys.executable, "-m", "tacopt.partitioner.cli", "pick", str(problem_file),
            "--load", str(module), "--picker", "interrupted-in-exec"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "tacopt pick: interrupted\n")


def test_a_picker_spec_works_without_load(problem_file: Path, tmp_path: Path, capsys, monkeypatch):
    (tmp_path / "spec_picker_pick.py").write_text(
        "from tacopt.partitioner.pickers import get_picker\n"
        "def cheapest(problem):\n"
        "    return get_picker('greedy')(problem)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["pick", str(problem_file), "--compare", "tac,spec_picker_pick:cheapest", "--json"]
    assert main(argv) == 0
    assert len(json.loads(capsys.readouterr().out)["plans"]) == 2
    assert main(["pick", str(problem_file), "--picker", "spec_picker_pick:nothing"]) == 2
    assert "has no 'nothing'" in capsys.readouterr().err


def test_compare_shows_a_picker_without_a_plan_by_its_status(tmp_path: Path, capsys) -> None:
    # three units of 800 resident bytes, two devices of 1000: no plan
    unit = [{"device": d, "type": "FLOAT", "cost": c, "memory": 800} for d, c in
            (("GPU", 1.0), ("CPU", 5.0))]  # fmt: skip
    doc = {
        "transfer": {"per_byte": 0.0, "fixed": 0.0},
        "capacity": {"GPU": 1000, "CPU": 1000},
        "units": [{"name": n, "choices": unit} for n in "abc"],
        "tensors": [],
    }
    path = tmp_path / "tight.json"
    path.write_text(json.dumps(doc))
    plan = tmp_path / "plans.json"
    assert main(["pick", str(path), "--compare", "exact,greedy", "--plan", str(plan)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1] for line in out[1:3]}
    assert rows == {"exact": "INFEASIBLE", "greedy": "UNKNOWN"}
    assert [line.split(":")[0] for line in out[3:5]] == ["exact", "greedy"]  # and why
    assert [r["status"] for r in json.loads(plan.read_text())["plans"]] == ["INFEASIBLE", "UNKNOWN"]
    assert main(["pick", str(path), "--picker", "exact"]) == 2  # alone, no plan is an error
    assert capsys.readouterr().err.count("\n") == 1
