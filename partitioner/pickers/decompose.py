"""Certified decomposition: the exact picker's fast path for large problems.

The LP relaxation of the pick problem (see :mod:`tacopt.partitioner.pickers.exact`) is integral on
almost every unit: on the synthetic layered DAGs, 1 to 6 % of the units are fractional, in
small clusters. Branch-and-bound over the whole model spends its time proving what is true
almost everywhere. This module proves it region by region instead.

1. **LP.** Solve the relaxation (HiGHS dual simplex, ``mip.solve_lp``): values ``x`` and row
   duals ``y``; its value ``L`` is a lower bound. On large problems whose rows each span few
   consecutive units, overlapping windows of units are solved instead, on both cores, and
   their values and duals stitched (any ``y >= 0`` serves the bound below; ``L`` is then
   the Lagrangian bound of the stitched duals).
2. **Regions.** The fractional units, grown by ``hops`` steps in the unit interaction graph
   (units that share a row or an auxiliary variable), fall into connected *regions*.
3. **Lower bound (Lagrangian).** Every row that leaves a region (or touches a unit outside
   all regions) is moved into the objective with its LP dual as multiplier. What is left
   splits: each region is a small integer program on penalized costs, each other unit picks
   its cheapest penalized choice, each other auxiliary variable sits at the cheaper of its
   bounds. For ``y >= 0`` the sum of these minima plus ``y @ b`` is a valid lower bound on
   the optimum (weak duality), and it is at least ``L`` because the region programs are
   solved as integer programs. Region bounds are HiGHS's proven bounds.
4. **Plan.** The units outside the regions keep their (integral) LP choice; the regions are
   re-solved as the true integer program with the rest pinned (RENS on a neighbourhood).
5. **Certificate or growth.** If the plan's objective ``U`` meets the bound (``U - LB <=
   tolerance``) the plan is proven optimal. Otherwise ``U - LB`` is a sum of non-negative
   terms -- dualized rows the plan leaves slack although their multiplier is positive, units
   and auxiliaries the plan does not set at their penalized minimum, regions whose plan part
   is not their penalized optimum -- and the units behind the largest terms join the regions
   (plus a neighbourhood). Only regions whose unit set changed are solved again.

When regions stop growing, cover half the units, or time runs out, the caller falls back to
branch-and-bound on the whole model with the best plan and bound found here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from tacopt.partitioner.pickers.formulation import LinearModel
from tacopt.partitioner.pickers.mip import (
    INTEGRAL_TOL,
    chosen_choices,
    restrict,
    solve_lp,
    solve_model,
    solver_parameters,
    warm_start,
)
from tacopt.partitioner.plan import evaluate_index
from tacopt.partitioner.problem import ProblemIndex

# A plan is proven optimal when its objective exceeds the lower bound by at most
# REL_TOL * |objective| + ABS_TOL per integer program whose bound entered the sum (HiGHS
# proves each of them to an absolute gap of 1e-6).
REL_TOL = 1e-9
ABS_TOL = 1e-6
MAX_ROUNDS = 40
# Problems of at least 4 windows solve their LP in windows of WINDOW_UNITS consecutive units
# with WINDOW_MARGIN more on each side, unless more than WINDOW_LONG_ROWS of the rows span
# more units than the margin. HiGHS's dual simplex costs more per iteration on larger LPs:
# 1,200 units take 21 us an iteration, 10,000 units 61 us, at ~3.9 iterations per unit, and
# the windows' LPs give the same choices as the whole LP on the layered DAGs.
WINDOW_UNITS = 1000
WINDOW_MARGIN = 100
WINDOW_LONG_ROWS = 1e-3


@dataclass
class Certified:
    """What the decomposition found: a plan (choice per unit), a proven lower bound, whether
    the two meet, and counters for the plan's ``params``."""

    chosen: np.ndarray
    objective: float
    bound: float
    proven: bool
    stats: dict[str, Any] = field(default_factory=dict)


def certify(
    index: ProblemIndex,
    model: LinearModel,
    deadline: float,
    seed: int,
    *,
    hops: int | None = None,
    max_share: float = 0.5,
    threads: int = 2,
    window: tuple[int, int] = (WINDOW_UNITS, WINDOW_MARGIN),
) -> Certified | None:
    """Run the decomposition (module docstring) until proven, stuck or ``deadline``.

    ``threads`` integer programs of a round are solved at a time (each by single-threaded
    HiGHS; the result does not depend on ``threads``). On problems of at least four
    ``window = (units, margin)``, the LP is solved window by window (:func:`_window_lp`).
    ``hops`` (default: 1 when the LP is solved whole, else 0) steps of neighbours join the
    fractional units before the first round.

    Returns None when the LP does not finish in time.
    """
    started = time.perf_counter()
    windows = _windows(index, model, *window)
    # HiGHS's feasibility-jump heuristic costs these small programs a quarter of their time
    # (10,000 units: region programs 2.1 -> 1.5 s) and finds nothing branching does not.
    parameters = solver_parameters("highs", seed, 1) + "\nmip_heuristic_run_feasibility_jump=false"
    with ThreadPoolExecutor(max_workers=max(threads, 1)) as pool:
        # The unit structure is built on one thread while the LP (or its windows) starts.
        building = pool.submit(_Structure, index, model)
        lp = _lp(model, deadline) if windows is None else _window_lp(index, model, windows,
                                                                     deadline, pool)  # fmt: skip
        structure = building.result()
        if lp is None:
            return None
        x_lp, y, lp_value = lp
        n_choices, n_units = model.n_choices, index.n_units
        stats: dict[str, Any] = {"lp_s": round(time.perf_counter() - started, 3)}
        stats["lp_bound"] = lp_value
        if windows is not None:
            stats["lp_windows"] = len(windows)
        x = x_lp[:n_choices]
        fractional = (x > INTEGRAL_TOL) & (x < 1 - INTEGRAL_TOL)
        selected = np.zeros(n_units, dtype=bool)
        selected[index.choice_unit[fractional]] = True
        stats["fractional_units"] = int(selected.sum())

        # One step of neighbours often closes a small problem in one round; on large ones the
        # regions stay smaller without it (50,000 units: 16 against 19 CPU seconds of programs).
        for _ in range((1 if windows is None else 0) if hops is None else hops):
            selected |= structure.neighbours(selected)
        pinned = np.round(x)
        region_cache: dict[bytes, float] = {}
        region_plan: dict[bytes, np.ndarray] = {}
        piece_cache: dict[bytes, np.ndarray] = {}
        best_chosen, best_value, bound = chosen_choices(index, x), math.inf, lp_value
        rounds = 0
        proven = False

        def solve(build: Callable[[], LinearModel]) -> tuple[LinearModel, Any]:
            # The program is built on the worker too: its slicing (Python, under the GIL) then
            # overlaps the other worker's HiGHS solve (which releases the GIL).
            program = build()
            remaining = max(deadline - time.perf_counter(), 0.0)
            return program, solve_model(program, program.cost, "highs", remaining, parameters)

        def submit(tasks: list[_Task]) -> list[Future[tuple[LinearModel, Any]]]:
            # Independent programs, solved concurrently (each solve is single-threaded and
            # deterministic, so the result does not depend on the number of threads), largest
            # first so that no thread is left alone with a long one at the end.
            order = sorted(range(len(tasks)), key=lambda i: -tasks[i].size)
            futures = {i: pool.submit(solve, tasks[i].build) for i in order}
            return [futures[i] for i in range(len(tasks))]

        while True:
            rounds += 1
            part = structure.partition(selected, y)
            region_tasks = _region_tasks(model, part, region_cache)
            region_futures = submit(region_tasks)
            # The plan's pieces depend only on the selected units: found while the regions solve.
            pieces = _plan_pieces(index, model, selected, pinned)
            for task, future in zip(region_tasks, region_futures, strict=True):
                program, solution = future.result()
                region_cache[task.key] = solution.dual_bound
                if solution.x is not None:
                    region_plan[task.key] = solution.x[: program.n_choices]
            lower = part.constant + _region_bounds(part, region_cache)
            bound = max(bound, lower)
            # The regions' own solutions, where they leave no term of U - LB (module
            # docstring, step 4), are already the best plan there: only the other pieces
            # of the plan's integer program are solved.
            tolerance = REL_TOL * abs(min(best_value, bound)) + ABS_TOL * (1 + len(part.regions))
            proposal = _proposal(part, pinned[:n_choices], region_plan)
            x_prop = warm_start(model, chosen_choices(index, proposal))
            offenders = structure.offenders(part, y, x_prop, tolerance / 10, spread=True)
            offenders |= structure.short_regions(part, x_prop, tolerance / 10)
            values, plan_tasks = _plan_tasks(pieces, piece_cache, proposal, offenders, part.region)
            for task, future in zip(plan_tasks, submit(plan_tasks), strict=True):
                program, solution = future.result()
                if solution.x is None:  # out of time: the LP's largest choice stays
                    continue
                x_piece = solution.x[: program.n_choices]
                values[task.choice_columns] = x_piece
                piece_cache[task.key] = x_piece
            stats["plan_programs"] = stats.get("plan_programs", 0) + len(plan_tasks)
            chosen = chosen_choices(index, values)
            value = evaluate_index(index, chosen).total
            if value < best_value:
                best_chosen, best_value = chosen, value
            tolerance = REL_TOL * abs(best_value) + ABS_TOL * (1 + len(part.regions))
            if best_value - bound <= tolerance:
                proven = True
                break
            if time.perf_counter() >= deadline or rounds >= MAX_ROUNDS:
                break
            grown = structure.grow(selected, part, y, warm_start(model, best_chosen), tolerance)
            if grown.sum() == selected.sum() or grown.sum() > max_share * n_units:
                break
            selected = grown
    stats.update(
        rounds=rounds,
        region_units=int(selected.sum()),
        regions_solved=len(region_cache),
        certify_s=round(time.perf_counter() - started, 3),
    )
    return Certified(best_chosen, best_value, bound, proven, stats)


def _windows(
    index: ProblemIndex, model: LinearModel, size: int, margin: int
) -> list[_Window] | None:
    """Windows of ``size`` consecutive units, ``margin`` more each side, whose LPs stand in for
    the whole one; None for fewer than four windows or rows that span more than ``margin``."""
    n_units = index.n_units
    if n_units < 4 * size:
        return None
    matrix = model.matrix.tocoo()
    choice = matrix.col < model.n_choices
    unit = index.choice_unit[matrix.col[choice]]
    lo = np.full(matrix.shape[0], n_units)
    hi = np.full(matrix.shape[0], -1)
    np.minimum.at(lo, matrix.row[choice], unit)
    np.maximum.at(hi, matrix.row[choice], unit)
    if np.any(hi < 0) or np.mean(hi - lo > margin) > WINDOW_LONG_ROWS:
        return None
    windows = []
    for start in range(0, n_units, size):
        stop = min(start + size, n_units)
        low, high = max(start - margin, 0), stop + margin
        rows = np.flatnonzero((lo >= low) & (hi < high))
        home = (hi[rows] >= start) & (hi[rows] < stop)
        windows.append(_Window(start, stop, low, min(high, n_units), rows, home))
    return windows


@dataclass(frozen=True)
class _Window:
    """Units ``[start, stop)`` take their LP values from the LP over units ``[low, high)`` and
    the ``rows`` within them; the rows marked ``home`` (their last unit in ``[start, stop)``)
    take their duals from it."""

    start: int
    stop: int
    low: int
    high: int
    rows: np.ndarray
    home: np.ndarray


def _window_lp(
    index: ProblemIndex,
    model: LinearModel,
    windows: list[_Window],
    deadline: float,
    pool: ThreadPoolExecutor,
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The LP's stand-in from overlapping windows of units (on ``pool``): each unit's
    values and each row's dual from the window it is at home in, and the Lagrangian bound of
    those duals (valid for any duals >= 0, and close to the LP's value: the windows overlap
    by more than the rows' spans, so their LPs agree with the whole one away from the ends).
    """
    matrix = model.matrix.tocsr()
    n_choices = model.n_choices
    x = np.zeros(len(model.cost))
    y = np.zeros(matrix.shape[0])

    def solve(window: _Window) -> tuple[np.ndarray, np.ndarray] | None:
        lo, hi = index.choice_start[window.low], index.choice_start[window.high]
        sub = matrix[window.rows]
        columns = np.union1d(np.arange(lo, hi), sub.indices[sub.indices >= n_choices])
        program = _sub_model(model, window.rows, columns, model.cost[columns])
        found = _lp(program, deadline)
        if found is None:
            return None
        own = slice(index.choice_start[window.start] - lo, index.choice_start[window.stop] - lo)
        return found[0][own], found[1]

    solved = list(pool.map(solve, windows))
    for window, found in zip(windows, solved, strict=True):
        if found is None:
            return None
        x[index.choice_start[window.start] : index.choice_start[window.stop]] = found[0]
        y[window.rows[window.home]] = found[1][window.home]
    equal = model.row_lb == model.row_ub
    y[~equal] = np.maximum(y[~equal], 0.0)
    y[equal] = 0.0
    # The Lagrangian bound with every inequality row priced (the unit rows kept).
    penalized = model.cost - matrix.T @ y
    unit_min = np.minimum.reduceat(penalized[:n_choices], index.choice_start[:-1])
    bound = float(y @ model.row_lb + unit_min.sum() + np.minimum(penalized[n_choices:], 0).sum())
    return x, y, bound  # the auxiliaries' values are not read


@dataclass
class _Partition:
    """Regions of one round: ``region[u]`` (-1 outside), per-column region (-1: a unit
    outside, -2: an auxiliary on its own), kept rows, penalized costs and the constant part
    of the bound (``y @ b`` of dualized rows + the minima of everything outside regions)."""

    region: np.ndarray
    column_region: np.ndarray
    regions: list[tuple[np.ndarray, np.ndarray]]  # (columns, kept rows) per region
    dualized: np.ndarray
    penalized: np.ndarray
    unit_min: np.ndarray
    lone_aux: np.ndarray
    constant: float
    bounds: np.ndarray = field(default_factory=lambda: np.zeros(0))  # set by _region_bounds


class _Structure:
    """The model's sparsity seen through units: who interacts with whom, and the partition
    of rows and columns that a set of selected units induces."""

    def __init__(self, index: ProblemIndex, model: LinearModel) -> None:
        self.index, self.model = index, model
        matrix = model.matrix.tocsr()
        self.matrix = matrix
        n_rows, n_vars = matrix.shape
        n_choices = model.n_choices
        self.row_of_entry = np.repeat(np.arange(n_rows), np.diff(matrix.indptr))
        self.col_of_entry = matrix.indices
        is_choice = self.col_of_entry < n_choices
        self.is_choice_entry = is_choice
        ones = np.ones(int(is_choice.sum()))
        row_unit = sp.csr_matrix(
            (ones, (self.row_of_entry[is_choice], index.choice_unit[self.col_of_entry[is_choice]])),
            shape=(n_rows, index.n_units),
        )
        row_unit.data[:] = 1.0
        self.row_unit = row_unit
        # Units interact through a row, or through an auxiliary variable they share (a
        # tensor's need[t, d] is shared by all its consumers).
        aux_row = (matrix[:, n_choices:] != 0).astype(np.float64).T.tocsr()
        aux_unit = aux_row @ row_unit
        aux_unit.data[:] = 1.0
        adjacency = (row_unit.T @ row_unit + aux_unit.T @ aux_unit).tocsr()
        adjacency.data[:] = 1.0
        self.adjacency = adjacency
        self.columns = matrix.tocsc()
        self.equal = model.row_lb == model.row_ub

    def neighbours(self, selected: np.ndarray) -> np.ndarray:
        return np.asarray(self.adjacency @ selected.astype(np.float64) > 0)

    def partition(self, selected: np.ndarray, y: np.ndarray) -> _Partition:
        index, model, matrix = self.index, self.model, self.matrix
        n_rows, n_vars = matrix.shape
        n_choices = model.n_choices
        sub = self.adjacency[selected][:, selected]
        n_regions, label = connected_components(sub, directed=False)
        region = np.full(index.n_units, -1)
        region[np.flatnonzero(selected)] = label

        column_region = np.full(n_vars, -2)
        column_region[:n_choices] = region[index.choice_unit]
        # An auxiliary belongs to a region if every choice in every one of its rows does.
        choice = self.is_choice_entry
        row_region = _common_group(
            self.row_of_entry[choice], column_region[self.col_of_entry[choice]], n_rows
        )
        aux = ~choice
        aux_region = _common_group(
            self.col_of_entry[aux], row_region[self.row_of_entry[aux]], n_vars
        )[n_choices:]
        column_region[n_choices:] = np.where(aux_region >= 0, aux_region, -2)
        # A row is kept inside a region if all its columns are in it; a unit's one-choice
        # row is never dualized (units outside regions take their cheapest choice).
        row_region = _common_group(self.row_of_entry, column_region[self.col_of_entry], n_rows)
        inside = row_region >= 0
        dualized = ~(inside | self.equal)
        penalized = model.cost - matrix[dualized].T @ y[dualized]
        unit_min = np.minimum.reduceat(penalized[:n_choices], index.choice_start[:-1])
        lone_aux = np.flatnonzero(column_region[n_choices:] == -2) + n_choices
        constant = (
            float(y[dualized] @ model.row_lb[dualized])
            + float(unit_min[region < 0].sum())
            + float(np.minimum(penalized[lone_aux], 0.0).sum())
        )
        # A unit's one-choice row has all its columns in the unit's region (or none).
        row_groups = _members(row_region, n_regions)
        col_groups = _members(column_region, n_regions)
        return _Partition(
            region,
            column_region,
            list(zip(col_groups, row_groups, strict=True)),
            dualized,
            penalized,
            unit_min,
            lone_aux,
            constant,
        )

    def offenders(self, part: _Partition, y: np.ndarray, x_hat: np.ndarray, eps: float,
                  *, spread: bool = False) -> np.ndarray:  # fmt: skip
        """The units behind the terms of ``U - LB`` above ``eps`` for the plan ``x_hat``
        (module docstring, step 5), but for regions above their bound
        (:meth:`short_regions`)."""
        index, model = self.index, self.model
        n_choices = model.n_choices
        offenders = np.zeros(index.n_units, dtype=bool)
        # Dualized rows left slack by the plan while their multiplier is positive.
        slack = self.matrix @ x_hat - model.row_lb
        loose = part.dualized & (y * slack > eps)
        entries = self.is_choice_entry & loose[self.row_of_entry]
        offenders[index.choice_unit[self.col_of_entry[entries]]] = True
        if spread:
            # ... and the units whose choices set the auxiliaries in those rows (a tensor's
            # need[t, d] is set by all its consumers, also those outside the row).
            aux = self.col_of_entry[~self.is_choice_entry & loose[self.row_of_entry]]
            rows = np.zeros(self.matrix.shape[0], dtype=bool)
            rows[self.columns[:, np.unique(aux)].indices] = True
            offenders |= np.asarray(self.row_unit[rows].sum(axis=0)).ravel() > 0
        # Units outside regions not at their penalized minimum.
        chosen = np.flatnonzero(x_hat[:n_choices] > 0.5)
        excess = np.zeros(index.n_units)
        excess[index.choice_unit[chosen]] = part.penalized[chosen]
        offenders |= (part.region < 0) & (excess - part.unit_min > eps)
        # Lone auxiliaries above their minimum: the units of their rows.
        aux = part.lone_aux
        above = aux[part.penalized[aux] * x_hat[aux] - np.minimum(part.penalized[aux], 0) > eps]
        if len(above):
            rows = np.zeros(self.matrix.shape[0], dtype=bool)
            rows[self.columns[:, above].indices] = True
            offenders |= np.asarray(self.row_unit[rows].sum(axis=0)).ravel() > 0
        return offenders

    def short_regions(self, part: _Partition, x_hat: np.ndarray, eps: float) -> np.ndarray:
        """Per unit: its region's part of ``x_hat`` is above the region's bound."""
        if not part.regions:
            return np.zeros(len(part.region), dtype=bool)
        in_region = part.column_region >= 0
        value = np.bincount(part.column_region[in_region], (part.penalized * x_hat)[in_region],
                            minlength=len(part.regions))  # fmt: skip
        short = value - part.bounds > eps
        return (part.region >= 0) & short[np.maximum(part.region, 0)]

    def grow(
        self,
        selected: np.ndarray,
        part: _Partition,
        y: np.ndarray,
        x_hat: np.ndarray,
        tolerance: float,
    ) -> np.ndarray:
        """``selected`` plus the units behind the terms of ``U - LB`` (module docstring)."""
        eps = tolerance / 10
        offenders = self.offenders(part, y, x_hat, eps)
        # Regions whose part of the plan is not their penalized optimum grow by two steps.
        growing = self.short_regions(part, x_hat, eps)
        around = offenders | growing
        around |= self.neighbours(around)
        around |= self.neighbours(growing)
        return np.asarray(selected | around)


@dataclass(frozen=True)
class _Task:
    """An integer program to solve: its key (its columns' bytes), its size (columns: the
    largest are solved first) and how to build it; a plan piece also carries the original
    column of each of its choice columns."""

    key: bytes
    size: int
    build: Callable[[], LinearModel]
    choice_columns: np.ndarray | None = None


def _region_tasks(model: LinearModel, part: _Partition, cache: dict[bytes, float]) -> list[_Task]:
    """The region programs (penalized costs) whose bound is not known yet."""
    tasks = []
    for columns, rows in part.regions:
        key = columns.tobytes()
        if key not in cache:
            build = partial(_sub_model, model, rows, columns, part.penalized[columns])
            tasks.append(_Task(key, len(columns), build))
    return tasks


def _region_bounds(part: _Partition, cache: dict[bytes, float]) -> float:
    """Sum of the regions' integer minima on penalized costs (HiGHS's proven bounds)."""
    part.bounds = np.array([cache[columns.tobytes()] for columns, _ in part.regions])
    return float(part.bounds.sum())


@dataclass(frozen=True)
class _Pieces:
    """The plan's integer program over the selected units, every other unit pinned to its LP
    choice (``sub``, its original ``columns`` and ``values`` of the pinned ones), cut into its
    connected pieces (``found``: rows and columns of ``sub``; ``piece_of[u]``: u's piece)."""

    sub: LinearModel
    columns: np.ndarray
    values: np.ndarray
    found: list[tuple[np.ndarray, np.ndarray]]
    piece_of: np.ndarray


def _plan_pieces(
    index: ProblemIndex, model: LinearModel, selected: np.ndarray, pinned: np.ndarray
) -> _Pieces:
    """The plan's program for ``selected`` units, in pieces (:class:`_Pieces`)."""
    fixed = np.where(selected[index.choice_unit], -1.0, pinned)
    sub, columns = restrict(model, fixed)
    found = _pieces(sub)
    piece_of = np.full(index.n_units, -1)
    for i, (_, cols) in enumerate(found):
        piece_of[index.choice_unit[columns[cols[: int((cols < sub.n_choices).sum())]]]] = i
    return _Pieces(sub, columns, np.maximum(fixed, 0.0), found, piece_of)


def _plan_tasks(
    pieces: _Pieces,
    cache: dict[bytes, np.ndarray],
    proposal: np.ndarray,
    offenders: np.ndarray,
    region: np.ndarray,
) -> tuple[np.ndarray, list[_Task]]:
    """The values known so far (pinned units, remembered pieces, and the ``proposal``'s
    choices in pieces without ``offenders`` units) and the pieces still to solve, one
    program each (batching pieces up to 1,000 columns cost more than it saved:
    docs/pick-problem.md)."""
    sub, columns, found, piece_of = pieces.sub, pieces.columns, pieces.found, pieces.piece_of
    values = pieces.values.copy()
    # A region's solution is the best plan there only as a whole: a region in a piece that
    # must be solved takes its other pieces along.
    bad_units = offenders & (piece_of >= 0)
    solve_piece = np.zeros(len(found), dtype=bool)
    while found:
        solve_piece = np.zeros(len(found), dtype=bool)
        solve_piece[piece_of[bad_units]] = True
        in_bad_region = np.isin(region, region[solve_piece[np.maximum(piece_of, 0)]
                                               & (piece_of >= 0) & (region >= 0)])  # fmt: skip
        more = bad_units | (in_bad_region & (region >= 0) & (piece_of >= 0))
        if more.sum() == bad_units.sum():
            break
        bad_units = more
    tasks: list[_Task] = []
    for (rows, cols), bad in zip(found, solve_piece, strict=True):
        key = columns[cols].tobytes()
        choice_columns = columns[cols[: int((cols < sub.n_choices).sum())]]
        if key in cache:
            values[choice_columns] = cache[key]
        elif not bad:
            values[choice_columns] = proposal[choice_columns]
        else:  # the piece's columns are sorted, choices first (_pieces)
            build = partial(_sub_model, sub, rows, cols, sub.cost[cols])
            tasks.append(_Task(key, len(cols), build, choice_columns))
    return values, tasks


def _proposal(
    part: _Partition, pinned: np.ndarray, region_plan: dict[bytes, np.ndarray]
) -> np.ndarray:
    """Choice values: each region's own solution where it has one, else ``pinned``."""
    values = np.array(pinned)
    n_choices = len(pinned)
    for columns, _ in part.regions:
        found = region_plan.get(columns.tobytes())
        if found is not None:
            values[columns[columns < n_choices]] = found
    return values


def _sub_model(
    model: LinearModel, rows: np.ndarray, columns: np.ndarray, cost: np.ndarray
) -> LinearModel:
    """The program of ``model``'s ``rows`` over its sorted ``columns`` (choices first), with
    ``cost``."""
    return LinearModel(
        cost,
        model.matrix[rows][:, columns].tocsr(),
        model.row_lb[rows],
        model.row_ub[rows],
        int((columns < model.n_choices).sum()),
        np.full(len(rows), -1),
    )


def _common_group(rows: np.ndarray, groups: np.ndarray, n_rows: int) -> np.ndarray:
    """Per row, the group all its entries share if that is a region (>= 0), else -1."""
    lo = np.full(n_rows, np.iinfo(np.int64).max)
    hi = np.full(n_rows, np.iinfo(np.int64).min)
    np.minimum.at(lo, rows, groups)
    np.maximum.at(hi, rows, groups)
    return np.where((lo == hi) & (lo >= 0), lo, -1)


def _members(key: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """Sorted positions with ``key == g`` for each g in ``range(n_groups)``."""
    order = np.argsort(key, kind="stable")
    return np.split(order, np.searchsorted(key[order], np.arange(n_groups + 1)))[1:-1]


def _pieces(model: LinearModel) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows, columns) of each connected piece of ``model`` with a choice column (columns
    sorted, choices first). Pieces of auxiliaries alone do not change the plan: left out."""
    n_rows, n_vars = model.matrix.shape
    if n_vars == 0 or model.n_choices == 0:
        return []
    incidence = model.matrix.tocoo()
    graph = sp.csr_matrix(
        (np.ones(incidence.nnz), (incidence.row, n_rows + incidence.col)),
        shape=(n_rows + n_vars, n_rows + n_vars),
    )
    _, label = connected_components(graph, directed=False)
    col_label, row_label = label[n_rows:], label[:n_rows]
    keys = np.unique(col_label[: model.n_choices])
    columns = np.flatnonzero(np.isin(col_label, keys))
    order = columns[np.argsort(col_label[columns], kind="stable")]
    col_groups = np.split(order, np.searchsorted(col_label[order], keys[1:]))
    rows = np.flatnonzero(np.isin(row_label, keys))
    row_order = rows[np.argsort(row_label[rows], kind="stable")]
    at = np.searchsorted(row_label[row_order], keys)
    ends = np.searchsorted(row_label[row_order], keys, side="right")
    return [(row_order[a:b], c) for a, b, c in zip(at, ends, col_groups, strict=True)]


def _lp(model: LinearModel, deadline: float) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The LP relaxation (:func:`~tacopt.partitioner.pickers.mip.solve_lp`) by ``deadline``."""
    return solve_lp(model, deadline - time.perf_counter())
