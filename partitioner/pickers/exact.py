"""The exact picker: an integer program over all units at once, solved through OR-Tools.

With HiGHS (the default) the model is not handed to branch-and-bound first: the LP relaxation
is solved and its plan proven optimal region by region
(:mod:`tacopt.partitioner.pickers.decompose`); branch-and-bound on the whole model is the fallback.

The model is :mod:`~tacopt.partitioner.pickers.formulation`; the solver plumbing
:mod:`~tacopt.partitioner.pickers.mip`.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from importlib.metadata import version
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.memory import fits_batch
from tacopt.partitioner.pickers.formulation import build_model
from tacopt.partitioner.pickers.greedy import greedy_choices
from tacopt.partitioner.pickers.mip import (
    BACKENDS,
    Solution,
    chosen_choices,
    integer_scale,
    solve_model,
    solver_parameters,
    warm_start,
)
from tacopt.partitioner.pickers.reduce import FORBIDDEN, pairwise_scope
from tacopt.partitioner.plan import NoPlanError, Plan, evaluate_index, plan_from_choices
from tacopt.partitioner.problem import PickProblem, ProblemIndex, index_problem

DEFAULT_BACKEND = "highs"

#: The backend of branch-and-bound with capacities when none is asked for.
MEMORY_BACKEND = "scip"


# "decompose": LP, then a region-by-region certificate (decompose.py), branch-and-bound on
# the whole model only if that leaves a gap; "monolithic": branch-and-bound at once.
METHODS = ("decompose", "monolithic")


def pick_exact(
    problem: PickProblem,
    *,
    backend: str | None = None,
    time_limit_s: float = 60.0,
    seed: int = 0,
    num_workers: int = 1,
    hint: bool = True,
    method: str = "decompose",
    threads: int = 2,
) -> Plan:
    """Solve the pick problem to proven optimality (or report the gap at the time limit).

    Parameters
    ----------
    problem : PickProblem
    backend : {"highs", "scip", "cp-sat"}, optional
        The OR-Tools solver. By default HiGHS, and SCIP for branch-and-bound with capacities
        (its knapsack cuts and heuristics: on ViT-B/16 per op with the GPU at half its peak,
        SCIP reached a 0.8 % gap in 60 s where HiGHS kept the greedy plan at a 65 % gap);
        the certificate always runs on HiGHS. HiGHS: with the certificate below it proves
        1,000 units in about 0.2 s and 10,000 in about 3 s
        (``python -m tacopt.benchmarks bench_pickers``); branch-and-bound alone took 0.65 s and
        11 s, SCIP 1.1 s and 74 s, and CP-SAT did not prove 1,000 units within a minute.
    time_limit_s : float
        Wall-clock limit of the solve. At the limit the best plan found so far is returned
        with status FEASIBLE and its gap (the greedy plan if nothing better was found).
        HiGHS can overrun it in presolve on very large models.
    method : {"decompose", "monolithic"}
        With HiGHS: ``"decompose"`` solves the LP and proves its plan region by region
        (:mod:`tacopt.partitioner.pickers.decompose`), falling back to branch-and-bound on the whole
        model with the time left if that leaves a gap; ``"monolithic"`` runs
        branch-and-bound at once. Other backends are always monolithic.
    threads : int
        How many of the certificate's independent integer programs run at once (each on
        single-threaded HiGHS); the plan does not depend on it.
    seed, num_workers : int
        Fixed for reproducibility; ``num_workers`` only matters for CP-SAT.
    hint : bool
        Warm-start the solver with the greedy plan.

    Returns
    -------
    Plan
        Status OPTIMAL (``bound == objective``) or FEASIBLE (``bound`` and ``gap``); never a
        plan over a capacity.

    Raises
    ------
    PickerError
        For an unknown backend or method, or capacities with CP-SAT.
    NoPlanError
        With status INFEASIBLE when no plan fits the capacities (proven), UNKNOWN when none
        was found within the time limit.

    With capacities, HiGHS first proves the optimum without them (the region certificate);
    it is the answer when it fits, and a lower bound otherwise. Then, as with pairwise costs,
    branch-and-bound runs on the whole model (the certificate assumes neither).

    Examples
    --------
    >>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
    >>> plan = pick_exact(layered_dag_problem(200, seed=0))
    >>> plan.status, plan.gap
    ('OPTIMAL', 0.0)
    """
    ortools_version = version("ortools")

    started = time.perf_counter()
    if backend is not None and backend not in BACKENDS:
        raise PickerError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    params: dict[str, Any] = {
        "backend": backend,
        "time_limit_s": time_limit_s,
        "seed": seed,
        "num_workers": num_workers,
        "hint": hint,
        "threads": threads,
        "ortools": ortools_version,
    }

    # Data.
    index = index_problem(problem)
    coupled = index.has_memory or index.has_pairwise
    if index.has_memory and backend == "cp-sat":
        raise PickerError("exact picker: the cp-sat backend does not take capacities; use highs")
    solver = backend or (MEMORY_BACKEND if index.has_memory else DEFAULT_BACKEND)
    params["backend"] = solver
    if index.n_units == 0:
        return plan_from_choices(
            problem, index, np.zeros(0, np.int64), picker="exact", status="OPTIMAL",
            started=started, params=params,
        )  # fmt: skip
    if index.n_units == 1 and backend is None and method in METHODS:
        # A trivial problem: trying each choice proves the optimum, and starting a solver was
        # most of `tacopt partition`'s time on a one-unit problem.
        from tacopt.partitioner.pickers.brute import pick_brute

        try:
            tried = pick_brute(problem)
        except NoPlanError as exc:
            raise NoPlanError(
                "exact picker: no plan fits the capacities (every choice of the one unit tried)",
                exc.status,
            ) from None
        params.update(backend=None, method="enumeration", assignments=len(problem.units[0].choices))
        return replace(tried, picker="exact", params=params,
                       seconds=time.perf_counter() - started)  # fmt: skip
    # The region certificate loads scipy's LP solver: only now, when a solver is needed.
    from tacopt.partitioner.pickers.decompose import Certified, certify
    if method not in METHODS:
        raise PickerError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    use_certify = (backend or DEFAULT_BACKEND) == "highs" and method == "decompose"
    use_certify = use_certify and not index.has_pairwise
    if backend is None and method == "decompose" and pairwise_scope(index) is None:
        # Choice costs and pairwise matrices only (an IOPDDL instance): the staged engine.
        params.update(backend="highs", method="engine")
        return _pick_pairwise(problem, index, started, time_limit_s, seed, params,
                              _greedy_plan(index))  # fmt: skip
    model = build_model(index)
    found: Certified | None = None
    if use_certify and not coupled:
        # The certificate needs no starting plan: greedy's is made only if it is not proven.
        found = certify(index, model, started + time_limit_s, seed, threads=threads)
        if found is not None and found.proven:
            params["method"] = "decompose"
            params.update(found.stats, certified=True)
            return plan_from_choices(problem, index, found.chosen, picker="exact",
                                     status="OPTIMAL", started=started, params=params)  # fmt: skip
    warm = _greedy_plan(index)

    # HiGHS first tries to prove the LP's plan region by region (decompose.py); only if
    # that cannot close the gap does branch-and-bound run on the whole model.
    fallback, lp_bound = warm, -math.inf
    params["method"] = "decompose" if use_certify and not coupled else "monolithic"
    if use_certify and index.has_memory:
        # Without the capacities the certificate is fast; that optimum bounds every plan from
        # below, and is the answer when it fits.
        free = replace(index, capacity=np.full(len(index.devices), np.inf))
        found = certify(free, build_model(free), started + time_limit_s, seed, threads=threads)
        if found is not None and found.proven:
            fits = bool(fits_batch(index, found.chosen)[0])
            params["unconstrained_fits"] = fits
            if fits:
                params["method"] = "decompose"
                return plan_from_choices(problem, index, found.chosen, picker="exact",
                                         status="OPTIMAL", started=started, params=params)
        if found is not None:
            lp_bound = found.bound
    if use_certify and not coupled and found is not None:  # not proven (above)
        params.update(found.stats, certified=False)
        best = found.chosen
        if warm is not None and found.objective > _total(index, warm):
            best = warm  # cut short before its plan beat the greedy one
        fallback, lp_bound = best, found.bound

    # CP-SAT works on integers: scale the costs by a power of ten (exact if they have few
    # decimals); the plan's objective is recomputed by evaluate in original units anyway.
    scale, rounding = integer_scale(model.cost) if solver == "cp-sat" else (1.0, 0.0)
    cost = np.round(model.cost * scale) if solver == "cp-sat" else model.cost
    # OR-Tools 9.15 crashes when HiGHS is given a hint, so HiGHS starts cold.
    usable = hint and solver != "highs" and fallback is not None and not coupled
    start = warm_start(model, fallback) if usable and fallback is not None else None
    remaining = max(time_limit_s - (time.perf_counter() - started), 0.0)
    if remaining > 0:
        parameters = solver_parameters(solver, seed, num_workers, tight=index.has_memory,
                                       pairwise=index.has_pairwise)  # fmt: skip
        solution = solve_model(model, cost, solver, remaining, parameters, start)
    else:  # the budget is spent: HiGHS's presolve alone would overrun it by far
        solution = Solution(None, False, -math.inf, "time limit reached before the solve")

    chosen, proven, bound = fallback, False, lp_bound
    if solution.x is not None:
        mine = chosen_choices(index, solution.x[: model.n_choices])
        # The solver's tolerances could leave a plan a few bytes over a capacity: never taken.
        if fits_batch(index, mine)[0] and (
            solution.optimal or _total(index, mine) <= _total(index, fallback)
        ):
            chosen = mine
            proven = solution.optimal and rounding == 0.0
        bound = max(bound, solution.bound / scale - rounding)
    params["solver_status"] = solution.status
    if chosen is None:
        if solution.infeasible:
            raise NoPlanError("exact picker: no plan fits the capacities (the integer program"
                              " is infeasible)", "INFEASIBLE")  # fmt: skip
        raise NoPlanError(f"exact picker: no plan within the capacities found in {time_limit_s:g}"
                          f" s ({solution.status})")  # fmt: skip
    params["scale"] = scale
    return plan_from_choices(
        problem,
        index,
        chosen,
        picker="exact",
        status="OPTIMAL" if proven else "FEASIBLE",
        bound=None if proven else max(bound, 0.0),
        started=started,
        params=params,
    )


def _pick_pairwise(
    problem: PickProblem,
    index: ProblemIndex,
    started: float,
    time_limit_s: float,
    seed: int,
    params: dict[str, Any],
    warm: np.ndarray | None,
) -> Plan:
    """The engine (:mod:`.engine`) on a problem in pairwise form, as a checked plan (never
    dearer than the greedy or the initial plan, when those fit)."""
    from tacopt.partitioner.pickers.engine import solve_pairwise  # scipy and the search stack

    # Room to check the plan and return it within the limit.
    left = time_limit_s - (time.perf_counter() - started)
    deadline = time.monotonic() + left - max(0.3, 0.03 * time_limit_s)
    result = solve_pairwise(index, deadline=deadline, seed=seed)
    params.update(result.info)
    if result.chosen is None:
        if result.infeasible:
            raise NoPlanError(f"exact picker: no plan fits the capacities: {result.reason}",
                              "INFEASIBLE")  # fmt: skip
        raise NoPlanError(f"exact picker: {result.reason} ({time_limit_s:g} s)")
    if not fits_batch(index, result.chosen)[0]:  # the search keeps the limit: never returned
        raise PickerError("exact picker: internal error, a plan over a capacity")
    chosen, objective = result.chosen, evaluate_index(index, result.chosen).total
    for other in (warm, index.initial):  # among plans at 10^18 (forbidden) the engine may lose
        if other is not None and fits_batch(index, other)[0]:
            value = evaluate_index(index, other).total
            if value < objective:
                chosen, objective = other, value
    bound = result.bound
    proven = result.proven and objective < FORBIDDEN
    # Integer costs: a bound within 1 of the objective proves it (compared as integers).
    closed = (index.integral and bound is not None and math.isfinite(bound)
              and objective - math.ceil(bound - 1e-6) < 1)  # fmt: skip
    optimal = proven or closed
    return plan_from_choices(
        problem, index, chosen, picker="exact",
        status="OPTIMAL" if optimal else "FEASIBLE",
        bound=None if optimal or bound is None else max(min(bound, objective), 0.0),
        started=started, params=params,
    )  # fmt: skip


def _greedy_plan(index: ProblemIndex) -> np.ndarray | None:
    """Greedy's plan if it fits the capacities, else None."""
    try:
        warm = greedy_choices(index)
    except NoPlanError:  # greedy found no plan within the capacities; the solver may
        return None
    if index.has_memory and not fits_batch(index, warm)[0]:
        return None  # greedy's step-by-step check can miss what every plan holds (graph inputs)
    return warm


def _total(index: ProblemIndex, chosen: np.ndarray | None) -> float:
    """The objective of ``chosen``; inf for no plan."""
    return math.inf if chosen is None else evaluate_index(index, chosen).total
