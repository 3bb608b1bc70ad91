"""The integer program of a reduced pairwise problem (or of a part of it), solved by HiGHS
(:func:`~tacopt.partitioner.pickers.mip.solve_highs`).

Variables: one binary ``x`` per strategy and one continuous ``y`` per finite entry of every edge
matrix between two free nodes (forbidden entries get no variable). Constraints, in order:

- each free node picks one strategy: ``sum_a x[i, a] = 1``;
- each ``y`` block has the two nodes' choices as marginals (the local polytope, tight for trees):
  ``sum_b y[e, a, b] = x[u, a]`` and ``sum_a y[e, a, b] = x[v, b]``;
- at chosen steps ``t``, the usage of the live free items stays within the limit minus the
  usage of the fixed items live at ``t``. The steps are found lazily (:func:`solve_mip`): a
  step gets its row once a solution breaks the limit there.

Edges to fixed nodes become node costs (the matrix row at the neighbour's choice).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from tacopt.partitioner.pickers.formulation import local_polytope
from tacopt.partitioner.pickers.mip import solve_highs
from tacopt.partitioner.pickers.reduce import Compact, ranges


@dataclass(frozen=True, slots=True)
class MipResult:
    """A HiGHS run: the choice of the free nodes (None if none found), its objective including
    the fixed part, HiGHS's dual bound, and whether it proved optimality."""

    x: np.ndarray | None
    objective: float
    bound: float
    optimal: bool
    status: str


def solve_mip(
    c: Compact,
    free: np.ndarray,
    x_fixed: np.ndarray,
    time_limit_s: float,
    relax: bool = False,
    max_rounds: int = 50,
) -> MipResult:
    """Optimise the free nodes with the others fixed at ``x_fixed`` (all free: the whole
    problem). ``relax`` solves the LP relaxation (its value is a lower bound).

    Memory rows are added lazily: solve, find the steps over the limit, add their rows, solve
    again; a solution that fits is then optimal for the full model, and every round's dual
    bound is a bound of the full model (it has fewer rows).
    """
    deadline = time.monotonic() + time_limit_s
    free = free & (c.k > 1)  # a node with one strategy is fixed already
    if not free.any():
        x = x_fixed.copy()
        value = _value(c, x)
        fits = not np.isfinite(c.limit) or bool((c.profile(x) <= c.limit).all())
        ok = fits and bool(np.isfinite(value))  # inf: a forbidden pair between fixed nodes
        return MipResult(x if ok else None, value if ok else math.inf, value if ok else math.inf,
                         ok, "nothing to choose")  # fmt: skip
    steps = np.zeros(0, dtype=np.int64)
    bound = -math.inf
    last = MipResult(None, math.inf, bound, False, "not run")
    for _ in range(max_rounds):
        left = deadline - time.monotonic()
        if left <= 0.05:
            break
        cost, A, lb, ub, n_x, fixed_cost = build_mip(c, free, x_fixed, steps)
        integer = None if relax else np.arange(len(cost)) < n_x
        # a strategy forbidden next to a fixed neighbour's choice (an infinite cost) is out
        barred = ~np.isfinite(cost)
        cost = np.where(barred, 0.0, cost)
        res = solve_highs(cost, A, lb, ub, np.zeros(len(cost)), np.where(barred, 0.0, 1.0),
                          integer, left, "mip_rel_gap=1e-9")  # fmt: skip
        base = fixed_cost + c.const
        if np.isfinite(res.dual_bound):
            bound = max(bound, res.dual_bound + base)
        if res.x is None:
            return MipResult(None, math.inf, bound, False, res.status)
        x = _choice(c, free, x_fixed, res.x[:n_x])
        over = np.flatnonzero(c.profile(x) > c.limit + 1e-6) if not relax else steps[:0]
        if not len(over):
            value = float(cost[: len(res.x)] @ res.x)
            return MipResult(x, value + base, bound, res.optimal and not relax,
                             res.status)  # fmt: skip
        last = MipResult(None, math.inf, bound, False, "over the usage limit")
        steps = np.union1d(steps, _worst_steps(c.profile(x) - c.limit, over))
    return MipResult(None, math.inf, last.bound, False, "time limit with rows still to add")


def _value(c: Compact, x: np.ndarray) -> float:
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    pair = c.edge_cost[c.edge_offset[:-1] + x[u] * c.k[v] + x[v]].sum()
    return float(c.cost[c.offset[:-1] + x].sum() + pair + c.const)


def _worst_steps(excess: np.ndarray, over: np.ndarray, per_run: int = 1) -> np.ndarray:
    """The step of largest excess in each run of consecutive steps over the limit."""
    runs = np.split(over, np.flatnonzero(np.diff(over) > 1) + 1)
    return np.array([r[np.argmax(excess[r])] for r in runs if len(r)], dtype=np.int64)


def _choice(c: Compact, free: np.ndarray, x_fixed: np.ndarray, vals: np.ndarray) -> np.ndarray:
    x = x_fixed.copy()
    nodes = np.flatnonzero(free)
    k = c.k[nodes]
    starts = np.concatenate(([0], np.cumsum(k)[:-1]))
    picked = np.maximum.reduceat(vals, starts) if len(vals) else np.zeros(0)
    # the index of the largest x per node: the first position reaching the maximum
    owner = np.repeat(np.arange(len(nodes)), k)
    hit = vals >= picked[owner] - 1e-9
    pos = np.arange(len(vals)) - starts[owner]
    x[nodes] = _first_true(owner, hit, pos, len(nodes))
    return x


def _first_true(owner: np.ndarray, hit: np.ndarray, pos: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(out, owner[hit], pos[hit])
    return out


def build_mip(c: Compact, free: np.ndarray, x_fixed: np.ndarray, steps: np.ndarray):
    """(cost, A, lb, ub, number of x variables, cost of the fixed part) of the model."""
    k = c.k
    nodes = np.flatnonzero(free)
    k_free = k[nodes]
    n_x = int(k_free.sum())
    xstart = np.full(c.n_nodes, -1, dtype=np.int64)
    xstart[nodes] = np.concatenate(([0], np.cumsum(k_free)[:-1])) if len(nodes) else []
    gsel = np.concatenate([np.arange(c.offset[i], c.offset[i + 1]) for i in nodes]) \
        if len(nodes) else np.zeros(0, dtype=np.int64)  # fmt: skip
    cost_x = c.cost[gsel].copy()
    fixed_nodes = np.flatnonzero(~free)
    fixed_cost = float(c.cost[c.offset[fixed_nodes] + x_fixed[fixed_nodes]].sum())

    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    fu, fv = free[u], free[v]
    # Edges with one fixed end: the row (or column) at the fixed choice joins the node costs.
    for e in np.flatnonzero(fu ^ fv).tolist():
        m = _matrix(c, e)
        if fu[e]:
            cost_x[xstart[u[e]] : xstart[u[e]] + k[u[e]]] += m[:, x_fixed[v[e]]]
        else:
            cost_x[xstart[v[e]] : xstart[v[e]] + k[v[e]]] += m[x_fixed[u[e]], :]
    both_fixed = np.flatnonzero(~fu & ~fv)
    if len(both_fixed):
        ent = c.edge_offset[both_fixed] + x_fixed[u[both_fixed]] * k[v[both_fixed]] \
            + x_fixed[v[both_fixed]]  # fmt: skip
        fixed_cost += float(c.edge_cost[ent].sum())

    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    # Each free node picks one strategy.
    n_free = len(nodes)
    rows.append(np.repeat(np.arange(n_free), k_free))
    cols.append(np.arange(n_x))
    vals.append(np.ones(n_x))
    lb = [np.ones(n_free)]
    ub = [np.ones(n_free)]
    next_row = n_free

    # Marginals of every y block between two free nodes (forbidden entries get no y).
    inner = np.flatnonzero(fu & fv)
    ku, kv = k[u[inner]], k[v[inner]]
    ent = np.repeat(c.edge_offset[inner], ku * kv) + ranges(ku * kv)
    polytope = local_polytope(ku, kv, xstart[u[inner]], xstart[v[inner]], n_x,
                              np.isfinite(c.edge_cost[ent]))  # fmt: skip
    ent = ent[polytope.entry]
    n_y = len(ent)
    rows.append(polytope.rows + next_row)
    cols.append(polytope.cols)
    vals.append(polytope.vals)
    lb.append(np.zeros(polytope.n_rows))
    ub.append(np.zeros(polytope.n_rows))
    next_row += polytope.n_rows

    # Usage at tight steps where a free node's interval starts.
    mr, mc, mv, cap = _memory_rows(c, free, x_fixed, xstart, steps)
    if len(cap):
        rows.append(mr + next_row)
        cols.append(mc)
        vals.append(mv)
        lb.append(np.full(len(cap), -np.inf))
        ub.append(cap)
        next_row += len(cap)
    A = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(next_row, n_x + n_y),
    )
    cost = np.concatenate((cost_x, c.edge_cost[ent]))
    return cost, A, np.concatenate(lb), np.concatenate(ub), n_x, fixed_cost


def _memory_rows(c: Compact, free, x_fixed, xstart, steps):
    """Rows (row, col, value, capacity) keeping the usage at each of ``steps`` (sorted) within
    the limit; the fixed items' usage there is taken off the capacity."""
    empty = (np.zeros(0, np.int64),) * 3 + (np.zeros(0),)
    if not np.isfinite(c.limit) or not len(steps):
        return empty
    on_free = free[c.item_node]
    fixed = np.flatnonzero(~on_free)
    base = c.profile(x_fixed, fixed)[steps]
    sel = np.flatnonzero(on_free)
    start, end = c.item_start[sel], c.item_end[sel]
    # free items live at each step (start <= t < end)
    lo = np.searchsorted(steps, start, side="left")
    hi = np.searchsorted(steps, end, side="left")
    span = hi - lo
    item_rep = np.repeat(sel, span)
    row = np.repeat(lo, span) + ranges(span)
    kk = c.k[c.item_node[item_rep]]
    strat = ranges(kk)
    col = np.repeat(xstart[c.item_node[item_rep]], kk) + strat
    val = c.item_usage[np.repeat(c.item_offset[item_rep], kk) + strat]
    keep = val != 0
    return np.repeat(row, kk)[keep], col[keep], val[keep], c.limit - base


def _matrix(c: Compact, e: int) -> np.ndarray:
    ku, kv = c.k[c.edge_nodes[e]]
    return c.edge_cost[c.edge_offset[e] : c.edge_offset[e + 1]].reshape(ku, kv)
