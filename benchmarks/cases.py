"""One case of a study: its pick problem built once (:func:`build_problem`), every picker run on
it, ``exact`` first (:func:`run_case`), and the records that come out (one per picker; the fields
are listed in :mod:`tacopt.benchmarks.harness`). A failing model or picker becomes a record,
never an exception.
"""

from __future__ import annotations

import json
import math
import platform
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from tacopt.benchmarks.study import Case
from tacopt.benchmarks.zoos import BenchmarkError, load_item
from tacopt.cost_models.base import CostModel, get_cost_model
from tacopt.errors import TacoptError
from tacopt.fusion.fuse import fuse
from tacopt.partitioner.annotate import pinned_ops
from tacopt.partitioner.pickers import pick, picker_options
from tacopt.partitioner.pipeline import GRANULARITIES, PickProposal, build_pick_problem
from tacopt.partitioner.plan import NoPlanError, choice_indices, evaluate_index
from tacopt.partitioner.problem import index_problem


@dataclass(frozen=True, slots=True)
class BuiltProblem:
    """A case's pick problem and what is known about the model it came from."""

    problem: Any
    ops: int
    cost_unit: str
    build_seconds: float
    extra: Mapping[str, Any] = field(default_factory=dict)




def build_problem(case: Case) -> BuiltProblem:
    """Build the pick problem of ``case`` (once; every picker of the case solves it)."""
    started = time.perf_counter()
    loaded = load_item(case.item)
    if case.item.kind == "problem":
        n = len(loaded.units)
        return BuiltProblem(loaded, n, "us", time.perf_counter() - started)

    cost_model = get_cost_model(case.cost_model)
    proposal = _proposal(loaded, case, cost_model)
    ops = sum(g.number_of_nodes() for g in [loaded, *loaded.graph.get("subgraphs", {}).values()])
    extra = {"fusions": proposal.fusions, "unfused": proposal.unfused}
    return BuiltProblem(
        proposal.problem, ops, cost_model.unit, time.perf_counter() - started, extra
    )


def _proposal(G: Any, case: Case, cost_model: CostModel) -> PickProposal:
    if case.granularity not in GRANULARITIES:
        raise BenchmarkError(f"unknown granularity {case.granularity!r}; known: op, subgraph")
    return build_pick_problem(
        G, list(case.devices), cost_model=cost_model, granularity=case.granularity,
        fuse=case.fusion == "fused", capacity=dict(case.memory),
        pins=_pins_matching(G, case) if case.pins else (),
    )  # fmt: skip


def _pins_matching(G: Any, case: Case) -> tuple[tuple[str, str], ...]:
    """The pins of ``case`` that match an op of the graph the pipeline partitions (``G`` fused,
    unless the case is plain): a study's pins span a zoo, and a kind one model lacks is no
    error there."""
    H = fuse(G).graph if case.fusion == "fused" else G
    hit = set(pinned_ops(H, case.pins).values())
    return tuple(pin for i, pin in enumerate(case.pins) if i in hit)


def count_moves(problem: Any, assignment: Mapping[str, Any]) -> tuple[int, int]:
    """Numbers of (transfers, conversions) an assignment pays, as ``evaluate`` charges them.

    Evaluates the assignment with unit prices (every transfer and every conversion costs 1), so
    the counts follow :func:`tacopt.partitioner.plan.evaluate`'s rules exactly (once per tensor and
    distinct destination device / format, graph boundaries included when the problem counts them).

    Examples
    --------
    >>> from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit
    >>> cpu, gpu = Choice("CPU", "FLOAT", 3.0), Choice("GPU", "QUANTIZED_INT8", 1.0)
    >>> p = PickProblem((Unit("a", (cpu, gpu)), Unit("b", (cpu,)), Unit("c", (cpu,))),
    ...     (TensorEdge("t", "a", ("b", "c"), (100,), "float32"),), Link(5.0, 10.0), 2.0)
    >>> count_moves(p, {"a": gpu, "b": cpu, "c": cpu})
    (1, 1)
    """
    index = index_problem(problem)
    n_dev = len(index.devices)
    unit_priced = replace(
        index,
        link_per_byte=np.zeros((n_dev, n_dev)),
        link_fixed=np.ones((n_dev, n_dev)),
        quant_per_element=1.0,
        elements=np.ones_like(index.elements),
    )
    counted = evaluate_index(unit_priced, choice_indices(problem, index, assignment))
    return round(counted.transfer), round(counted.quant)


def run_case(case: Case, done: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict]:
    """Run every picker of ``case`` not already in ``done`` (records by picker) on one problem.

    Returns the new records in picker order. Never raises for a failing model or picker: the
    failure becomes a record with status ERROR (a :class:`~tacopt.errors.TacoptError`) or
    CRASH.
    """
    done = done or {}
    todo = [p for p in case.pickers if p not in done]
    if not todo:
        return []
    base = _base_record(case)
    try:
        built = build_problem(case)
    except Exception as exc:  # noqa: BLE001 - one bad model must not stop a study
        return [_failed(_for_picker(base, case, p), exc) for p in todo]
    problem = built.problem
    base.update(
        ops=built.ops,
        units=len(problem.units),
        choices=sum(len(u.choices) for u in problem.units),
        tensors=len(problem.tensors),
        cost_unit=built.cost_unit,
        build_seconds=round(built.build_seconds, 6),
        **built.extra,
    )
    if not case.devices:
        base["devices"] = ",".join(sorted({c.device for u in problem.units for c in u.choices}))
    previous = done.get("exact", {})
    exact = previous.get("objective") if previous.get("status") in ("OPTIMAL", "FEASIBLE") else None
    records = []
    for picker in todo:
        record = _run_picker(case, problem, picker, _for_picker(base, case, picker))
        if picker == "exact" and record["status"] in ("OPTIMAL", "FEASIBLE"):
            exact = record["objective"]
        records.append(record)
    for record in records:
        _fill_ratio(record, exact)
    return records


def _run_picker(case: Case, problem: Any, picker: str, record: dict) -> dict:
    try:
        accepted = picker_options(picker)
        wanted = {"time_limit_s": case.time_limit_s, "backend": case.backend, "seed": case.seed}
        options = {k: v for k, v in wanted.items() if v is not None and ({k, "*"} & accepted)}
        record["params"] = {**record["params"], **options}
        record["capacity"] = dict(problem.capacity)
        started = time.perf_counter()
        plan = pick(problem, picker, **options)
        wall = time.perf_counter() - started
        transfers, conversions = count_moves(problem, plan.assignment)
    except Exception as exc:  # noqa: BLE001 - recorded, see run_case
        return _failed(record, exc)
    record.update(
        status=plan.status,
        objective=plan.objective,
        breakdown={
            "compute": plan.breakdown.compute,
            "transfer": plan.breakdown.transfer,
            "quant": plan.breakdown.quant,
            "pairwise": plan.breakdown.pairwise,
        },
        peak_memory=dict(plan.peak_memory),
        fits=plan.fits,
        bound=plan.bound,
        gap=plan.gap,
        seconds=round(wall, 6),
        transfers=transfers,
        conversions=conversions,
        params={**record["params"], **_jsonable(plan.params)},
    )
    return record


def _fill_ratio(record: dict, exact: float | None) -> None:
    record["exact_objective"] = exact
    objective = record.get("objective")
    if exact is None or objective is None:
        return
    if exact > 0:
        record["ratio_to_exact"] = objective / exact
        record["gap_to_exact"] = objective / exact - 1.0
    else:  # a free optimum: any positive cost is infinitely worse, equal is ratio 1
        record["ratio_to_exact"] = 1.0 if objective <= 0 else math.inf
        record["gap_to_exact"] = 0.0 if objective <= 0 else math.inf


def _base_record(case: Case) -> dict:
    return {
        "key": case.key,
        "model": case.item.name,
        "zoo": case.item.zoo,
        "kind": case.item.kind,
        "ops": None,
        "units": None,
        "choices": None,
        "tensors": None,
        "devices": ",".join(case.devices),
        "granularity": case.granularity,
        "cost_model": case.cost_model,
        "fusion": case.fusion if case.item.kind != "problem" else "-",
        "fusions": None,
        "unfused": None,
        "cost_unit": None,
        "picker": None,
        "status": None,
        "objective": None,
        "breakdown": None,
        "bound": None,
        "gap": None,
        "exact_objective": None,
        "ratio_to_exact": None,
        "gap_to_exact": None,
        "seconds": None,
        "build_seconds": None,
        "transfers": None,
        "conversions": None,
        "capacity": dict(case.memory),
        "pins": [f"{pattern}={device}" for pattern, device in case.pins],
        "peak_memory": None,
        "fits": None,
        "seed": case.seed,
        "params": {"time_limit_s": case.time_limit_s, "backend": case.backend},
        "versions": versions(),
        "error": None,
    }


def _for_picker(base: dict, case: Case, picker: str) -> dict:
    return {**base, "key": case.record_key(picker), "picker": picker}


def _failed(record: dict, exc: BaseException) -> dict:
    out = dict(record)
    if isinstance(exc, NoPlanError):  # no plan within the capacities: a result, not a failure
        out["status"], out["error"] = exc.status, str(exc)
    elif isinstance(exc, TacoptError):
        out["status"], out["error"] = "ERROR", f"{type(exc).__name__}: {exc}"
    else:
        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
        out["status"], out["error"] = "CRASH", f"{type(exc).__name__}{at}: {exc}"
    return out


def failed_records(case: Case, pickers: Iterable[str], exc: BaseException) -> list[dict]:
    """Records of ``pickers`` on ``case`` that all failed with ``exc`` (a crashed worker)."""
    base = _base_record(case)
    return [_failed(_for_picker(base, case, p), exc) for p in pickers]


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(params), default=str))


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Versions of tacopt, its solver stack and Python, as recorded in every record."""
    out = {}
    for dist in ("tacopt", "ortools", "numpy", "networkx", "scipy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "absent"
    out["python"] = platform.python_version()
    return out
