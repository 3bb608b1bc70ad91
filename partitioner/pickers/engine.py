"""The exact picker's engine: the stage list (:data:`STAGES`) that :func:`solve` runs.

Every stage takes the one :class:`Run` of a solve, reads what the stages before it found (the
best plan so far, a lower bound) and either settles the problem, returning the
:class:`~tacopt.partitioner.plan.Plan`, or returns None and the next stage runs. The plan is
made once, by :func:`finish`, and its objective is :func:`~tacopt.partitioner.plan.evaluate`'s.

========================  ==============================  ========================================
stage                     takes                           does
========================  ==============================  ========================================
``enumerate``             no unit, or one (default        tries each choice: a proof without a
                          backend)                        solver
``pairwise``              pairwise form (choice costs     reductions (:mod:`.reduce`), primal
                          and matrices, at most one       search (:mod:`.search`, :mod:`.primal`),
                          capacity: every IOPDDL          bounds (:mod:`.bounds`), proof and
                          instance), default settings     neighbourhood search (:mod:`.pairwise`)
``certificate``           HiGHS, method ``decompose``,    the LP and a region-by-region proof
                          no pairwise costs               (:mod:`.decompose`); with capacities,
                                                          without them first (a bound, and the
                                                          answer when it fits)
``branch-and-bound``      everything left                 the whole integer program
                                                          (:mod:`.formulation`) by the backend
                                                          (:mod:`.mip`), from the best plan so far
========================  ==============================  ========================================

Examples
--------
>>> from tacopt.partitioner.problem.contest import problem_from_dict
>>> p = problem_from_dict({"problem": {"name": "t",
...     "nodes": {"intervals": [[0, 2], [1, 3]], "costs": [[5, 1], [2, 9]],
...               "usages": [[1, 4], [2, 1]]},
...     "edges": {"nodes": [[0, 1]], "costs": [[0, 3, 3, 0]]}, "usage_limit": 5}})
>>> from tacopt.partitioner.pickers.exact import pick_exact
>>> plan = pick_exact(p, time_limit_s=10)
>>> plan.status, plan.objective, plan.params["method"]
('OPTIMAL', 7, 'engine')
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.memory import fits_batch
from tacopt.partitioner.pickers.baselines.brute import pick_brute
from tacopt.partitioner.pickers.baselines.greedy import greedy_choices
from tacopt.partitioner.pickers.formulation import LinearModel, build_model
from tacopt.partitioner.pickers.mip import (
    Solution,
    chosen_choices,
    integer_scale,
    solve_model,
    solver_parameters,
    warm_start,
)
from tacopt.partitioner.pickers.reduce import FORBIDDEN, Infeasible, pairwise_scope, reduce_problem
from tacopt.partitioner.plan import NoPlanError, Plan, evaluate_index, plan_from_choices
from tacopt.partitioner.problem import PickProblem, ProblemIndex

DEFAULT_BACKEND = "highs"

#: The backend of branch-and-bound with capacities when none is asked for.
MEMORY_BACKEND = "scip"

# "decompose": the stages in order; "monolithic": branch-and-bound at once (no certificate).
METHODS = ("decompose", "monolithic")


@dataclass(slots=True)
class Run:
    """One solve: the problem, its settings, and what the stages found so far.

    Mutable on purpose: each stage leaves its best plan (``chosen``, global choice indices,
    always within the capacities) and its lower bound here for the next one.
    """

    problem: PickProblem
    index: ProblemIndex
    backend: str | None  # as asked; None: the stages choose
    method: str
    time_limit_s: float
    seed: int
    num_workers: int
    hint: bool
    threads: int
    started: float  # time.perf_counter() at the start
    params: dict[str, Any]
    chosen: np.ndarray | None = None
    bound: float = -math.inf
    model: LinearModel | None = None

    @property
    def deadline(self) -> float:
        """The end of the time limit, on ``time.perf_counter()``."""
        return self.started + self.time_limit_s

    def left_s(self) -> float:
        return max(self.deadline - time.perf_counter(), 0.0)

    def linear_model(self) -> LinearModel:
        """The integer program of the whole problem, built once."""
        if self.model is None:
            self.model = build_model(self.index)
        return self.model

    def offer(self, chosen: np.ndarray | None) -> None:
        """Keep ``chosen`` if it fits the capacities and is cheaper than the plan so far."""
        if chosen is None or not fits_batch(self.index, chosen)[0]:
            return
        if objective(self.index, chosen) < objective(self.index, self.chosen):  # inf for None
            self.chosen = chosen


Stage = Callable[[Run], "Plan | None"]


def solve(run: Run) -> Plan:
    """Run the stages (:data:`STAGES`) on ``run`` until one settles it (the last always does)."""
    for name, stage in STAGES:
        run.params["stage"] = name  # the stage that answers: the plan's params say which
        plan = stage(run)
        if plan is not None:
            return plan
    raise PickerError("exact picker: internal error, no stage answered")


def finish(run: Run, chosen: np.ndarray, status: str, bound: float | None = None) -> Plan:
    """The plan of ``chosen`` (its objective is evaluate's), with the run's settings."""
    return plan_from_choices(run.problem, run.index, chosen, picker="exact", status=status,
                             bound=bound, started=run.started, params=run.params)  # fmt: skip


def objective(index: ProblemIndex, chosen: np.ndarray | None) -> float:
    """The objective of ``chosen`` (:func:`~tacopt.partitioner.plan.evaluate`'s); inf for none."""
    return math.inf if chosen is None else evaluate_index(index, chosen).total


def greedy_plan(index: ProblemIndex) -> np.ndarray | None:
    """Greedy's plan if it fits the capacities, else None."""
    try:
        warm = greedy_choices(index)
    except NoPlanError:  # greedy found no plan within the capacities; the solver may
        return None
    if index.has_memory and not fits_batch(index, warm)[0]:
        return None  # greedy's step-by-step check can miss what every plan holds (graph inputs)
    return warm


def enumerate_stage(run: Run) -> Plan | None:
    """No unit, or one unit with the default backend: trying each choice proves the optimum,
    and starting a solver was most of ``tacopt partition``'s time on a one-unit problem."""
    if run.index.n_units == 0:
        return finish(run, np.zeros(0, np.int64), "OPTIMAL")
    if run.index.n_units != 1 or run.backend is not None:
        return None
    try:
        tried = pick_brute(run.problem)
    except NoPlanError as exc:
        raise NoPlanError(
            "exact picker: no plan fits the capacities (every choice of the one unit tried)",
            exc.status,
        ) from None
    run.params.update(backend=None, method="enumeration",
                      assignments=len(run.problem.units[0].choices))  # fmt: skip
    return replace(tried, picker="exact", params=run.params,
                   seconds=time.perf_counter() - run.started)  # fmt: skip


def pairwise_stage(run: Run) -> Plan | None:
    """A problem in pairwise form with the default settings: reductions, then the primal
    search, bounds and proof of :mod:`.pairwise`; never dearer than the greedy or the initial
    plan when those fit."""
    index = run.index
    if run.backend is not None or run.method != "decompose" or pairwise_scope(index) is not None:
        return None
    # scipy's sparse matrices and the search stack (~0.2 s): loaded only for this stage
    from tacopt.partitioner.pickers import pairwise, search

    params = run.params
    params.update(backend="highs", method="engine")
    warm = greedy_plan(index)
    # Room to check the plan and return it within the limit.
    deadline = time.monotonic() + run.left_s() - max(0.3, 0.03 * run.time_limit_s)
    t0 = time.monotonic()
    forbidden = bool((index.choice_cost >= FORBIDDEN).any() or (index.pair_cost >= FORBIDDEN).any())
    reduced = reduce_problem(index)
    if isinstance(reduced, Infeasible) and forbidden:
        reduced = reduce_problem(index, forbid=False)  # costs of 10^18 as large costs
    params["reduce_s"] = round(time.monotonic() - t0, 3)
    if isinstance(reduced, Infeasible):
        raise NoPlanError(f"exact picker: no plan fits the capacities: {reduced.reason}",
                          "INFEASIBLE")  # fmt: skip
    best, bound, proven = pairwise.search_and_prove(reduced, True, deadline, run.seed,
                                                        params, run.threads)
    # a plan with a forbidden pair left (the primal search's last resort) is kept for the end
    last_resort = None
    if best is not None and not np.isfinite(search.objective(reduced, best)):
        last_resort, best = (reduced, best), None
    enough = time.monotonic() < deadline - 0.3 * (deadline - t0)  # the reductions run again
    if best is None and forbidden and enough:
        # none found avoiding the forbidden costs: look among all plans
        again = reduce_problem(index, forbid=False)
        if isinstance(again, Infeasible):
            raise NoPlanError(f"exact picker: no plan fits the capacities: {again.reason}",
                              "INFEASIBLE")  # fmt: skip
        reduced = again
        best, bound, proven = pairwise.search_and_prove(reduced, True, deadline, run.seed,
                                                        params, run.threads)
    if best is None and last_resort is not None:
        (reduced, best), proven = last_resort, False
    if best is None:
        raise NoPlanError("exact picker: no plan within the capacity found in time"
                          f" ({run.time_limit_s:g} s)")  # fmt: skip
    chosen = index.choice_start[:-1] + reduced.original(best)
    if not fits_batch(index, chosen)[0]:  # the search keeps the limit: never returned
        raise PickerError("exact picker: internal error, a plan over a capacity")
    run.offer(chosen)
    for other in (warm, index.initial):  # among plans at 10^18 (forbidden) the engine may lose
        run.offer(other)
    assert run.chosen is not None
    value = objective(index, run.chosen)
    # The reductions drop forbidden pairs: their bound holds for plans below FORBIDDEN.
    bound = min(bound, float(FORBIDDEN))
    proven = proven and value < FORBIDDEN
    # Integer costs: a bound within 1 of the objective proves it (compared as integers).
    closed = (index.integral and math.isfinite(bound)
              and value - math.ceil(bound - 1e-6) < 1)  # fmt: skip
    if proven or closed:
        return finish(run, run.chosen, "OPTIMAL")
    return finish(run, run.chosen, "FEASIBLE", max(min(bound, value), 0.0))


def certificate_stage(run: Run) -> Plan | None:
    """HiGHS with ``decompose`` on a problem without pairwise costs: the LP and its region
    certificate (:mod:`.decompose`). With capacities it runs without them (fast): that optimum
    bounds every plan from below, and is the answer when it fits."""
    index = run.index
    if (run.backend or DEFAULT_BACKEND) != "highs" or run.method != "decompose":
        return None
    if index.has_pairwise:
        return None
    # scipy's sparse graphs (~0.2 s): loaded only when a certificate runs
    from tacopt.partitioner.pickers.decompose import certify

    if not index.has_memory:
        run.params["method"] = "decompose"
        found = certify(index, run.linear_model(), run.deadline, run.seed, threads=run.threads)
        if found is None:  # the LP did not finish in time
            return None
        run.params.update(found.stats, certified=found.proven)
        if found.proven:
            return finish(run, found.chosen, "OPTIMAL")
        run.offer(found.chosen)  # cut short: a plan, and a bound
        run.bound = max(run.bound, found.bound)
        return None
    free = replace(index, capacity=np.full(len(index.devices), np.inf))
    found = certify(free, build_model(free), run.deadline, run.seed, threads=run.threads)
    if found is not None and found.proven:
        fits = bool(fits_batch(index, found.chosen)[0])
        run.params["unconstrained_fits"] = fits
        if fits:
            run.params["method"] = "decompose"
            return finish(run, found.chosen, "OPTIMAL")
    if found is not None:
        run.bound = max(run.bound, found.bound)
    return None


def branch_and_bound_stage(run: Run) -> Plan:
    """Branch-and-bound on the whole model with the time left, from the best plan so far
    (greedy's, or the certificate's); never a plan over a capacity."""
    index, params = run.index, run.params
    solver = params["backend"]
    params.setdefault("method", "monolithic")
    run.offer(greedy_plan(index))
    fallback = run.chosen
    model = run.linear_model()
    # CP-SAT works on integers: scale the costs by a power of ten (exact if they have few
    # decimals); the plan's objective is recomputed by evaluate in original units anyway.
    scale, rounding = integer_scale(model.cost) if solver == "cp-sat" else (1.0, 0.0)
    cost = np.round(model.cost * scale) if solver == "cp-sat" else model.cost
    coupled = index.has_memory or index.has_pairwise
    # HiGHS is not given a hint (OR-Tools 9.15 crashed on one); the fallback plan stands in.
    usable = run.hint and solver != "highs" and fallback is not None and not coupled
    start = warm_start(model, fallback) if usable and fallback is not None else None
    remaining = run.left_s()
    if remaining > 0:
        parameters = solver_parameters(solver, run.seed, run.num_workers, tight=index.has_memory,
                                       pairwise=index.has_pairwise)  # fmt: skip
        solution = solve_model(model, cost, solver, remaining, parameters, start)
    else:  # the budget is spent: HiGHS's presolve alone would overrun it by far
        solution = Solution(None, False, -math.inf, "time limit reached before the solve")

    chosen, proven, bound = fallback, False, run.bound
    if solution.x is not None:
        mine = chosen_choices(index, solution.x[: model.n_choices])
        # The solver's tolerances could leave a plan a few bytes over a capacity: never taken.
        if fits_batch(index, mine)[0] and (
            solution.optimal or objective(index, mine) <= objective(index, fallback)
        ):
            chosen = mine
            proven = solution.optimal and rounding == 0.0
        bound = max(bound, solution.bound / scale - rounding)
    params["solver_status"] = solution.status
    if chosen is None:
        if solution.infeasible:
            raise NoPlanError("exact picker: no plan fits the capacities (the integer program"
                              " is infeasible)", "INFEASIBLE")  # fmt: skip
        raise NoPlanError(f"exact picker: no plan within the capacities found in"
                          f" {run.time_limit_s:g} s ({solution.status})")  # fmt: skip
    params["scale"] = scale
    if proven:
        return finish(run, chosen, "OPTIMAL")
    return finish(run, chosen, "FEASIBLE", max(bound, 0.0))


#: The stages, in order (module docstring).
STAGES: tuple[tuple[str, Stage], ...] = (
    ("enumerate", enumerate_stage),
    ("pairwise", pairwise_stage),
    ("certificate", certificate_stage),
    ("branch-and-bound", branch_and_bound_stage),
)
