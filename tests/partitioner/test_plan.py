"""Plans: how they print, their JSON form, and an objective that never overflows or warns."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from tacopt.partitioner.errors import PlanError
from tacopt.partitioner.pickers import pick, picker_names
from tacopt.partitioner.plan import Breakdown, Plan, evaluate, unit_label, validate_plan
from tacopt.partitioner.problem import (
    MAX_TOTAL,
    Choice,
    Link,
    Pairwise,
    PickProblem,
    TensorEdge,
    Unit,
    validate_problem,
)
from tacopt.partitioner.problem.synthetic import layered_dag_problem


def gpu_cpu_problem(cost_unit: str = "us") -> PickProblem:
    """x -> a -> t -> b -> y, ``a`` on GPU or CPU, ``b`` on CPU only."""
    gpu, cpu = Choice("GPU", "FLOAT", 40.0), Choice("CPU", "FLOAT", 200.0)
    return PickProblem(
        (Unit("a", (gpu, cpu)), Unit("b", (Choice("CPU", "FLOAT", 1.0),))),
        (
            TensorEdge("x", None, ("a",), (10,), "float32"),
            TensorEdge("t", "a", ("b",), (10,), "float32"),
            TensorEdge("y", "b", (), (2,), "float32", output=True),
        ),
        Link(5.0, 10.0),
        2.0,
        cost_unit=cost_unit,
    )


def test_an_optimal_plan_prints_its_bound_breakdown_and_devices() -> None:
    plan = pick(gpu_cpu_problem(), "exact")
    text = str(plan)
    lines = text.splitlines()
    assert lines[0].startswith("exact: OPTIMAL, objective 201 µs, bound 201, gap 0% (")
    assert [line.split()[0] for line in lines[1:]] == ["compute", "transfer", "quant", "units"]
    assert lines[-1].split() == ["units", "CPU", "2"]
    assert all(line.endswith("µs") for line in lines[1:4])
    assert repr(plan).startswith("<Plan exact OPTIMAL: 201 µs, bound 201, gap 0% (compute 201,")
    assert "\n" not in repr(plan)


def test_a_heuristic_plan_has_no_bound_and_counts_units_per_device() -> None:
    plan = pick(gpu_cpu_problem("tac"), "first-fit")
    assert "bound" not in str(plan) and "gap" not in repr(plan)
    assert "units CPU 1, GPU 1;" in repr(plan)  # ties by name
    assert "TAC units" in str(plan).splitlines()[0]


def test_a_feasible_plan_shows_its_gap() -> None:
    plan = dataclasses.replace(pick(gpu_cpu_problem(), "greedy"), status="FEASIBLE",
                               bound=150.0, gap=0.25)  # fmt: skip
    assert "bound 150, gap 25%" in str(plan).splitlines()[0]


def test_notebooks_show_the_block() -> None:
    plan = pick(gpu_cpu_problem(), "greedy")
    shown: list[str] = []

    class Printer:
        def text(self, value: str) -> None:
            shown.append(value)

    plan._repr_pretty_(Printer(), cycle=False)
    assert shown == [str(plan)]


def test_large_costs_print_with_separators() -> None:
    problem = dataclasses.replace(layered_dag_problem(30, seed=0), cost_unit="ms")
    plan = pick(problem, "greedy")
    assert f"{plan.objective:,.0f}"[:5] in str(plan)
    assert unit_label("ms") == "ms"


def test_the_json_form_round_trips_with_the_cost_unit() -> None:
    plan = pick(gpu_cpu_problem(), "exact")
    record = json.loads(json.dumps(plan.to_dict()))
    assert record["cost_unit"] == "us"
    again = Plan.from_dict(record)
    assert dataclasses.replace(again, params=plan.params) == plan
    validate_plan(gpu_cpu_problem(), again)


@pytest.mark.parametrize("record", [{}, {"picker": "x"}, {"assignment": 5}, []])
def test_from_dict_refuses_what_is_not_a_plan(record) -> None:
    with pytest.raises(PlanError, match="not a plan"):
        Plan.from_dict(record)


def near_the_limit() -> PickProblem:
    """Every price as high as validation lets it be: totals just under MAX_TOTAL."""
    base = layered_dag_problem(10, seed=5)
    scale = MAX_TOTAL / 4 / sum(max(c.cost for c in u.choices) for u in base.units)
    units = tuple(
        Unit(u.name, tuple(Choice(c.device, c.type, c.cost * scale) for c in u.choices),
             u.initial)
        for u in base.units
    )  # fmt: skip
    transfers = sum(len(set(t.consumers)) + t.output for t in base.tensors)
    biggest = max(t.elements for t in base.tensors)
    per_byte = MAX_TOTAL / 4 / (2 * transfers * biggest * 4)
    return dataclasses.replace(
        base,
        units=units,
        transfer=Link(per_byte, MAX_TOTAL / 8 / (2 * transfers)),
        quant_per_element=MAX_TOTAL / 8 / (2 * transfers * biggest),
        links={("GPU", "CPU"): Link(per_byte / 2, 0.0)},
    )


@pytest.mark.parametrize("picker", [p for p in picker_names() if p != "mincut"])
def test_totals_at_the_limit_stay_finite_and_quiet(picker: str) -> None:
    problem = near_the_limit()
    validate_problem(problem)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = pick(problem, picker)
        validate_plan(problem, plan)
        worst = {u.name: max(u.choices, key=lambda c: c.cost) for u in problem.units}
        total = evaluate(problem, worst).total
    assert np.isfinite(plan.objective) and plan.objective <= total <= MAX_TOTAL


def test_breakdown_total_is_exact() -> None:
    assert Breakdown(0.1, 0.2, 0.3).total == 0.6


def memory_problem() -> PickProblem:
    """a (GPU 600 B or CPU) -> t (40 B) -> b (GPU 300 B or CPU); the GPU holds 1000 B."""
    units = tuple(
        Unit(name, (Choice("GPU", "FLOAT", 1.0, memory=m), Choice("CPU", "FLOAT", 9.0, memory=m)))
        for name, m in (("a", 600.0), ("b", 300.0))
    )
    return PickProblem(units, (TensorEdge("t", "a", ("b",), (10,), "float32"),),
                       Link(0.0, 0.0), 0.0, capacity={"GPU": 1000.0},
                       pairwise=(Pairwise("a", "b", ((0.0, 5.0), (5.0, 0.0))),))  # fmt: skip


def test_a_plan_reports_peaks_pairwise_costs_and_round_trips() -> None:
    problem = memory_problem()
    plan = pick(problem, "exact")
    assert [c.device for c in plan.assignment.values()] == ["GPU", "GPU"]
    assert plan.peak_memory == {"CPU": 0.0, "GPU": 940.0} and plan.fits
    assert plan.breakdown == Breakdown(2.0, 0.0, 0.0, 0.0)
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["capacity"] == {"GPU": 1000.0} and data["fits"] is True
    assert data["assignment"]["a"]["memory"] == 600.0
    back = Plan.from_dict(data)
    assert back == plan
    validate_plan(problem, back)
    assert "memory    GPU 940/1,000 B" in str(plan)


def test_evaluate_charges_the_pairwise_entry() -> None:
    problem = memory_problem()
    assert evaluate(problem, {"a": ("GPU", "FLOAT"), "b": ("CPU", "FLOAT")}) == Breakdown(
        10.0, 0.0, 0.0, 5.0
    )


def test_validate_plan_names_the_device_step_and_bytes_over_capacity() -> None:
    problem = dataclasses.replace(memory_problem(), capacity={"GPU": 900.0})
    over = Plan("manual", "HEURISTIC", 2.0, None, None,
                {"a": problem.units[0].choices[0], "b": problem.units[1].choices[0]},
                Breakdown(2.0, 0.0, 0.0, 0.0), 0.0)  # fmt: skip
    with pytest.raises(PlanError, match=r"device GPU holds 940 bytes at step 0 \(unit 'a'\), "
                                        r"over its capacity of 900"):  # fmt: skip
        validate_plan(problem, over)


def test_an_infeasible_plan_must_say_what_the_checker_finds() -> None:
    """The one checker: a plan with a forbidden pair passes validate_plan only as INFEASIBLE
    with the checker's reason, and pick marks any picker's plan so."""
    from tacopt.partitioner.plan import infeasibility
    from tacopt.partitioner.problem import Link, Pairwise, Unit

    two = (Choice("CPU", "FLOAT", 0.0), Choice("GPU", "FLOAT", 5.0))
    problem = PickProblem((Unit("a", two), Unit("b", two)), (), Link(0.0, 0.0), 0.0,
                          pairwise=(Pairwise("a", "b", ((1e18, 0.0), (0.0, 1e18))),))  # fmt: skip
    plan = pick(problem, "first-fit")  # (CPU, CPU): the forbidden entry
    assert plan.status == "INFEASIBLE" and plan.bound is None
    assert plan.reason == infeasibility(problem, plan) == (
        "a forbidden pair (cost >= 1e+18): units 'a' and 'b'")
    validate_plan(problem, plan)
    with pytest.raises(PlanError, match="a forbidden pair"):
        validate_plan(problem, dataclasses.replace(plan, status="HEURISTIC", reason=""))
    with pytest.raises(PlanError, match="INFEASIBLE for 'over' but the checker finds"):
        validate_plan(problem, dataclasses.replace(plan, reason="over"))
    exact = pick(problem, "exact")
    assert exact.status == "OPTIMAL" and exact.objective == 5.0 and not exact.reason
