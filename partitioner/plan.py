"""Plans, and the one objective every picker is judged by.

A :class:`Plan` says which :class:`~tacopt.partitioner.problem.Choice` each unit runs as, what that
costs (:class:`Breakdown`), how sure the picker is (``status``, ``bound``, ``gap``) and with which
knobs it was found (``params``). :func:`evaluate` is the objective; :func:`validate_plan` is the
independent checker the tests run on every picker's output.

The objective, for an assignment of one choice per unit, is the sum of

* compute: each unit's chosen cost;
* transfer: for every tensor, one ``per_byte * bytes + fixed`` per distinct destination device
  other than the device it starts on (the link of that device pair);
* quant: for every tensor, one ``quant_per_element * elements`` per distinct destination
  activation format other than the one it starts in (FLOAT and HYBRID share a format).

A tensor starts where its producer runs; a graph input starts on the host in its dtype's type.
Destinations are the consumers' choices, plus the host (in the dtype's type) for a graph output.
With ``boundaries=False`` graph inputs and outputs are ignored.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PlanError
from tacopt.partitioner.problem import Choice, PickProblem, ProblemIndex, index_problem

STATUSES = ("OPTIMAL", "FEASIBLE", "HEURISTIC", "INFEASIBLE", "UNKNOWN")


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The objective split into compute, transfer and conversion (quant) costs."""

    compute: float
    transfer: float
    quant: float

    @property
    def total(self) -> float:
        """compute + transfer + quant."""
        return math.fsum((self.compute, self.transfer, self.quant))


@dataclass(frozen=True, slots=True)
class Plan:
    """A picker's answer: one choice per unit, its cost, and how good it is known to be.

    ``status`` is OPTIMAL (``bound == objective``), FEASIBLE (a proven ``bound`` below, relative
    ``gap``), or HEURISTIC (no bound: ``bound`` and ``gap`` are None). ``params`` records every
    knob that shaped the answer (seed, time limit, backend, versions).
    """

    picker: str
    status: str
    objective: float
    bound: float | None
    gap: float | None
    assignment: Mapping[str, Choice]
    breakdown: Breakdown
    seconds: float
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written by ``tacopt pick --json`` and ``--plan``."""
        return {
            "picker": self.picker,
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "assignment": {
                name: {"device": c.device, "type": c.type, "cost": c.cost}
                for name, c in self.assignment.items()
            },
            "breakdown": {
                "compute": self.breakdown.compute,
                "transfer": self.breakdown.transfer,
                "quant": self.breakdown.quant,
            },
            "seconds": self.seconds,
            "params": dict(self.params),
        }


def evaluate(problem: PickProblem, assignment: Mapping[str, Choice | tuple[str, str]]) -> Breakdown:
    """The cost of running each unit as ``assignment[unit]``.

    Parameters
    ----------
    problem : PickProblem
    assignment : Mapping
        Unit name to a :class:`Choice` or a ``(device, type)`` pair; every unit must appear.

    Returns
    -------
    Breakdown

    Raises
    ------
    PlanError
        If a unit is missing or assigned something that is not one of its choices.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, TensorEdge, Unit
    >>> cpu, gpu = Choice("CPU", "FLOAT", 3.0), Choice("GPU", "FLOAT", 1.0)
    >>> p = PickProblem((Unit("a", (cpu, gpu)), Unit("b", (cpu,))),
    ...     (TensorEdge("t", "a", ("b",), (100,), "float32"),), Link(5.0, 10.0), 2.0)
    >>> evaluate(p, {"a": ("GPU", "FLOAT"), "b": ("CPU", "FLOAT")})
    Breakdown(compute=4.0, transfer=2010.0, quant=0.0)
    """
    index = index_problem(problem)
    return evaluate_index(index, choice_indices(problem, index, assignment))


def evaluate_index(index: ProblemIndex, chosen: np.ndarray) -> Breakdown:
    """:func:`evaluate` on flat arrays: ``chosen[u]`` is the global choice index of unit ``u``."""
    terms = _objective_terms(index, np.asarray(chosen).reshape(1, -1))
    return Breakdown(*(math.fsum(cost.tolist()) for _, cost in terms))


def evaluate_batch(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """Objective of each row of ``chosen`` (shape ``[m, n_units]``), as an array of ``m``."""
    chosen = np.asarray(chosen)
    total = np.zeros(len(chosen))
    for row, cost in _objective_terms(index, chosen):
        total += np.bincount(row, weights=cost, minlength=len(chosen))
    return total


def _objective_terms(
    index: ProblemIndex, chosen: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(row, cost) arrays of every compute, transfer and quant charge of each row of ``chosen``.

    A charge is one (row, tensor, destination) triple: ``np.unique`` on the triples is what
    makes a tensor pay once per distinct destination device (or format).
    """
    m = len(chosen)
    rows = np.arange(m)[:, None]
    dev = index.choice_dev[chosen]
    fmt = index.choice_fmt[chosen]
    # A graph input's producer is a padding column holding its fixed source device and format.
    producer = np.where(index.src_unit >= 0, index.src_unit, dev.shape[1])
    src_dev = np.concatenate([dev, np.full((m, 1), index.host_dev)], 1)[:, producer]
    src_fmt = np.concatenate([fmt, np.zeros((m, 1), np.int64)], 1)[:, producer]
    src_fmt = np.where(index.src_unit >= 0, src_fmt, index.src_fmt)
    out = np.flatnonzero(index.to_host)
    tensor = np.concatenate([index.arc_tensor, out])
    dst_dev = np.concatenate([dev[:, index.arc_unit], np.full((m, len(out)), index.host_dev)], 1)
    dst_fmt = np.concatenate([fmt[:, index.arc_unit], np.tile(index.host_fmt[out], (m, 1))], 1)
    units = np.repeat(np.arange(m), chosen.shape[1])
    terms: list[tuple[np.ndarray, np.ndarray]] = [(units, index.choice_cost[chosen].ravel())]
    n_tensors = len(index.src_unit)
    for dst, src, n, price in (
        (dst_dev, src_dev, len(index.devices), index.transfer_cost),
        (dst_fmt, src_fmt, len(index.formats), index.quant_cost),
    ):
        key = _unique(((rows * n_tensors + tensor) * n + dst).ravel())
        row, rest = np.divmod(key, n_tensors * n)
        t, d = np.divmod(rest, n)
        terms.append((row, price(src[row, t], d, t)))
    return terms


def _unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a plain sort beats ``np.unique``'s hashing here)."""
    keys = np.sort(keys)
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys


def choice_indices(
    problem: PickProblem, index: ProblemIndex, assignment: Mapping[str, Choice | tuple[str, str]]
) -> np.ndarray:
    """Global choice index per unit for an assignment by name; raises :class:`PlanError`."""
    chosen = np.empty(len(problem.units), dtype=np.int64)
    for u, unit in enumerate(problem.units):
        if unit.name not in assignment:
            raise PlanError(f"unit {unit.name!r} has no choice in the plan")
        picked = assignment[unit.name]
        key = (picked.device, picked.type) if isinstance(picked, Choice) else tuple(picked)
        for k, c in enumerate(unit.choices):
            if (c.device, c.type) == key:
                chosen[u] = index.choice_start[u] + k
                break
        else:
            raise PlanError(f"unit {unit.name!r}: {'/'.join(key)} is not one of its choices")
    extra = set(assignment) - set(index.unit_names)
    if extra:
        raise PlanError(f"plan assigns unknown unit {min(extra)!r}")
    return chosen


def plan_from_choices(
    problem: PickProblem,
    index: ProblemIndex,
    chosen: np.ndarray,
    *,
    picker: str,
    status: str,
    started: float,
    bound: float | None = None,
    params: Mapping[str, Any] | None = None,
) -> Plan:
    """Make a :class:`Plan` from chosen choice indices; the objective comes from ``evaluate``.

    ``bound`` is a proven lower bound (None for heuristics); OPTIMAL plans get
    ``bound = objective``. ``started`` is the ``time.perf_counter()`` the picker began at.
    """
    breakdown = evaluate_index(index, chosen)
    objective = breakdown.total
    if status == "OPTIMAL":
        bound = objective if bound is None else min(bound, objective)
    gap = None if bound is None else relative_gap(objective, bound)
    assignment = {
        unit.name: unit.choices[int(chosen[u] - index.choice_start[u])]
        for u, unit in enumerate(problem.units)
    }
    return Plan(
        picker=picker,
        status=status,
        objective=objective,
        bound=bound,
        gap=gap,
        assignment=assignment,
        breakdown=breakdown,
        seconds=time.perf_counter() - started,
        params=dict(params or {}),
    )


def relative_gap(objective: float, bound: float) -> float:
    """``(objective - bound) / |objective|``, 0 when both are 0.

    Examples
    --------
    >>> relative_gap(100.0, 90.0), relative_gap(0.0, 0.0)
    (0.1, 0.0)
    """
    if objective == bound:
        return 0.0
    return max(0.0, objective - bound) / max(abs(objective), 1e-12)


def validate_plan(problem: PickProblem, plan: Plan, *, rel_tol: float = 1e-9) -> None:
    """Check that ``plan`` fits ``problem``; raise :class:`PlanError` otherwise.

    Every unit must get one of its own choices (with that choice's cost), no unknown unit may
    appear, the reported breakdown and objective must match :func:`evaluate`, and a reported
    bound may not exceed the objective.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, Unit
    >>> p = PickProblem((Unit("a", (Choice("CPU", "FLOAT", 3.0),)),), (), Link(5.0, 10.0), 2.0)
    >>> good = Plan("manual", "HEURISTIC", 3.0, None, None, {"a": p.units[0].choices[0]},
    ...             Breakdown(3.0, 0.0, 0.0), 0.0)
    >>> validate_plan(p, good)
    >>> validate_plan(p, Plan("manual", "HEURISTIC", 2.0, None, None, good.assignment,
    ...                       Breakdown(3.0, 0.0, 0.0), 0.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PlanError: plan of picker 'manual': reported objective 2.0 but ...
    """
    who = f"plan of picker {plan.picker!r}"
    if plan.status not in STATUSES:
        raise PlanError(f"{who}: unknown status {plan.status!r}; known: {', '.join(STATUSES)}")
    for unit in problem.units:
        picked = plan.assignment.get(unit.name)
        if picked is not None and picked not in unit.choices:
            raise PlanError(f"{who}: unit {unit.name!r} runs as {picked}, not one of its choices")
    index = index_problem(problem)
    try:
        actual = evaluate_index(index, choice_indices(problem, index, plan.assignment))
    except PlanError as exc:
        raise PlanError(f"{who}: {exc}") from None
    for name in ("compute", "transfer", "quant"):
        got, want = getattr(plan.breakdown, name), getattr(actual, name)
        if not math.isclose(got, want, rel_tol=rel_tol, abs_tol=rel_tol):
            raise PlanError(f"{who}: reported {name} cost {got} but evaluate gives {want}")
    if not math.isclose(plan.objective, actual.total, rel_tol=rel_tol, abs_tol=rel_tol):
        raise PlanError(
            f"{who}: reported objective {plan.objective} but evaluate gives {actual.total}"
        )
    if plan.bound is not None and plan.bound > plan.objective * (1 + rel_tol) + rel_tol:
        raise PlanError(f"{who}: bound {plan.bound} exceeds objective {plan.objective}")
