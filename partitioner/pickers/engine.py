"""The exact picker's engine for problems in pairwise form, as named stages.

A problem is in pairwise form when its objective is choice costs plus pairwise matrices and at
most one device has a capacity (:func:`~tacopt.partitioner.pickers.reduce.pairwise_scope`):
every IOPDDL contest instance, and any pick problem without tensors. Within one deadline:

1. reductions (:mod:`.reduce`); a problem they prove infeasible stops here;
2. primal search (:mod:`.search`): greedy placement, then Lagrangian best responses with
   repair and limit-keeping sweeps, for a plan within the capacity early;
3. proof (:mod:`.reduced_mip`): the integer program with lazy memory rows on the whole
   reduced problem, for a share of the time; it proves optimality on the contest's B, G, A;
4. large-neighbourhood search with the rest: a window of steps or a ball of the graph is
   freed, the rest fixed, and the sub-problem solved exactly; a better plan is kept.

The bound (:mod:`.bounds`) is the best of HiGHS's dual bound of the whole program (or of its
relaxation without the memory rows not yet added), the Lagrangian bound computed by min-sum
diffusion in a second process while the search runs (:class:`~.bounds.BoundProcess`), and the
edge-split bound. The caller (the ``exact`` picker) turns
the result into a :class:`~tacopt.partitioner.plan.Plan`, whose objective is
:func:`~tacopt.partitioner.plan.evaluate`'s, and checks it fits.

Examples
--------
>>> from tacopt.partitioner.problem.contest import problem_from_dict
>>> from tacopt.partitioner.problem import index_problem
>>> p = problem_from_dict({"problem": {"name": "t",
...     "nodes": {"intervals": [[0, 2], [1, 3]], "costs": [[5, 1], [2, 9]],
...               "usages": [[1, 4], [2, 1]]},
...     "edges": {"nodes": [[0, 1]], "costs": [[0, 3, 3, 0]]}, "usage_limit": 5}})
>>> r = solve_pairwise(index_problem(p), deadline=time.monotonic() + 10)
>>> r.proven, r.chosen.tolist()
(True, [0, 2])
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacopt.partitioner.pickers import primal, search
from tacopt.partitioner.pickers.bounds import BoundProcess, edge_split_bound
from tacopt.partitioner.pickers.reduce import (
    FORBIDDEN,
    Compact,
    Infeasible,
    reduce_problem,
)
from tacopt.partitioner.pickers.reduced_mip import MipResult, solve_mip
from tacopt.partitioner.problem import ProblemIndex

#: Reduced problems with at most this many pairwise entries get the whole program first.
SMALL_ENTRIES = 300_000
#: The share of the time the Lagrangian bound runs beside the primal search (large problems).
BOUND_SHARE = 0.35
#: Small problems: the share of the time for the price search before the program starts.
HEURISTIC_SHARE = 0.05
#: Small problems: the share of the time the primal search runs beside the program (the bounds
#: stage has the rest of that core).
SEARCH_SHARE = 0.8
#: Nodes freed per neighbourhood at first and at most.
LNS_NODES = (25, 25)


@dataclass(frozen=True, slots=True)
class EngineResult:
    """What the engine found: global choice indices per unit (None: no plan within the
    capacity), a lower bound (None when none), whether optimality is proven, why there is no
    plan (``infeasible``: proven so), and the stages' figures."""

    chosen: np.ndarray | None
    bound: float | None
    proven: bool
    reason: str = ""
    infeasible: bool = False
    info: dict[str, Any] = field(default_factory=dict)


def solve_pairwise(
    index: ProblemIndex, *, deadline: float, seed: int = 0, prove: bool = True
) -> EngineResult:
    """Run the stages on a problem in pairwise form until ``deadline`` (``time.monotonic()``).

    ``prove=False`` stops after the primal search (reductions and heuristics only).
    """
    t0 = time.monotonic()
    info: dict[str, Any] = {}
    reduced = reduce_problem(index)
    if isinstance(reduced, Infeasible) and _has_forbidden(index):
        reduced = reduce_problem(index, forbid=False)  # costs of 10^18 as large costs
    info["reduce_s"] = round(time.monotonic() - t0, 3)
    if isinstance(reduced, Infeasible):
        return EngineResult(None, None, False, reduced.reason, True, info)
    best, bound, proven = _run(reduced, prove, deadline, seed, info)
    # a plan with a forbidden pair left (the primal search's last resort) is kept for the end
    last_resort = None
    if best is not None and not np.isfinite(search.objective(reduced, best)):
        last_resort, best = (reduced, best), None
    enough = time.monotonic() < deadline - 0.3 * (deadline - t0)  # the reductions run again
    if best is None and _has_forbidden(index) and enough:
        # none found avoiding the forbidden costs: look among all plans
        again = reduce_problem(index, forbid=False)
        if isinstance(again, Infeasible):
            return EngineResult(None, None, False, again.reason, True, info)
        reduced = again
        best, bound, proven = _run(reduced, prove, deadline, seed, info)
    if best is None and last_resort is not None:
        (reduced, best), proven = last_resort, False
    if best is None:
        return EngineResult(None, bound, False, "no plan within the capacity found in time",
                            False, info)  # fmt: skip
    chosen = index.choice_start[:-1] + reduced.original(best)
    # The reductions drop forbidden pairs: their bound holds for plans below FORBIDDEN.
    bound = None if bound is None else min(bound, float(FORBIDDEN))
    return EngineResult(chosen, bound, proven, "", False, info)


def _has_forbidden(index: ProblemIndex) -> bool:
    return bool((index.choice_cost >= FORBIDDEN).any() or (index.pair_cost >= FORBIDDEN).any())


def _run(c: Compact, prove: bool, deadline: float, seed: int, info: dict):
    """The heuristic, then (exact) the program and the neighbourhood search."""
    t0 = time.monotonic()
    info.update(reduced_nodes=int((c.k > 1).sum()), reduced_edges=len(c.edge_nodes))
    nb = search.neighbourhood(c)
    if prove and len(c.edge_cost) > SMALL_ENTRIES:  # too large for the whole program
        # The bounds stage beside the primal search, for the first part of the time, priced
        # toward a quick plan of the price search.
        quick = search.price_search(c, nb, search.greedy_start(c, nb), min(deadline, t0 + 2.0))
        target = None if quick is None else search.objective(c, quick)
        beside = BoundProcess(c, t0 + BOUND_SHARE * (deadline - t0), target)
        best = primal.search(c, deadline, seed=seed, threads=2)
        info["primal_s"] = round(time.monotonic() - t0, 3)
        lagrangian = beside.result()
        info["lagrangian_bound"] = lagrangian
        bound = edge_split_bound(c)
        return best, bound if lagrangian is None else max(bound, lagrangian), False
    x = search.greedy_start(c, nb)
    heuristic_end = min(deadline, t0 + max(1.0, HEURISTIC_SHARE * (deadline - t0)))
    best = search.price_search(c, nb, x, heuristic_end)
    info["heuristic_s"] = round(time.monotonic() - t0, 3)
    bound = edge_split_bound(c)
    proven = False
    if best is not None and not np.isfinite(search.objective(c, best)):
        best = None  # a forbidden pair left: not a solution of the reduced problem
    if prove:
        # On the other core: the primal search, then the bounds stage (priced toward its plan).
        # Not without a plan of the heuristic: the time may be needed to look among plans
        # with forbidden pairs (see solve_pairwise).
        searcher: primal.SearchProcess | None = None
        if best is not None and (c.k > 1).any():
            searcher = primal.SearchProcess(c, t0 + SEARCH_SHARE * (deadline - t0), seed=seed + 1,
                                          start=best, bound_until=deadline - 0.3)  # fmt: skip
        best, bound, proven = _exact(c, nb, best, bound, deadline, seed, info)
        if searcher is not None and proven:
            searcher.cancel()
        elif searcher is not None:
            t = time.monotonic()
            found, lagrangian = searcher.result()
            info["beside_wait_s"] = round(time.monotonic() - t, 3)
            info["lagrangian_bound"] = lagrangian
            info["beside_objective"] = None if found is None else _value_or_inf(c, found)
            bound = bound if lagrangian is None else max(bound, lagrangian)
            if found is not None and search.fits(c, found) and \
                    search.objective(c, found) < _value_or_inf(c, best):  # fmt: skip
                best = found
                info["beside_won"] = True
    if best is not None and not np.isfinite(search.objective(c, best)):
        best, proven = None, False
    return best, bound, proven


def _value_or_inf(c: Compact, x: np.ndarray | None) -> float:
    return np.inf if x is None else float(search.objective(c, x))


def _exact(c, nb, best, bound, deadline, seed, info):
    """The whole program for a share of the time, then large-neighbourhood search."""
    if len(c.edge_cost) <= SMALL_ENTRIES:  # the whole program, while there is time
        everything = np.ones(c.n_nodes, dtype=bool)
        start = best if best is not None else np.zeros(c.n_nodes, dtype=np.int64)
        t = time.monotonic()
        share = 0.9 * (deadline - t)
        # in a process stopped soon after its share: HiGHS may overrun its limit by seconds
        stopped = MipResult(None, math.inf, -math.inf, False, "stopped after its time share")
        end = t + share + min(2.0, 0.05 * (deadline - t))
        res = primal.bounded(_whole_program, end, stopped, (c, everything, start, share))
        bound = max(bound, res.bound)
        info["mip_status"] = res.status
        info["mip_s"] = round(time.monotonic() - t, 3)
        if res.x is not None and search.fits(c, res.x) and np.isfinite(search.objective(c, res.x)):
            if best is None or search.objective(c, res.x) <= search.objective(c, best):
                best = res.x
            if res.optimal:
                return best, bound, True
    if best is None:
        return best, bound, False
    best, rounds = _lns(c, nb, best, deadline, seed)
    info["lns_rounds"] = rounds
    return best, bound, False


def _whole_program(c: Compact, free: np.ndarray, start: np.ndarray, seconds: float):
    return (solve_mip(c, free, start, seconds),)


def _lns(c: Compact, nb: search.Neighbourhood, x: np.ndarray, deadline: float, seed: int):
    """Free a window of steps (or a ball of the graph), solve it exactly, keep improvements."""
    rng = np.random.default_rng(seed)
    movable = np.flatnonzero(c.k > 1)
    if not len(movable):
        return x, 0
    size = float(LNS_NODES[0])
    val = search.objective(c, x)
    rounds = 0
    while time.monotonic() < deadline - 0.2:
        rounds += 1
        free = _window(c, rng, int(size)) if rounds % 2 else \
            _ball(c, nb, rng, int(size), _weights(c, x) if rounds % 4 == 0 else None)  # fmt: skip
        _cap_entries(c, free)
        left = deadline - time.monotonic() - 0.5  # HiGHS may overrun its limit a little
        if left <= 0.1:
            break
        t = time.monotonic()
        res = solve_mip(c, free, x, min(left, 3.0))
        took = time.monotonic() - t
        if res.x is not None:
            new = search.objective(c, res.x)
            if new <= val + 1e-6 and search.fits(c, res.x):  # equal: move along a plateau
                x, val = res.x, new
        # many small sub-problems beat a few large ones: aim at well under a second each
        size = min(size * 1.1, LNS_NODES[1]) if res.optimal and took < 0.5 else \
            max(size * 0.8, 10.0) if not res.optimal else size  # fmt: skip
    return x, rounds


def _cap_entries(c: Compact, free: np.ndarray, most: int = 100_000) -> None:
    """Unfree the nodes with the most strategies until the freed edges hold at most ``most``
    pairwise entries (a node of 853 strategies makes one edge of 727,609)."""
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    size = c.k[u] * c.k[v]
    while free.sum() > 1 and int(size[free[u] & free[v]].sum()) > most:
        nodes = np.flatnonzero(free)
        free[nodes[np.argmax(c.k[nodes])]] = False


def _window(c: Compact, rng: np.random.Generator, size: int) -> np.ndarray:
    """The movable nodes with an item in a random window of steps holding about ``size``."""
    items = np.flatnonzero((c.k[c.item_node] > 1) & c.item_tight)
    if not len(items):
        items = np.flatnonzero(c.k[c.item_node] > 1)
    free = np.zeros(c.n_nodes, dtype=bool)
    if not len(items):
        free[c.k > 1] = True
        return free
    order = items[np.argsort(c.item_start[items], kind="stable")]
    lo = int(rng.integers(len(order)))
    free[c.item_node[order[lo : lo + size]]] = True
    return free


def _weights(c: Compact, x: np.ndarray) -> np.ndarray:
    """Per node, its cost plus its edges' at ``x``: where an improvement may be found."""
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    pair = c.edge_cost[c.edge_offset[:-1] + x[u] * c.k[v] + x[v]]
    w = c.cost[c.offset[:-1] + x] + np.bincount(u, pair, c.n_nodes)
    w += np.bincount(v, pair, c.n_nodes)
    return np.where(c.k > 1, np.maximum(w, 0.0) + 1e-9, 0.0)


def _ball(
    c: Compact,
    nb: search.Neighbourhood,
    rng: np.random.Generator,
    size: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """A breadth-first ball of about ``size`` movable nodes around a random one (drawn in
    proportion to ``weights`` if given)."""
    movable = np.flatnonzero(c.k > 1)
    free = np.zeros(c.n_nodes, dtype=bool)
    seed = rng.choice(c.n_nodes, p=weights / weights.sum()) if weights is not None else \
        rng.choice(movable)  # fmt: skip
    frontier = [int(seed)]
    free[frontier] = True
    count = 1
    while frontier and count < size:
        nxt = []
        for i in frontier:
            for e in nb.adjacency[i]:
                for j in c.edge_nodes[e]:
                    if not free[j] and c.k[j] > 1 and count < size:
                        free[j] = True
                        nxt.append(int(j))
                        count += 1
        frontier = nxt
    return free
