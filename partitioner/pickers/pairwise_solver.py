"""Solving a :class:`~tacopt.partitioner.iopddl.PairwiseProblem` (an IOPDDL contest problem).

``exact`` runs, within one time limit:

1. the reductions (:mod:`.pairwise_reduce`); a problem they prove infeasible stops here;
2. a primal heuristic: greedy placement, then Lagrangian best responses with repair and
   limit-keeping sweeps (:mod:`.pairwise_search`), for a valid solution early;
3. the integer program with lazy memory rows (:mod:`.pairwise_mip`) on the whole reduced
   problem, for a share of the time; it proves optimality on the contest's B, G and A;
4. large-neighbourhood search with the rest: a window of time steps or a ball of the graph is
   freed, the rest fixed, and the sub-problem solved exactly; a better solution is kept.

The bound is HiGHS's dual bound of the whole program (or of its relaxation without the memory
rows not yet added), else a bound that splits node costs over incident edges. Every solution
returned is checked by :func:`~tacopt.partitioner.iopddl.evaluate` and fits the limit.
``greedy`` is steps 1-2 only; ``brute`` enumerates every combination of a tiny problem.

Examples
--------
>>> from tacopt.partitioner.iopddl import problem_from_dict
>>> p = problem_from_dict({"problem": {"name": "t",
...     "nodes": {"intervals": [[0, 2], [1, 3]], "costs": [[5, 1], [2, 9]],
...               "usages": [[1, 4], [2, 1]]},
...     "edges": {"nodes": [[0, 1]], "costs": [[0, 3, 3, 0]]}, "usage_limit": 5}})
>>> r = solve_pairwise(p, "exact", time_limit_s=10)
>>> r.status, r.cost, r.solution.tolist()
('OPTIMAL', 7, [0, 0])
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.iopddl import PairwiseProblem, evaluate
from tacopt.partitioner.pickers import pairwise_search as search
from tacopt.partitioner.pickers.pairwise_mip import solve_mip
from tacopt.partitioner.pickers.pairwise_reduce import (
    FORBIDDEN,
    Compact,
    Infeasible,
    reduce_problem,
)

METHODS = ("exact", "greedy", "brute")
#: Reduced problems with at most this many pairwise entries get the whole program first.
SMALL_ENTRIES = 300_000
#: Nodes freed per neighbourhood at first and at most.
LNS_NODES = (25, 25)
#: Largest number of combinations ``brute`` enumerates.
BRUTE_LIMIT = 200_000


@dataclass(frozen=True, slots=True)
class PairwiseResult:
    """A solve: the strategy per node (None if no valid one was found), its exact cost, a
    lower bound, the relative gap, the status (OPTIMAL, FEASIBLE, INFEASIBLE or NO_SOLUTION),
    why (for INFEASIBLE / NO_SOLUTION), the seconds taken and the knobs and sizes used."""

    method: str
    status: str
    solution: np.ndarray | None
    cost: int | None
    bound: float | None
    seconds: float
    reason: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        if self.cost is None or self.bound is None or not math.isfinite(self.bound):
            return None
        return max(0.0, (self.cost - self.bound) / max(abs(self.cost), 1))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (``solution`` as a list of strategy indices)."""
        return {
            "picker": self.method,
            "status": self.status,
            "objective": self.cost,
            "bound": self.bound,
            "gap": self.gap,
            "seconds": round(self.seconds, 3),
            "reason": self.reason,
            "solution": None if self.solution is None else [int(s) for s in self.solution],
            **self.info,
        }


def solve_pairwise(
    problem: PairwiseProblem,
    method: str = "exact",
    time_limit_s: float = 60.0,
    seed: int = 0,
) -> PairwiseResult:
    """Solve ``problem`` with ``method`` (exact, greedy or brute) within ``time_limit_s``.

    Raises
    ------
    PickerError
        For an unknown method, or ``brute`` on a problem with too many combinations.
    """
    if method not in METHODS:
        raise PickerError(f"unknown method {method!r} for a contest problem; known: "
                          f"{', '.join(METHODS)}")  # fmt: skip
    t0 = time.monotonic()
    if method == "brute":
        return _brute(problem, t0)
    deadline = t0 + time_limit_s - max(0.3, 0.03 * time_limit_s)  # room to check and return
    info: dict[str, Any] = {"time_limit_s": time_limit_s, "seed": seed}
    reduced = reduce_problem(problem)
    if isinstance(reduced, Infeasible) and _has_forbidden(problem):
        reduced = reduce_problem(problem, forbid=False)  # costs of 10^18 as large costs
    info["reduce_s"] = round(time.monotonic() - t0, 3)
    if isinstance(reduced, Infeasible):
        return PairwiseResult(method, "INFEASIBLE", None, None, None, time.monotonic() - t0,
                              reduced.reason, info)  # fmt: skip
    best, bound, proven = _run(reduced, method, deadline, seed, info)
    if best is None and _has_forbidden(problem):
        # none found avoiding the forbidden costs: look among all solutions
        again = reduce_problem(problem, forbid=False)
        if isinstance(again, Infeasible):
            return PairwiseResult(method, "INFEASIBLE", None, None, None,
                                  time.monotonic() - t0, again.reason, info)  # fmt: skip
        reduced = again
        best, bound, proven = _run(reduced, method, max(deadline, time.monotonic() + 1.0),
                                   seed, info)  # fmt: skip
    return _finish(problem, reduced, method, best, bound, proven, t0, info)


def _has_forbidden(problem: PairwiseProblem) -> bool:
    return bool((problem.cost >= FORBIDDEN).any() or (problem.edge_cost >= FORBIDDEN).any())


def _run(c: Compact, method: str, deadline: float, seed: int, info: dict):
    """The heuristic, then (exact) the program and the neighbourhood search."""
    t0 = time.monotonic()
    info.update(reduced_nodes=int((c.k > 1).sum()), reduced_edges=len(c.edge_nodes))
    nb = search.neighbourhood(c)
    x = search.greedy_start(c, nb)
    heuristic_end = min(deadline, t0 + max(1.0, 0.1 * (deadline - t0)))
    best = search.price_search(c, nb, x, heuristic_end)
    info["heuristic_s"] = round(time.monotonic() - t0, 3)
    bound = edge_split_bound(c)
    proven = False
    if best is not None and not np.isfinite(search.objective(c, best)):
        best = None  # a forbidden pair left: not a solution of the reduced problem
    if method == "exact":
        best, bound, proven = _exact(c, nb, best, bound, deadline, seed, info)
    if best is not None and not np.isfinite(search.objective(c, best)):
        best, proven = None, False
    return best, bound, proven


def _exact(c, nb, best, bound, deadline, seed, info):
    """The whole program for a share of the time, then large-neighbourhood search."""
    if len(c.edge_cost) <= SMALL_ENTRIES:  # the whole program, while there is time
        everything = np.ones(c.n_nodes, dtype=bool)
        start = best if best is not None else np.zeros(c.n_nodes, dtype=np.int64)
        res = solve_mip(c, everything, start, 0.9 * (deadline - time.monotonic()))
        bound = max(bound, res.bound)
        info["mip_status"] = res.status
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


def edge_split_bound(c: Compact) -> float:
    """A lower bound: each node's cost split evenly over its edges, each edge at its minimum
    (nodes without edges at their cheapest strategy). Ignores the usage limit."""
    deg = np.bincount(c.edge_nodes.ravel(), minlength=c.n_nodes)
    k, off = c.k, c.offset
    total = c.const
    for i in np.flatnonzero(deg == 0):
        total += float(c.cost[off[i] : off[i + 1]].min())
    for e, (u, v) in enumerate(c.edge_nodes.tolist()):
        m = c.edge_cost[c.edge_offset[e] : c.edge_offset[e + 1]].reshape(k[u], k[v])
        share = m + (c.cost[off[u] : off[u + 1]] / deg[u])[:, None] \
            + (c.cost[off[v] : off[v + 1]] / deg[v])[None, :]  # fmt: skip
        total += float(share.min())
    return total


def _finish(problem, c, method, best, bound, proven, t0, info) -> PairwiseResult:
    seconds = time.monotonic() - t0
    if best is None:
        return PairwiseResult(method, "NO_SOLUTION", None, None, bound, seconds,
                              "no solution within the usage limit found in time", info)  # fmt: skip
    solution = c.original(best)
    ev = evaluate(problem, solution)
    if not ev.fits:  # the search keeps the limit; this would be a bug, never a returned plan
        raise PickerError(f"{method}: internal error, solution over the usage limit")
    # The reductions drop forbidden pairs: their bound holds for solutions below FORBIDDEN.
    bound = None if bound is None else min(bound, float(FORBIDDEN))
    proven = proven and ev.cost < FORBIDDEN
    # integer costs: a bound within 1 of the cost proves it (compared as integers, not floats)
    closed = bound is not None and math.isfinite(bound) and ev.cost - math.ceil(bound - 1e-6) < 1
    status = "OPTIMAL" if proven or closed else "FEASIBLE"
    if status == "OPTIMAL":
        bound = float(ev.cost)
    info["peak_usage"] = ev.peak_usage
    return PairwiseResult(method, status, solution, ev.cost, bound, seconds, "", info)


def _brute(problem: PairwiseProblem, t0: float) -> PairwiseResult:
    """Every combination of a tiny problem, checked by :func:`evaluate` (the oracle)."""
    k = problem.n_strategies.tolist()
    combos = math.prod(k) if k else 1
    if combos > BRUTE_LIMIT:
        raise PickerError(f"brute: {combos:.3g} combinations is out of scope (at most "
                          f"{BRUTE_LIMIT:,}); use --picker exact")  # fmt: skip
    best: tuple[int, tuple[int, ...]] | None = None
    for combo in product(*(range(n) for n in k)):
        ev = evaluate(problem, list(combo))
        if ev.fits and (best is None or ev.cost < best[0]):
            best = (ev.cost, combo)
    seconds = time.monotonic() - t0
    if best is None:
        return PairwiseResult("brute", "INFEASIBLE", None, None, None, seconds,
                              "no combination fits the usage limit")  # fmt: skip
    return PairwiseResult("brute", "OPTIMAL", np.array(best[1], dtype=np.int64), best[0],
                          float(best[0]), seconds)  # fmt: skip
