"""The one route to each solver library, and the LP / MIP plumbing shared by the exact picker's
stages: HiGHS through its own bindings (``highspy``: :func:`solve_highs`, the LP with its duals
:func:`solve_lp`), SCIP and CP-SAT through OR-Tools' model builder (:func:`solve_model`);
restricting a :class:`~tacopt.partitioner.pickers.formulation.LinearModel` to a region, warm
starts, and reading the chosen choices back; and the proof race on small problems
(:func:`race`), toulbar2 and the integer program at once, one process each.

**The proof race.** The two proof engines of a small reduced problem (:mod:`.pairwise`) suit
different instances: toulbar2 over every node (:func:`~.windows.prove_whole`, from a plan of the
primal search) proved most memory-tight instances of 60-200 nodes in 0.1-10 s of CPU, the
integer program (:func:`~.pairwise.solve_mip`, its memory rows up front) proved the contest's A
and its dual bound was the closest on the ones neither proved. Run one after the other, each
had a share of the time; here they run at the same time, each in a forked process of its own
(one core each on two cores). The first to prove wins and the other is stopped; without a proof
each engine's plan and lower bound count. toulbar2 is stopped at its end of time by the signal
of its own CPU-time limit and returns its best plan and bound at once (its CPU-time limit alone
ran past a 60 s deadline at load 5-6 on 2 cores, and killing it lost both). An engine that fails
or is stopped at the deadline leaves the other's answer.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError, send_result, worker_result
from tacopt.partitioner.pickers import search, windows
from tacopt.partitioner.pickers.formulation import LinearModel
from tacopt.partitioner.pickers.reduce import Compact
from tacopt.partitioner.problem import ProblemIndex

# Backend name -> OR-Tools model-builder solver id.
BACKENDS = {"cp-sat": "sat", "scip": "scip", "highs": "highs"}


INTEGRAL_TOL = 1e-6


@dataclass(frozen=True, slots=True)
class Solution:
    """What a solve returned: the variable values (None if none), whether they are proven
    optimal, the solver's lower bound (its objective when optimal), its status text and its
    proven dual bound (below the objective by at most the gap tolerance when optimal)."""

    x: np.ndarray | None
    optimal: bool
    bound: float
    status: str
    dual_bound: float = -math.inf
    infeasible: bool = False  # proven: no solution exists
    row_dual: np.ndarray | None = None  # an LP's row duals (solve_highs)


def solve_model(
    model: LinearModel,
    cost: np.ndarray,
    backend: str,
    time_limit_s: float,
    parameters: str,
    start: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
) -> Solution:
    """Solve ``model`` (costs ``cost``) with ``backend``; ``fixed[k]`` >= 0 pins choice var k.

    HiGHS is reached through its own bindings (:func:`solve_highs`), SCIP and CP-SAT through
    OR-Tools' model builder: one route to each solver library.
    """
    # Variables are binaries for choices; the auxiliaries are continuous except for CP-SAT,
    # which needs integers (they are 0 or 1 at any optimum either way).
    n_vars = len(cost)
    lower, upper = np.zeros(n_vars), np.ones(n_vars)
    if fixed is not None:
        pinned = np.flatnonzero(fixed >= 0)
        lower[pinned] = upper[pinned] = fixed[pinned]
    if backend == "highs":  # HiGHS takes no hint here: the greedy plan is the fallback instead
        integer = np.zeros(n_vars, dtype=bool)
        integer[: model.n_choices] = True
        return solve_highs(cost, model.matrix, model.row_lb, model.row_ub, lower, upper,
                           integer, time_limit_s, parameters)  # fmt: skip
    return _solve_ortools(model, cost, backend, time_limit_s, parameters, start, lower, upper)


def solve_highs(
    cost: np.ndarray,
    matrix: Any,
    row_lb: np.ndarray,
    row_ub: np.ndarray,
    col_lb: np.ndarray,
    col_ub: np.ndarray,
    integer: np.ndarray | None,
    time_limit_s: float,
    parameters: str,
    start: np.ndarray | None = None,
) -> Solution:
    """``min cost @ v`` s.t. ``row_lb <= matrix @ v <= row_ub``, ``col_lb <= v <= col_ub``,
    ``v[integer]`` whole, by HiGHS through ``highspy`` (its own Python bindings).

    ``parameters`` are HiGHS options as ``name=value`` lines (:func:`solver_parameters`). Without
    integer variables it is the LP, and the solution carries the row duals (``row_dual``: the
    change of the objective per unit of a row's active bound, >= 0 on a binding lower bound).
    ``start``: values of the first ``len(start)`` columns of a known solution (a MIP start; HiGHS
    completes the other columns), an incumbent from the first node on.
    """
    # highspy (50 ms to import, measured) loads only when a solve starts: a trivial problem
    # never starts one.
    import highspy

    a = matrix.tocsc()
    n_rows, n_cols = a.shape
    lp = highspy.HighsLp()
    lp.num_col_ = lp.a_matrix_.num_col_ = n_cols
    lp.num_row_ = lp.a_matrix_.num_row_ = n_rows
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, col_lb, col_ub
    lp.row_lower_, lp.row_upper_ = row_lb, row_ub
    mip = integer is not None and bool(integer.any())
    if integer is not None and mip:
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[whole] for whole in integer.tolist()]
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    for line in parameters.splitlines():
        option, _, text = line.partition("=")
        if option.strip():
            highs.setOptionValue(option.strip(), text.strip())
    # A limit of 0 would mean none: an exhausted budget still gets a token millisecond.
    highs.setOptionValue("time_limit", max(float(time_limit_s), 1e-3))
    highs.passModel(lp)
    if start is not None and mip:
        highs.setSolution(len(start), np.arange(len(start), dtype=np.int32),
                          np.asarray(start, dtype=np.float64))  # fmt: skip
    highs.run()
    status = highs.getModelStatus()
    said = highs.modelStatusToString(status)
    info = highs.getInfo()
    if info.primal_solution_status != 2:  # no feasible solution (2: kSolutionStatusFeasible)
        infeasible = status == highspy.HighsModelStatus.kInfeasible
        return Solution(None, False, -math.inf, said, infeasible=infeasible)
    optimal = status == highspy.HighsModelStatus.kOptimal
    value = float(info.objective_function_value)
    dual_bound = float(info.mip_dual_bound) if mip else (value if optimal else -math.inf)
    solution = highs.getSolution()
    row_dual = np.asarray(solution.row_dual) if not mip and optimal else None
    return Solution(np.asarray(solution.col_value), optimal, value if optimal else dual_bound,
                    said, min(dual_bound, value), row_dual=row_dual)  # fmt: skip


def _solve_ortools(
    model: LinearModel,
    cost: np.ndarray,
    backend: str,
    time_limit_s: float,
    parameters: str,
    start: np.ndarray | None,
    lower: np.ndarray,
    upper: np.ndarray,
) -> Solution:
    """:func:`solve_model` by SCIP or CP-SAT through OR-Tools' model builder."""
    # OR-Tools' model builder (about 50 ms to import, measured) loads only when SCIP or
    # CP-SAT is asked for; the default route is HiGHS.
    from ortools.linear_solver.python import model_builder_helper as mbh

    n_vars = len(cost)
    builder = mbh.ModelBuilderHelper()
    builder.fill_model_from_sparse_data(  # the stub spells float arrays as ndarray[float64]
        lower,  # type: ignore[arg-type]
        upper,  # type: ignore[arg-type]
        cost,  # type: ignore[arg-type]
        model.row_lb,  # type: ignore[arg-type]
        model.row_ub,  # type: ignore[arg-type]
        model.matrix,
    )
    for var in range(n_vars if backend == "cp-sat" else model.n_choices):
        builder.set_var_integrality(var, True)
    if start is not None:
        for var, value in enumerate(start.tolist()):
            builder.add_hint(var, value)
    solver = mbh.ModelSolverHelper(BACKENDS[backend])
    solver.set_time_limit_in_seconds(max(float(time_limit_s), 1e-3))
    solver.set_solver_specific_parameters(parameters)
    solver.solve(builder)
    status = solver.status()
    text = solver.status_string() or status.name
    if status not in (mbh.SolveStatus.OPTIMAL, mbh.SolveStatus.FEASIBLE) or not (
        solver.has_solution()
    ):
        infeasible = status == mbh.SolveStatus.INFEASIBLE
        return Solution(None, False, -math.inf, text, infeasible=infeasible)
    optimal = status == mbh.SolveStatus.OPTIMAL
    dual_bound = solver.best_objective_bound()
    bound = solver.objective_value() if optimal else dual_bound
    values = np.asarray(solver.variable_values())
    return Solution(values, optimal, bound, text, min(dual_bound, solver.objective_value()))


def solve_lp(
    model: LinearModel, time_limit_s: float
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The LP relaxation of ``model`` by HiGHS's dual simplex, without presolve: variable
    values, row duals (>= 0 on inequality rows, 0 on equality rows) and its value; None if
    not solved to optimality within ``time_limit_s``.

    HiGHS's presolve costs more than it saves on this model (10,000 units: 1.4 s with it,
    1.0 s without; 50,000: 14.2 s and 10.3 s), and without it the duals are those of our own
    rows. The rows reach HiGHS as :func:`scipy.optimize.linprog` would pass them (inequality
    rows negated, then equality rows): the same LP, the same vertex and duals (a test compares
    both), without ``linprog``'s Python loop over the columns (~20 % of an LP of ~8,000
    columns, holding the GIL).
    """
    import scipy.sparse as sp  # loads with the first solve, as highspy does

    if time_limit_s <= 0:
        return None
    equal = model.row_lb == model.row_ub
    matrix = model.matrix.tocsr()
    n_le = int((~equal).sum())
    a = sp.vstack((-matrix[~equal], matrix[equal]))
    n_vars = len(model.cost)
    found = solve_highs(
        model.cost, a,
        np.concatenate((np.full(n_le, -np.inf), model.row_lb[equal])),
        np.concatenate((-model.row_lb[~equal], model.row_lb[equal])),
        np.zeros(n_vars), np.ones(n_vars), None, time_limit_s,
        "presolve=off\nsolver=simplex\nsimplex_strategy=1",
    )  # fmt: skip
    if not found.optimal or found.x is None or found.row_dual is None:
        return None
    y = np.zeros(len(equal))
    # A negated row -A x <= -lb at its bound has a dual <= 0: y is its negation.
    y[~equal] = np.maximum(-found.row_dual[:n_le], 0.0)
    return found.x, y, found.bound


def restrict(model: LinearModel, fixed: np.ndarray) -> tuple[LinearModel, np.ndarray]:
    """``model`` with choice variables ``fixed[k] >= 0`` pinned to that value, and the
    original column of each remaining variable. Rows that hold whatever the free variables
    are, and auxiliaries left in no row (cost >= 0, so 0 is best), are dropped."""
    n_vars = len(model.cost)
    pinned = np.zeros(n_vars, dtype=bool)
    pinned[: model.n_choices] = fixed >= 0
    values = np.zeros(n_vars)
    values[: model.n_choices] = np.maximum(fixed, 0.0)
    matrix = model.matrix.tocsc()
    lb = model.row_lb - matrix[:, pinned] @ values[pinned]
    ub = model.row_ub - matrix[:, pinned] @ values[pinned]
    free = matrix[:, ~pinned].tocsr()
    low = free.minimum(0) @ np.ones(free.shape[1])
    high = free.maximum(0) @ np.ones(free.shape[1])
    rows = np.flatnonzero((lb > low + 1e-9) | (ub < high - 1e-9))
    kept = free[rows]
    used = np.zeros(kept.shape[1], dtype=bool)
    used[kept.indices] = True
    columns = np.flatnonzero(~pinned)
    n_choices = int((~pinned[: model.n_choices]).sum())
    used[:n_choices] = True  # choice columns stay, in order, first
    columns = columns[used]
    sub = LinearModel(
        model.cost[columns],
        kept[:, used].tocsr(),
        lb[rows],
        ub[rows],
        n_choices,
        np.full(len(rows), -1),
    )
    return sub, columns


def warm_start(model: LinearModel, chosen: np.ndarray) -> np.ndarray:
    """A full solution vector for a choice assignment: the cheapest auxiliaries that fit."""
    values = np.zeros(len(model.cost))
    values[chosen] = 1.0
    linking = model.owner >= 0
    owner = model.owner[linking]
    matrix = model.matrix[linking]
    # Two passes: need rows read only choices; extra rows also read need.
    for _ in range(2):
        activity = matrix @ values - values[owner]
        required = np.maximum(model.row_lb[linking] - activity, 0.0)
        np.maximum.at(values, owner, required)
    return values


def chosen_choices(index: ProblemIndex, x: np.ndarray) -> np.ndarray:
    """Each unit's choice from (possibly fractional-looking) binary values: the largest."""
    best = np.maximum.reduceat(x, index.choice_start[:-1])
    is_best = x >= best[index.choice_unit] - 1e-9
    first = np.full(index.n_units, len(x))
    np.minimum.at(first, index.choice_unit, np.where(is_best, np.arange(len(x)), len(x)))
    return first


def integer_scale(cost: np.ndarray) -> tuple[float, float]:
    """A power of ten making the costs integers, and the rounding error it leaves (0: exact)."""
    total = float(np.abs(cost).sum()) or 1.0
    scale = 1.0
    for _ in range(9):
        scaled = cost * scale
        if np.allclose(scaled, np.round(scaled), rtol=0, atol=1e-9 * scale):
            return scale, 0.0
        if total * scale * 10 > 2.0**52:
            break
        scale *= 10
    return scale, float(np.abs(np.round(cost * scale) - cost * scale).sum() / scale)


def solver_parameters(
    backend: str, seed: int, num_workers: int, *, tight: bool = False, pairwise: bool = False
) -> str:
    """The backend's parameter text; ``tight`` asks for 1e-9 feasibility and integrality
    tolerances (capacity rows: a relative 1e-6 of 32 MiB is 33 bytes over).

    ``pairwise`` (a model with pairwise costs) turns SCIP's weak dual reductions off. With them,
    the SCIP 10.0.0 of OR-Tools 9.15 proved cost 1 optimal on a 21-variable model of cost 0
    (an ``@example`` of ``tests/partitioner/test_pickers.py``, found by hypothesis); without
    them, or without probing, or without the pseudo-objective propagator, it finds 0, and the
    same model written as MPS and solved by PySCIPOpt's SCIP 10.0 gives 0 with or without them.
    They stay on otherwise: off, 5 of the memory study's 9 slowest per-op cases lost their proof
    within 30 s (``keras__xception_int8`` at 50 %: proven in 20.8 s with them).
    """
    if backend == "cp-sat":
        # CP-SAT's own Ctrl-C handler puts back the default one when the solve ends (OR-Tools'
        # SigintHandler), after which Ctrl-C killed the process instead of raising
        # KeyboardInterrupt: the command's exit 130 and all-or-nothing outputs were lost.
        return (f"num_workers:{num_workers} random_seed:{seed} log_search_progress:false"
                " catch_sigint_signal:false")  # fmt: skip
    if backend == "scip":
        text = f"randomization/randomseedshift = {seed}\nlp/threads = 1"
        text += "\nmisc/allowweakdualreds = FALSE" if pairwise else ""
        return text + "\nnumerics/feastol = 1e-9" if tight else text
    # HiGHS stops at a 0.01% gap by default and calls that optimal; we want a proof.
    text = f"output_flag=false\nrandom_seed={seed}\nthreads=1\nmip_rel_gap=0\nmip_abs_gap=1e-6"
    tolerances = "\nprimal_feasibility_tolerance=1e-9\nmip_feasibility_tolerance=1e-9"
    return text + tolerances if tight else text


# The proof race (module docstring).

#: The share of the race's time (at least :data:`SEND_S` seconds) kept back from the engines'
#: own limits for sending their answers before the deadline (HiGHS may overrun its limit).
SEND_SHARE = 0.08
SEND_S = 1.5


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one proof engine returned: its best plan within the limit (None: none better than
    the plan it started from, or none at all), a lower bound of the problem's objective
    (``-inf``: none), whether it proved its plan (or the starting plan) optimal, its wall
    seconds, and a note (``"stopped"``, ``"failed: ..."`` or the solver's status)."""

    engine: str
    x: np.ndarray | None
    bound: float
    proven: bool
    seconds: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class Engine:
    """A proof engine: its name, ``run(c, nb, x, seconds) -> Attempt``, and the signal that
    makes it return what it has at once (None: it keeps its own limit)."""

    name: str
    run: Callable[[Compact, search.Neighbourhood, np.ndarray, float], Attempt]
    stop_signal: int | None = None


class _Stop(Exception):
    """The stop signal came before toulbar2's search began (while its network was built)."""


def _stop(signum: int, frame: Any) -> None:
    raise _Stop


def _toulbar2(c: Compact, nb: search.Neighbourhood, x: np.ndarray, seconds: float) -> Attempt:
    t = time.monotonic()
    # Until toulbar2's search sets its own handler, the signal's default would end the process
    # (a 300-node problem's network took 13 s at load 6): stop here with nothing instead.
    signal.signal(signal.SIGVTALRM, _stop)
    try:
        y, proven, bound = windows.prove_whole(c, nb, x, max(1, int(seconds)))
    except _Stop:
        return Attempt("toulbar2", None, -math.inf, False, time.monotonic() - t,
                       "stopped before its search")  # fmt: skip
    return Attempt("toulbar2", y, bound, proven, time.monotonic() - t)


#: toulbar2 over every node from the plan (:func:`~.windows.prove_whole`), its bound toulbar2's
#: global dual bound; SIGVTALRM is its CPU-time limit's signal.
TOULBAR2 = Engine("toulbar2", _toulbar2, signal.SIGVTALRM)


def race(
    c: Compact,
    nb: search.Neighbourhood,
    x: np.ndarray,
    deadline: float,
    engines: tuple[Engine, ...],
) -> list[Attempt]:
    """Every engine on ``c`` from ``x`` (which fits) at once, each in a forked process, until
    one proves optimality (the others are then stopped) or ``deadline`` (monotonic seconds).
    At their end of time (:data:`SEND_SHARE` before the deadline) engines with a stop signal
    get it; what they send after it is not a proof (it may be cut short), but its plan and
    bound count.

    Parameters
    ----------
    c, nb
        The reduced problem and its neighbourhood (:func:`~.search.neighbourhood`).
    x
        A plan within the limit: the engines' start (toulbar2 prunes by its cost).
    deadline
        When every engine still running is killed.
    engines
        :data:`TOULBAR2`, the integer program (:data:`~.pairwise.INTEGER_PROGRAM`), ..., in the
        order ties are broken (two proofs in one poll).

    Returns
    -------
    list of Attempt
        One per engine, in the order of ``engines``: what it returned, or an attempt with no
        plan and no bound noted ``"stopped"`` (stopped at the deadline or after another's
        proof) or ``"failed: ..."`` (its error on one line).

    Examples
    --------
    >>> from tacopt.partitioner.problem.contest_like import memory_tight
    >>> from tacopt.partitioner.problem.contest import problem_from_dict
    >>> from tacopt.partitioner.problem import index_problem
    >>> from tacopt.partitioner.pickers.reduce import reduce_problem
    >>> c = reduce_problem(index_problem(problem_from_dict(memory_tight(12, seed=1))))
    >>> nb = search.neighbourhood(c)
    >>> out = race(c, nb, search.lowest_usage(c, nb), time.monotonic() + 20.0, (TOULBAR2,))
    >>> [(a.engine, a.proven) for a in out]
    [('toulbar2', True)]
    """
    t0 = time.monotonic()
    end = deadline - max(SEND_S, SEND_SHARE * (deadline - t0))
    ctx = mp.get_context("fork")
    running: dict[Any, tuple[int, Any]] = {}
    out: list[Attempt | None] = [None] * len(engines)
    stopped: set[int] = set()  # engines sent their stop signal
    signalled = False
    for i, engine in enumerate(engines):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(engine.run, (c, nb, x, max(0.1, end - t0)), send),
                           daemon=True)  # fmt: skip
        proc.start()
        send.close()
        running[receive] = (i, proc)
    try:
        while running and not any(a is not None and a.proven for a in out):
            now = time.monotonic()
            if now >= end and not signalled:
                signalled = True
                for i, proc in running.values():
                    signum = engines[i].stop_signal
                    if signum is not None:
                        os.kill(proc.pid, signum)
                        stopped.add(i)
            wake = end if now < end else deadline
            ready = wait(list(running), timeout=max(0.0, wake - now))
            if not ready and now >= end:
                break  # the deadline
            for conn in sorted(ready, key=lambda r: running[r][0]):  # ties: engine order
                i, proc = running.pop(conn)
                out[i] = _received(engines[i].name, conn, time.monotonic() - t0,
                                   i in stopped)  # fmt: skip
                conn.close()  # type: ignore[union-attr]
                proc.join()
    finally:
        for conn, (i, proc) in running.items():  # the losers and the ones out of time
            proc.kill()
            proc.join()
            conn.close()
            out[i] = Attempt(engines[i].name, None, -math.inf, False, time.monotonic() - t0,
                             "stopped")  # fmt: skip
    return [a for a in out if a is not None]


def _received(name: str, receive: Any, seconds: float, cut_short: bool) -> Attempt:
    """The engine's attempt from its pipe (``cut_short``: sent after its stop signal, so not
    a proof); a failure, or a process that died without sending, becomes an attempt with
    nothing, so the other engine's answer stands."""
    try:
        got = worker_result(receive.recv())
    except PickerError as exc:
        return Attempt(name, None, -math.inf, False, seconds, f"failed: {exc}")
    except (EOFError, OSError):
        return Attempt(name, None, -math.inf, False, seconds, "failed: no answer")
    if cut_short:
        return Attempt(got.engine, got.x, got.bound, False, got.seconds, "stopped at its end")
    return got


def _child(run: Callable[..., Attempt], args: tuple, send: Any) -> None:
    try:
        send_result(send, lambda: run(*args))
    finally:
        send.close()


def best_of(c: Compact, x: np.ndarray, attempts: list[Attempt]) -> tuple[np.ndarray, float, bool]:
    """The cheapest plan among ``x`` and the attempts' (ties: ``x``, then engine order), the
    best lower bound (its cost when proven; ``-inf``: none), and whether it is proven optimal:
    an engine proved it, or a bound reaches its cost."""
    best, value = x, float(search.objective(c, x))
    for a in attempts:
        if a.x is not None and search.objective(c, a.x) < value:
            best, value = a.x, float(search.objective(c, a.x))
    bound = max([a.bound for a in attempts] + [-math.inf])
    proven = any(a.proven for a in attempts) or bound >= value - 1e-6 * max(1.0, abs(value))
    return best, (value if proven else min(bound, value)), proven
