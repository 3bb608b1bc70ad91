"""The exact picker: an integer program over all units at once, solved through OR-Tools.

Model (data, variables, constraints, objective), in the words of ``docs/pick-problem.md``:

* ``x[k]`` in {0, 1}: unit ``u`` runs as its choice ``k``. ``y_u(d)`` is the sum of the ``x[k]``
  of ``u``'s choices on device ``d`` and ``z_u(q)`` that of its choices in format ``q``.
* ``need[t, d]`` in [0, 1]: tensor ``t`` is sent to device ``d``; charged once, whatever the
  number of consumers there. ``conv[t, q]`` likewise for formats.
* Facility-location style linking, one row per (consumer, destination):
  ``need[t, d] >= y_v(d) - y_p(d)``. Unlike products or big-M rows, its LP relaxation was
  integral on every synthetic problem where only devices (or only formats) vary.
* Joint rows ``need[t, d] + conv[t, q] >= x_v(d, q) - x_p(d, q)``: without them the LP pairs
  one unit's devices with another's formats (8% of choices fractional on 1,000 units with
  3 devices x 2 types); with them about 4% are, and branch-and-bound closes the rest.
* When per-link prices differ by source device, ``need[t, d]`` is charged the cheapest source
  and ``extra[t, s, d] >= need[t, d] + y_p(s) - 1`` pays the difference.

With HiGHS (the default) the model is not handed to branch-and-bound first: the LP relaxation
is solved and its plan proven optimal region by region
(:mod:`tacopt.partitioner.pickers.decompose`); branch-and-bound on the whole model is the fallback.

The matrix is built with numpy and handed to OR-Tools' model builder in one call
(``fill_model_from_sparse_data``): 0.05 s for 10,000 units, so the time is the solver's.
Joint rows that the device and format rows imply are left out (see ``_needed_pair_rows``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import numpy as np
import scipy.sparse as sp

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.pickers import register_picker
from tacopt.partitioner.pickers.greedy import greedy_choices
from tacopt.partitioner.plan import Plan, evaluate_index, plan_from_choices
from tacopt.partitioner.problem import PickProblem, ProblemIndex, index_problem

# Backend name -> OR-Tools model-builder solver id.
BACKENDS = {"cp-sat": "sat", "scip": "scip", "highs": "highs"}
DEFAULT_BACKEND = "highs"
# "decompose": LP, then a region-by-region certificate (decompose.py), branch-and-bound on
# the whole model only if that leaves a gap; "monolithic": branch-and-bound at once.
METHODS = ("decompose", "monolithic")
_INTEGRAL_TOL = 1e-6


@dataclass(frozen=True, slots=True)
class LinearModel:
    """``min cost @ v`` s.t. ``row_lb <= matrix @ v <= row_ub``, ``0 <= v <= 1``.

    The first ``n_choices`` variables are the choice binaries ``x``; the rest are auxiliary
    (``need``, ``conv``, ``extra``). ``owner[r]`` is the auxiliary variable row ``r`` bounds
    from below (used to complete a warm start).
    """

    cost: np.ndarray
    matrix: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    n_choices: int
    owner: np.ndarray


def pick_exact(
    problem: PickProblem,
    *,
    backend: str = DEFAULT_BACKEND,
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
    backend : {"highs", "scip", "cp-sat"}
        The OR-Tools solver. HiGHS is the default: with the certificate below it proves
        1,000 units in about 0.2 s and 10,000 in about 3 s (``benchmarks/bench_pickers.py``);
        branch-and-bound alone took 0.65 s and 11 s, SCIP 1.1 s and 74 s, and CP-SAT did not
        prove 1,000 units within a minute.
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
        Status OPTIMAL (``bound == objective``) or FEASIBLE (``bound`` and ``gap``).

    Raises
    ------
    PickerError
        For an unknown backend or method.

    Examples
    --------
    >>> from tacopt.benchmarks.synthetic import layered_dag_problem
    >>> plan = pick_exact(layered_dag_problem(200, seed=0))
    >>> plan.status, plan.gap
    ('OPTIMAL', 0.0)
    """
    ortools_version = version("ortools")

    started = time.perf_counter()
    if backend not in BACKENDS:
        raise PickerError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    params = {
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
    warm = greedy_choices(index)
    if index.n_units == 0:
        return plan_from_choices(
            problem, index, warm, picker="exact", status="OPTIMAL", started=started, params=params
        )
    model = build_model(index)

    # HiGHS first tries to prove the LP's plan region by region (decompose.py); only if
    # that cannot close the gap does branch-and-bound run on the whole model.
    fallback, lp_bound = warm, -math.inf
    if method not in METHODS:
        raise PickerError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    use_certify = backend == "highs" and method == "decompose"
    params["method"] = method if backend == "highs" else "monolithic"
    if use_certify:
        from tacopt.partitioner.pickers.decompose import certify

        found = certify(index, model, started + time_limit_s, seed, threads=threads)
        if found is not None:
            params.update(found.stats)
            params["certified"] = found.proven
            best = found.chosen
            if not found.proven and found.objective > evaluate_index(index, warm).total:
                best = warm  # cut short before its plan beat the greedy one
            if found.proven:
                return plan_from_choices(
                    problem,
                    index,
                    best,
                    picker="exact",
                    status="OPTIMAL",
                    started=started,
                    params=params,
                )
            fallback, lp_bound = best, found.bound

    # CP-SAT works on integers: scale the costs by a power of ten (exact if they have few
    # decimals); the plan's objective is recomputed by evaluate in original units anyway.
    scale, rounding = _integer_scale(model.cost) if backend == "cp-sat" else (1.0, 0.0)
    cost = np.round(model.cost * scale) if backend == "cp-sat" else model.cost
    # OR-Tools 9.15 crashes when HiGHS is given a hint, so HiGHS starts cold.
    start = warm_start(model, fallback) if hint and backend != "highs" else None
    remaining = max(time_limit_s - (time.perf_counter() - started), 0.0)
    if remaining > 0:
        parameters = _solver_parameters(backend, seed, num_workers)
        solution = _solve(model, cost, backend, remaining, parameters, start)
    else:  # the budget is spent: HiGHS's presolve alone would overrun it by far
        solution = _Solution(None, False, -math.inf, "time limit reached before the solve")

    chosen, proven, bound = fallback, False, lp_bound
    if solution.x is not None:
        mine = _chosen(index, solution.x[: model.n_choices])
        if (
            solution.optimal
            or evaluate_index(index, mine).total <= evaluate_index(index, fallback).total
        ):
            chosen = mine
        proven = solution.optimal and rounding == 0.0
        bound = max(bound, solution.bound / scale - rounding)
    params["solver_status"] = solution.status
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


@dataclass(frozen=True, slots=True)
class _Solution:
    """What a solve returned: the variable values (None if none), whether they are proven
    optimal, the solver's lower bound (its objective when optimal), its status text and its
    proven dual bound (below the objective by at most the gap tolerance when optimal)."""

    x: np.ndarray | None
    optimal: bool
    bound: float
    status: str
    dual_bound: float = -math.inf


def _solve(
    model: LinearModel,
    cost: np.ndarray,
    backend: str,
    time_limit_s: float,
    parameters: str,
    start: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
) -> _Solution:
    """Solve ``model`` (costs ``cost``) with OR-Tools; ``fixed[k]`` >= 0 pins choice var k."""
    from ortools.linear_solver.python import model_builder_helper as mbh

    # Variables are binaries for choices; the auxiliaries are continuous except for CP-SAT,
    # which needs integers (they are 0 or 1 at any optimum either way).
    n_vars = len(cost)
    lower, upper = np.zeros(n_vars), np.ones(n_vars)
    if fixed is not None:
        pinned = np.flatnonzero(fixed >= 0)
        lower[pinned] = upper[pinned] = fixed[pinned]
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
    # A limit of 0 would mean none: an exhausted budget still gets a token millisecond.
    solver.set_time_limit_in_seconds(max(float(time_limit_s), 1e-3))
    solver.set_solver_specific_parameters(parameters)
    solver.solve(builder)
    status = solver.status()
    text = solver.status_string() or status.name
    if status not in (mbh.SolveStatus.OPTIMAL, mbh.SolveStatus.FEASIBLE) or not (
        solver.has_solution()
    ):
        return _Solution(None, False, -math.inf, text)
    optimal = status == mbh.SolveStatus.OPTIMAL
    dual_bound = solver.best_objective_bound()
    bound = solver.objective_value() if optimal else dual_bound
    values = np.asarray(solver.variable_values())
    return _Solution(values, optimal, bound, text, min(dual_bound, solver.objective_value()))


def _restrict(model: LinearModel, fixed: np.ndarray) -> tuple[LinearModel, np.ndarray]:
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


def build_model(index: ProblemIndex) -> LinearModel:
    """The integer program of ``index`` as sparse arrays (see the module docstring)."""
    n_choices = len(index.choice_cost)
    n_units = index.n_units
    n_fmt = len(index.formats)
    host = np.full(len(index.src_unit), index.host_dev)
    model = _Blocks(index.choice_cost)
    # Every unit runs as exactly one of its choices.
    model.add(index.choice_unit, np.arange(n_choices), np.ones(n_choices), np.ones(n_units))
    # Each tensor pays one transfer per device it must reach and does not start on.
    dev_rows = _linking_rows(index, index.choice_dev, len(index.devices), index.src_dev, host)
    need = _add_need(model, index, dev_rows, index.choice_dev, index.src_dev, index.transfer_cost)
    if index.quant_per_element > 0:
        # Each tensor pays one conversion per format it must reach and does not start in.
        fmt_rows = _linking_rows(index, index.choice_fmt, n_fmt, index.src_fmt, index.host_fmt)
        conv = _add_need(model, index, fmt_rows, index.choice_fmt, index.src_fmt, index.quant_cost)
        # A consumer on (d, q) that its producer is not on needs a transfer to d or a
        # conversion to q: need[t, d] + conv[t, q] >= x_v(d, q) - x_p(d, q). Without this
        # row the LP mixes one unit's devices with another's formats and is not integral.
        joint = index.choice_dev * n_fmt + index.choice_fmt
        pair_rows = _linking_rows(
            index,
            joint,
            len(index.devices) * n_fmt,
            index.src_dev * n_fmt + index.src_fmt,
            host * n_fmt + index.host_fmt,
        )
        pair_rows = _needed_pair_rows(index, pair_rows)
        d, q = np.divmod(pair_rows.kind, n_fmt)
        rows, cols = [pair_rows.rows], [pair_rows.cols]
        for lookup, key in (
            (need, pair_rows.t * len(index.devices) + d),
            (conv, pair_rows.t * n_fmt + q),
        ):
            found, column = lookup(key)
            rows.append(np.flatnonzero(found))
            cols.append(column[found])
        vals = np.concatenate([pair_rows.vals, np.ones(sum(len(r) for r in rows[1:]))])
        model.add(np.concatenate(rows), np.concatenate(cols), vals, pair_rows.lb)
    return model.finish()


def _needed_pair_rows(index: ProblemIndex, pair: _LinkingRows) -> _LinkingRows:
    """The joint rows not implied by the device and format rows.

    A joint row (d, q) of an arc p -> v is implied unless both p and v have choices on several
    devices *and* in several formats. If p is only on d0, ``x_p(d0, q) = z_p(q)`` and the
    format row (``d = d0``) or the device row (``d != d0``, where ``x_p(d, q) = 0``) implies
    it; likewise if p has one format. If v is only in q0 (only its ``(d, q0)`` rows exist),
    the device plus format rows give ``need + conv >= y_v(d) + 1 - y_p(d) - z_p(q0)``, and
    ``y_p(d) + z_p(q0) - x_p(d, q0) <= 1`` (the x of p's choices on d or in q0) makes that at
    least ``x_v(d, q0) - x_p(d, q0)``; a one-device v is symmetric. Graph inputs and outputs
    are fixed (one device, one format). Rows a fixed kind made vacuous were never added.
    """
    several = (_only_kind(index, index.choice_dev) < 0) & (_only_kind(index, index.choice_fmt) < 0)
    keep = (pair.producer >= 0) & (pair.consumer >= 0)
    keep[keep] = several[pair.producer[keep]] & several[pair.consumer[keep]]
    new_row = np.cumsum(keep) - 1
    entry = keep[pair.rows]
    return _LinkingRows(
        n_kind=pair.n_kind,
        t=pair.t[keep],
        kind=pair.kind[keep],
        lb=pair.lb[keep],
        producer=pair.producer[keep],
        consumer=pair.consumer[keep],
        rows=new_row[pair.rows[entry]],
        cols=pair.cols[entry],
        vals=pair.vals[entry],
    )


class _Blocks:
    """Accumulates row blocks and auxiliary variables of a :class:`LinearModel`."""

    def __init__(self, choice_cost: np.ndarray) -> None:
        n_choices = self.n_choices = len(choice_cost)
        self.n_rows = 0
        self.entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.lbs: list[np.ndarray] = []
        self.ubs: list[np.ndarray] = []
        self.costs: list[np.ndarray] = [choice_cost]
        self.owners: list[np.ndarray] = []
        self.n_vars = n_choices

    def new_vars(self, cost: np.ndarray) -> np.ndarray:
        first = self.n_vars
        self.costs.append(cost)
        self.n_vars += len(cost)
        return first + np.arange(len(cost))

    def add(
        self,
        rows: np.ndarray,
        cols: np.ndarray,
        vals: np.ndarray,
        lb: np.ndarray,
        owner: np.ndarray | None = None,
    ) -> None:
        """Rows ``lb <= A x`` (``== 1`` rows when ``owner`` is None and lb is all ones)."""
        self.entries.append((rows + self.n_rows, cols, vals))
        self.lbs.append(lb)
        equality = owner is None and not self.owners
        self.ubs.append(lb.copy() if equality else np.full(len(lb), np.inf))
        self.owners.append(np.full(len(lb), -1) if owner is None else owner)
        self.n_rows += len(lb)

    def finish(self) -> LinearModel:
        rows, cols, vals = (np.concatenate(part) for part in zip(*self.entries))
        matrix = sp.csr_matrix((vals, (rows, cols)), shape=(self.n_rows, self.n_vars))
        return LinearModel(
            np.concatenate(self.costs),
            matrix,
            np.concatenate(self.lbs),
            np.concatenate(self.ubs),
            self.n_choices,
            np.concatenate(self.owners),
        )


@dataclass(frozen=True, slots=True)
class _LinkingRows:
    """Rows ``owner >= y_v(kind) - y_p(kind)``, one per (arc, kind), without their owner."""

    n_kind: int
    t: np.ndarray  # tensor of each row
    kind: np.ndarray  # destination kind of each row
    lb: np.ndarray  # 0, or 1 for a graph output's row to the host
    producer: np.ndarray  # producer unit of each row, -1 for a graph input
    consumer: np.ndarray  # consumer unit of each row, -1 for a graph output's row
    rows: np.ndarray  # x entries (consumer -1, producer +1)
    cols: np.ndarray
    vals: np.ndarray


def _linking_rows(
    index: ProblemIndex,
    kind: np.ndarray,
    n_kind: int,
    src_fixed: np.ndarray,
    sink_kind: np.ndarray,
) -> _LinkingRows:
    """The linking rows of one kind (device, format, or both).

    ``kind[k]`` is the kind of choice ``k``; ``src_fixed[t]`` that of a graph input;
    ``sink_kind[t]`` that of the host for graph outputs. Rows are dropped where the tensor
    can only start on their kind (they could never bind).
    """
    start = index.choice_start
    counts = np.diff(start)[index.arc_unit]
    # Expand every (tensor, consumer) arc into the consumer's choices.
    arc_of = np.repeat(np.arange(len(index.arc_unit)), counts)
    within = np.arange(len(arc_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    k_cons = start[index.arc_unit][arc_of] + within
    # One row per (arc, kind); graph outputs add a row (tensor, host) with constant 1.
    sinks = np.flatnonzero(index.to_host)
    n_arcs = len(index.arc_unit)
    row_key = np.concatenate([arc_of, n_arcs + np.arange(len(sinks))]) * n_kind + np.concatenate(
        [kind[k_cons], sink_kind[sinks]]
    )
    row_keys, row_of_entry = np.unique(row_key, return_inverse=True)
    row_t = np.concatenate([index.arc_tensor, sinks])[row_keys // n_kind]
    row_v = np.concatenate([index.arc_unit, np.full(len(sinks), -1)])[row_keys // n_kind]
    row_d = row_keys % n_kind
    is_sink = row_keys // n_kind >= n_arcs

    producer = index.src_unit[row_t]
    only = _only_kind(index, kind)
    live = np.where(producer >= 0, only[np.maximum(producer, 0)], src_fixed[row_t]) != row_d
    new_row = np.cumsum(live) - 1
    row_t, row_d, is_sink, producer = row_t[live], row_d[live], is_sink[live], producer[live]
    row_v = row_v[live]

    entry_row = row_of_entry[: len(k_cons)]
    keep = live[entry_row]
    cons_rows = new_row[entry_row][keep]
    p_rows, p_choice = _expand_producer(index, np.arange(len(row_t)), producer)
    on_d = kind[p_choice] == row_d[p_rows]
    return _LinkingRows(
        n_kind=n_kind,
        t=row_t,
        kind=row_d,
        lb=is_sink.astype(np.float64),
        producer=producer,
        consumer=row_v,
        rows=np.concatenate([cons_rows, p_rows[on_d]]),
        cols=np.concatenate([k_cons[keep], p_choice[on_d]]),
        vals=np.concatenate([-np.ones(len(cons_rows)), np.ones(int(on_d.sum()))]),
    )


def _add_need(
    model: _Blocks,
    index: ProblemIndex,
    link: _LinkingRows,
    kind: np.ndarray,
    src_fixed: np.ndarray,
    price: Any,
) -> Any:
    """Add ``need[t, d]`` (and ``extra``) variables owning ``link``'s rows; return a lookup.

    ``price(src, dst, t)`` is the cost of one move. ``need[t, d]`` costs the cheapest source
    other than ``d``; ``extra[t, s, d] >= need[t, d] + y_p(s) - 1`` pays for dearer sources.
    The lookup maps keys ``t * n_kind + d`` to (found mask, column).
    """
    n_kind = link.n_kind
    keys, need_of_row = np.unique(link.t * n_kind + link.kind, return_inverse=True)
    need_t, need_d = np.divmod(keys, n_kind)
    producer = index.src_unit[need_t]
    fixed = np.maximum(src_fixed[need_t], 0)
    base = np.where(producer < 0, price(fixed, need_d, need_t), np.inf)
    v_of, v_choice = _expand_producer(index, np.arange(len(need_t)), producer)
    s = kind[v_choice]
    elsewhere = s != need_d[v_of]
    move = price(s, need_d[v_of], need_t[v_of])
    np.minimum.at(base, v_of[elsewhere], move[elsewhere])
    need = model.new_vars(base)
    model.add(
        np.concatenate([np.arange(len(link.t)), link.rows]),
        np.concatenate([need[need_of_row], link.cols]),
        np.concatenate([np.ones(len(link.t)), link.vals]),
        link.lb,
        owner=need[need_of_row],
    )
    dear = elsewhere & (move > base[v_of] + 1e-12)
    if dear.any():
        e_keys, e_of = np.unique(v_of[dear] * n_kind + s[dear], return_inverse=True)
        e_need, e_src = np.divmod(e_keys, n_kind)
        extra = model.new_vars(price(e_src, need_d[e_need], need_t[e_need]) - base[e_need])
        n_e = len(e_keys)
        model.add(
            np.concatenate([np.arange(n_e), np.arange(n_e), e_of]),
            np.concatenate([extra, need[e_need], v_choice[dear]]),
            np.concatenate([np.ones(n_e), -np.ones(n_e), -np.ones(len(e_of))]),
            -np.ones(n_e),
            owner=extra,
        )

    def lookup(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.minimum(np.searchsorted(keys, key), max(len(keys) - 1, 0))
        found = keys[at] == key if len(keys) else np.zeros(len(key), bool)
        return found, need[at] if len(keys) else np.zeros(len(key), np.int64)

    return lookup


def _only_kind(index: ProblemIndex, kind: np.ndarray) -> np.ndarray:
    """Per unit: the kind all its choices share, or -1 if they differ."""
    start = index.choice_start[:-1]
    lo = np.minimum.reduceat(kind, start) if len(kind) else kind
    hi = np.maximum.reduceat(kind, start) if len(kind) else kind
    return np.where(lo == hi, lo, -1)


def _expand_producer(
    index: ProblemIndex, items: np.ndarray, producer: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (item, choice of its producer unit), skipping items whose producer is -1."""
    has = producer >= 0
    items, producer = items[has], producer[has]
    counts = np.diff(index.choice_start)[producer]
    item_of = np.repeat(items, counts)
    within = np.arange(len(item_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    return item_of, index.choice_start[producer].repeat(counts) + within


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


def _chosen(index: ProblemIndex, x: np.ndarray) -> np.ndarray:
    """Each unit's choice from (possibly fractional-looking) binary values: the largest."""
    best = np.maximum.reduceat(x, index.choice_start[:-1])
    is_best = x >= best[index.choice_unit] - 1e-9
    first = np.full(index.n_units, len(x))
    np.minimum.at(first, index.choice_unit, np.where(is_best, np.arange(len(x)), len(x)))
    return first


def _integer_scale(cost: np.ndarray) -> tuple[float, float]:
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


def _solver_parameters(backend: str, seed: int, num_workers: int) -> str:
    if backend == "cp-sat":
        return f"num_workers:{num_workers} random_seed:{seed} log_search_progress:false"
    if backend == "scip":
        return f"randomization/randomseedshift = {seed}\nlp/threads = 1"
    # HiGHS stops at a 0.01% gap by default and calls that optimal; we want a proof.
    return f"output_flag=false\nrandom_seed={seed}\nthreads=1\nmip_rel_gap=0\nmip_abs_gap=1e-6"


register_picker("exact", pick_exact)
