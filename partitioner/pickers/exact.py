"""The exact picker: every unit at once, to proven optimality or with its gap at the time limit.

:func:`pick_exact` is the one entry point; it runs the engine's stage list
(:mod:`tacopt.partitioner.pickers.engine`): enumeration of a one-unit problem, the pairwise
stages (reductions, primal search, bounds, proof) on a problem in pairwise form, the LP and its
region certificate (:mod:`~tacopt.partitioner.pickers.decompose`), and branch-and-bound on the
whole integer program (:mod:`~tacopt.partitioner.pickers.formulation`, solved through
:mod:`~tacopt.partitioner.pickers.mip`).
"""

from __future__ import annotations

import time
from importlib.metadata import version
from typing import Any

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.pickers.engine import (
    DEFAULT_BACKEND,
    MEMORY_BACKEND,
    METHODS,
    Run,
    solve,
)
from tacopt.partitioner.pickers.mip import BACKENDS
from tacopt.partitioner.plan import Plan
from tacopt.partitioner.problem import PickProblem, index_problem

__all__ = ["DEFAULT_BACKEND", "MEMORY_BACKEND", "METHODS", "pick_exact"]


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
        The solver: HiGHS (through highspy), SCIP or CP-SAT (through OR-Tools). By default
        HiGHS, and SCIP for branch-and-bound with capacities
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
        Processes the picker may run at once (``tacopt pick --jobs``): the certificate's
        independent integer programs (each on single-threaded HiGHS; the plan does not depend
        on it), and on large problems in pairwise form the primal search's portfolio
        (:mod:`~tacopt.partitioner.pickers.portfolio`).
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
    started = time.perf_counter()
    if backend is not None and backend not in BACKENDS:
        raise PickerError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if method not in METHODS:
        raise PickerError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    index = index_problem(problem)
    if index.has_memory and backend == "cp-sat":
        raise PickerError("exact picker: the cp-sat backend does not take capacities; use highs")
    params: dict[str, Any] = {
        "backend": backend or (MEMORY_BACKEND if index.has_memory else DEFAULT_BACKEND),
        "time_limit_s": time_limit_s,
        "seed": seed,
        "num_workers": num_workers,
        "hint": hint,
        "threads": threads,
        "ortools": version("ortools"),
        "highspy": version("highspy"),
    }
    return solve(Run(problem, index, backend, method, time_limit_s, seed, num_workers, hint,
                     threads, started, params))  # fmt: skip
