"""Exhaustive search over every assignment: the oracle the tests hold the other pickers to."""

from __future__ import annotations

import math
import time

import numpy as np

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.memory import fits_batch
from tacopt.partitioner.plan import (
    NoPlanError,
    Plan,
    evaluate_batch,
    evaluate_index,
    plan_from_choices,
)
from tacopt.partitioner.problem import PickProblem, index_problem

MAX_UNITS = 12
_CHUNK = 20_000


def pick_brute(problem: PickProblem, *, max_assignments: int = 5_000_000) -> Plan:
    """Try every assignment and keep the cheapest (the first one found on ties); status OPTIMAL.

    Assignments over a device's capacity are skipped; pairwise costs count in the objective.

    Parameters
    ----------
    problem : PickProblem
        At most 12 units.
    max_assignments : int
        Refuse problems with more assignments than this (the product of choice counts).

    Raises
    ------
    PickerError
        Above 12 units or ``max_assignments`` assignments.
    NoPlanError
        With status INFEASIBLE when no assignment fits the capacities.

    Examples
    --------
    >>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
    >>> plan = pick_brute(layered_dag_problem(6, seed=3))
    >>> plan.status, plan.gap
    ('OPTIMAL', 0.0)
    """
    started = time.perf_counter()
    reason = brute_scope(problem, max_assignments=max_assignments)
    if reason is not None:
        raise PickerError(reason)
    radix = [len(u.choices) for u in problem.units]
    total = math.prod(radix)
    index = index_problem(problem)
    best_value, best_row = math.inf, index.initial
    best_exact: float | None = None
    for begin in range(0, total, _CHUNK):
        chosen = _assignments(index.choice_start, radix, begin, min(total, begin + _CHUNK))
        values = evaluate_batch(index, chosen)
        if index.has_memory:
            values[~fits_batch(index, chosen)] = math.inf
        i = int(np.argmin(values))
        if index.integral and np.isfinite(values[i]):  # floats tie where integers differ
            ties = np.flatnonzero(values <= values[i] * (1 + 1e-12)).tolist()
            exact = [evaluate_index(index, chosen[t]).total for t in ties]
            i = ties[int(np.argmin(exact))]
            if best_exact is None or min(exact) < best_exact:
                best_exact, best_value, best_row = min(exact), float(values[i]), chosen[i]
        elif values[i] < best_value:
            best_value, best_row = float(values[i]), chosen[i]
    if best_value == math.inf and total:
        raise NoPlanError("brute picker: no assignment fits the capacities", "INFEASIBLE")
    return plan_from_choices(
        problem,
        index,
        best_row,
        picker="brute",
        status="OPTIMAL",
        started=started,
        params={"assignments": total},
    )


def brute_scope(problem: PickProblem, *, max_assignments: int = 5_000_000) -> str | None:
    """Why :func:`pick_brute` cannot solve ``problem`` (None when it can), without solving it."""
    if len(problem.units) > MAX_UNITS:
        return f"brute picker handles at most {MAX_UNITS} units, got {len(problem.units)}"
    total = math.prod(len(u.choices) for u in problem.units)
    if total > max_assignments:
        return f"brute picker: {total} assignments exceed max_assignments={max_assignments}"
    return None


def _assignments(start: np.ndarray, radix: list[int], begin: int, end: int) -> np.ndarray:
    """Rows ``begin..end`` of the mixed-radix enumeration, as global choice indices."""
    code = np.arange(begin, end)
    columns = []
    for u, n in enumerate(radix):
        code, digit = np.divmod(code, n)
        columns.append(start[u] + digit)
    return np.stack(columns, axis=1) if columns else np.zeros((end - begin, 0), np.int64)


pick_brute.scope = brute_scope  # type: ignore[attr-defined]
