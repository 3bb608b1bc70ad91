"""The exact picker's stages on a reduced problem in pairwise form (:class:`~.reduce.Compact`).

The engine (:mod:`.engine`) reduces a problem in pairwise form and hands it here. Within one
deadline:

1. primal search (:mod:`.search`, :mod:`.primal`): greedy placement, then Lagrangian best
   responses with repair and limit-keeping sweeps, for a plan within the capacity early;
2. proof, on small problems: with few memory rows and whole-number costs, toulbar2 over every
   node from a plan of the primal search (:func:`~.windows.prove_whole`, the limit as
   knapsack constraints) and the integer program (:func:`solve_mip`, below, its memory rows up
   front) at the same time, one core each, the first proof stopping the other
   (:func:`~.mip.race`); otherwise the integer program (its rows up front when they are few,
   else lazily) for a share of the time. They prove optimality on the contest's B, G
   (toulbar2), A (the program) and small memory-tight ones. Problems a little larger
   (``RACE_ENTRIES``) get the race for a share of the time, then the large path;
3. large-neighbourhood search with the rest: a window of steps or a ball of the graph is
   freed, the rest fixed, and the sub-problem solved exactly; a better plan is kept.

The bound (:mod:`.bounds`) is the best of HiGHS's dual bound of the whole program (or of its
relaxation without the memory rows not yet added), the Lagrangian bound computed by min-sum
diffusion in a second process while the search runs (:class:`~.bounds.BoundProcess`), and the
edge-split bound. Plans are compared here by the reduced problem's cost
(:func:`~.search.objective`); the engine's plan takes :func:`~tacopt.partitioner.plan.evaluate`'s.

**The integer program** of the reduced problem (or of a part of it), solved by HiGHS
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
import multiprocessing as mp
import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from tacopt.partitioner.pickers import mip, primal, search, windows
from tacopt.partitioner.pickers.bounds import BoundProcess, edge_split_bound
from tacopt.partitioner.pickers.formulation import local_polytope
from tacopt.partitioner.pickers.reduce import Compact, ranges

#: Reduced problems with at most this many pairwise entries get the whole program first.
SMALL_ENTRIES = 300_000
#: Larger ones up to this many (whole-number costs, few memory rows) get the proof race
#: (:func:`_race`) for this share of the time first, then the large path from its plan.
RACE_ENTRIES = 600_000
RACE_SHARE = 0.3
#: The share of the time the Lagrangian bound may run beside the primal search (large
#: problems; with two processes or more, on a core of its own); it ends sooner when it stalls.
#: At 0.6, sharing the cores, S's search (whose bound never stalls) lost 2.6 % of its score
#: (1.0293x the best known against 1.0031x, one run each, load 1-3).
BOUND_SHARE = 0.35
#: Large problems, two processes or more: the bound keeps its core (the second search waiting)
#: only while it may be worth it. From ``BOUND_CHECK`` of the time on, a bound still more than
#: ``BOUND_FAR`` below the search's best plan lets the second search join at once. At 10 % of
#: the time (offline, niced, load 3-5): S's bound 30 % below the search's plan (13 % below the
#: final plan at the end; the search alone on one core lost 1-3 %), M's 7.5 % (its gap at the
#: end 1.05 % with a core of its own, 1.51 % without).
BOUND_CHECK = 0.1
BOUND_FAR = 0.15
#: Small problems: the share of the time for the price search before the program starts.
HEURISTIC_SHARE = 0.05
#: Small problems: the share of the time the primal search runs beside the program (the bounds
#: stage has the rest of that core).
SEARCH_SHARE = 0.8
#: The whole program gets its memory rows up front when there are at most this many
#: (:func:`live_steps`), else lazily.
ROWS_UP_FRONT = 2_000
#: Small problems with few memory rows: the share of the time for the primal search before
#: the proof race (:func:`_race`), and the seconds the race leaves before the deadline.
PRIMAL_FIRST = 0.08
RACE_END_S = 0.5
#: At most this many seconds of that search (G at 120 s: 9 s of it before a 0.5 s proof).
PRIMAL_FIRST_S = 5.0
#: Nodes freed per neighbourhood at first and at most.
LNS_NODES = (25, 25)


def search_and_prove(
    c: Compact, prove: bool, deadline: float, seed: int, info: dict, threads: int = 2
):
    """The heuristic, then (``prove``) the program and the neighbourhood search, on the reduced
    problem ``c``: ``(best plan or None, lower bound, proven)``; figures go into ``info``.
    ``threads``: processes of the primal search's portfolio on large problems (with two or
    more, the second joins once the bound's share of the time is over)."""
    t0 = time.monotonic()
    info.update(reduced_nodes=int((c.k > 1).sum()), reduced_edges=len(c.edge_nodes))
    nb = search.neighbourhood(c)
    if prove and len(c.edge_cost) > SMALL_ENTRIES:  # too large for the whole program
        # The bounds stage beside the primal search for the first part of the time, priced
        # toward a quick plan of the price search. With two processes or more, the bound has a
        # core of its own meanwhile: the portfolio's second search joins when its share ends
        # (sharing two cores three ways, M's bound reached 1.51 %; with a core of its own for
        # the whole time 1.04 %, but S's search, alone on one core, lost 1-3 %).
        # Up to RACE_ENTRIES, the proof race first for a share of the time; without a proof,
        # this from its plan, its bound kept.
        start, first = None, -math.inf
        if _races(c, RACE_ENTRIES):
            start, first, proven = _race(c, nb, None, -math.inf,
                                         t0 + RACE_SHARE * (deadline - t0), seed, info, threads)
            if proven:
                return start, first, True
        t1 = time.monotonic()
        quick = start if start is not None else \
            search.price_search(c, nb, search.greedy_start(c, nb), min(deadline, t1 + 2.0))
        target = None if quick is None else search.objective(c, quick)
        bound_end = t1 + BOUND_SHARE * (deadline - t1)
        beside = BoundProcess(c, bound_end, target)
        check = t1 + BOUND_CHECK * (deadline - t1)
        joined = mp.get_context("fork").RawValue("d", math.nan)  # set in the joining process

        def far_below(incumbent: float) -> bool:  # the bound's core is better spent searching
            bound = beside.so_far()
            far = time.monotonic() >= check and np.isfinite(bound) and \
                np.isfinite(incumbent) and bound < (1.0 - BOUND_FAR) * incumbent  # fmt: skip
            if far:
                joined.value = time.monotonic() - t1
            return far

        best = primal.search(c, deadline, seed=seed, threads=threads, start=start,
                             join_at=bound_end if threads > 1 else None,
                             join_if=far_below)  # fmt: skip
        info["primal_s"] = round(time.monotonic() - t1, 3)
        if threads > 1:  # when the second search started, if before the bound's share ended
            info["joined_s"] = None if math.isnan(joined.value) else round(joined.value, 3)
        lagrangian = beside.result()
        info["lagrangian_bound"] = lagrangian
        bound = edge_split_bound(c)
        info["bound_by"] = "edge split" if lagrangian is None or lagrangian <= bound else \
            "lagrangian"  # fmt: skip
        bound = bound if lagrangian is None else max(bound, lagrangian)
        if first > bound:
            bound, info["bound_by"] = first, info.get("race_bound_by", "race")
        return best, bound, False
    x = search.greedy_start(c, nb)
    heuristic_end = min(deadline, t0 + max(1.0, HEURISTIC_SHARE * (deadline - t0)))
    best = search.price_search(c, nb, x, heuristic_end)
    info["heuristic_s"] = round(time.monotonic() - t0, 3)
    bound = edge_split_bound(c)
    info["bound_by"] = "edge split"  # which stage gave the bound returned
    proven = False
    if best is not None and not np.isfinite(search.objective(c, best)):
        best = None  # a forbidden pair left: not a solution of the reduced problem
    if prove:
        # On the other core: the primal search, then the bounds stage (priced toward its plan).
        # Not without a plan of the heuristic: the time may be needed to look among plans
        # with forbidden pairs (see engine.pairwise_stage).
        # Not beside the proof race either: its two engines take the two cores.
        searcher: primal.SearchProcess | None = None
        if best is not None and (c.k > 1).any() and not _races(c):
            searcher = primal.SearchProcess(c, t0 + SEARCH_SHARE * (deadline - t0), seed=seed + 1,
                                          start=best, bound_until=deadline - 0.3)  # fmt: skip
        best, bound, proven = _exact(c, nb, best, bound, deadline, seed, info, threads)
        if searcher is not None and proven:
            searcher.cancel()
        elif searcher is not None:
            t = time.monotonic()
            found, lagrangian = searcher.result()
            info["beside_wait_s"] = round(time.monotonic() - t, 3)
            info["lagrangian_bound"] = lagrangian
            info["beside_objective"] = None if found is None else _value_or_inf(c, found)
            if lagrangian is not None and lagrangian > bound:
                bound, info["bound_by"] = lagrangian, "lagrangian"
            if found is not None and search.fits(c, found) and \
                    search.objective(c, found) < _value_or_inf(c, best):  # fmt: skip
                best = found
                info["beside_won"] = True
    if best is not None and not np.isfinite(search.objective(c, best)):
        best, proven = None, False
    return best, bound, proven


def _value_or_inf(c: Compact, x: np.ndarray | None) -> float:
    return np.inf if x is None else float(search.objective(c, x))


def _exact(c, nb, best, bound, deadline, seed, info, threads=2):
    """toulbar2 and the whole program at once (few memory rows, whole-number costs and
    usages: :func:`_race`), else the whole program for a share of the time, then
    large-neighbourhood search."""
    if _races(c):
        best, bound, proven = _race(c, nb, best, bound, deadline, seed, info, threads)
        if best is not None:
            return best, bound, proven
    if len(c.edge_cost) <= SMALL_ENTRIES:  # the whole program, while there is time
        everything = np.ones(c.n_nodes, dtype=bool)
        start = best if best is not None else np.zeros(c.n_nodes, dtype=np.int64)
        t = time.monotonic()
        share = 0.9 * (deadline - t)
        # in a process stopped soon after its share: HiGHS may overrun its limit by seconds
        stopped = MipResult(None, math.inf, -math.inf, False, "stopped after its time share")
        end = t + share + min(2.0, 0.05 * (deadline - t))
        res = primal.bounded(_whole_program, end, stopped,
                             (c, everything, start, share, best is not None))  # fmt: skip
        if res.bound > bound:
            bound, info["bound_by"] = res.bound, "integer program"
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


def _races(c: Compact, most: int = SMALL_ENTRIES) -> bool:
    """Whether the proof on ``c`` is the race of toulbar2 and the program (:func:`_race`):
    at most ``most`` pairwise entries, whole-number costs and usages, few memory rows."""
    return len(c.edge_cost) <= most and windows.is_whole(c) and \
        len(live_steps(c)) <= ROWS_UP_FRONT  # fmt: skip


def _race(c, nb, best, bound, deadline, seed, info, threads):
    """The primal search (``threads`` processes) for a moment (toulbar2 prunes by its plan's
    cost), then toulbar2 and the whole program from that plan at once, one core each, until one
    proves optimality or the deadline (:func:`~.mip.race`): ``(plan, bound, proven)``.

    One after the other, toulbar2 had 40 % of the time after the search (~21 s of CPU at a
    60 s limit) and tight_150_206 was not proven; toulbar2 alone proves it in 35-38 s of CPU.
    """
    t = time.monotonic()
    x = primal.search(c, t + min(PRIMAL_FIRST * (deadline - t), PRIMAL_FIRST_S), seed=seed,
                      start=best, threads=threads)  # fmt: skip
    if x is not None and (best is None or search.objective(c, x) < search.objective(c, best)):
        best = x
    if best is None or not np.isfinite(search.objective(c, best)):
        return None, bound, False  # no plan to start from (nor to prune by): the program alone
    info["proof_from"] = float(search.objective(c, best))
    attempts = mip.race(c, nb, best, deadline - RACE_END_S, (mip.TOULBAR2, INTEGER_PROGRAM))
    info["proof"] = {a.engine: {"seconds": round(a.seconds, 3), "proven": a.proven,
                                "bound": a.bound, "note": a.note} for a in attempts}  # fmt: skip
    best, value, proven = mip.best_of(c, best, attempts)
    if proven:
        info["bound_by"] = next(a.engine for a in attempts if a.proven or a.bound >= value)
        return best, value, True
    strongest = max(attempts, key=lambda a: a.bound)
    if strongest.bound > bound:
        bound, info["bound_by"] = strongest.bound, strongest.engine
        info["race_bound_by"] = strongest.engine
    return best, bound, False


def _integer_program(c: Compact, nb: search.Neighbourhood, x: np.ndarray, seconds: float):
    """The whole program from ``x`` (a MIP start) within ``seconds``, its memory rows up front
    (:func:`_whole_program`)."""
    t = time.monotonic()
    res = _whole_program(c, np.ones(c.n_nodes, dtype=bool), x, seconds, True)[0]
    fits = res.x is not None and search.fits(c, res.x) and bool(np.isfinite(res.objective))
    return mip.Attempt("integer program", res.x if fits else None, res.bound,
                         res.optimal and fits, time.monotonic() - t, res.status)  # fmt: skip


#: The race's second engine (:func:`~.mip.race`); HiGHS keeps its own (wall-clock) limit.
INTEGER_PROGRAM = mip.Engine("integer program", _integer_program)

def _whole_program(c: Compact, free: np.ndarray, start: np.ndarray, seconds: float, warm: bool):
    # Every row up front when they are few: lazily, HiGHS solved the program again per round
    # from scratch (a 60-node memory-tight problem: no proof in 52 s; with all rows, proven in
    # 25 s); the contest's A has 19,779 (proven lazily in 17 s, not with them in 44 s).
    steps = live_steps(c)
    return (solve_mip(c, free, start, seconds, steps=steps if len(steps) <= ROWS_UP_FRONT else None,
                      warm=warm),)  # fmt: skip


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


# The integer program of the reduced problem (module docstring).


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
    steps: np.ndarray | None = None,
    warm: bool = False,
) -> MipResult:
    """Optimise the free nodes with the others fixed at ``x_fixed`` (all free: the whole
    problem). ``relax`` solves the LP relaxation (its value is a lower bound).

    Memory rows are added lazily: solve, find the steps over the limit, add their rows, solve
    again; a solution that fits is then optimal for the full model, and every round's dual
    bound is a bound of the full model (it has fewer rows). ``steps`` (sorted) get their rows
    from the first round on (:func:`live_steps`: all that can bind). ``warm``: HiGHS starts
    from ``x_fixed``'s choice of the free nodes (an incumbent from the first node on).
    """
    deadline = time.monotonic() + time_limit_s
    free = free & (c.k > 1)  # a node with one strategy is fixed already
    if not free.any():
        x = x_fixed.copy()
        value = search.objective(c, x)
        fits = not np.isfinite(c.limit) or bool((c.profile(x) <= c.limit).all())
        ok = fits and bool(np.isfinite(value))  # inf: a forbidden pair between fixed nodes
        return MipResult(x if ok else None, value if ok else math.inf, value if ok else math.inf,
                         ok, "nothing to choose")  # fmt: skip
    steps = np.zeros(0, dtype=np.int64) if steps is None else steps
    bound = -math.inf
    last = MipResult(None, math.inf, bound, False, "not run")
    nodes = np.flatnonzero(free)
    start = np.zeros(int(c.k[nodes].sum())) if warm and not relax else None
    if start is not None:
        start[np.cumsum(c.k[nodes]) - c.k[nodes] + x_fixed[nodes]] = 1.0
    for _ in range(max_rounds):
        left = deadline - time.monotonic()
        if left <= 0.05:
            break
        cost, A, lb, ub, n_x, fixed_cost = build_mip(c, free, x_fixed, steps)
        integer = None if relax else np.arange(len(cost)) < n_x
        # a strategy forbidden next to a fixed neighbour's choice (an infinite cost) is out
        barred = ~np.isfinite(cost)
        cost = np.where(barred, 0.0, cost)
        res = mip.solve_highs(cost, A, lb, ub, np.zeros(len(cost)), np.where(barred, 0.0, 1.0),
                          integer, left, "mip_rel_gap=1e-9", start)  # fmt: skip
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


def live_steps(c: Compact) -> np.ndarray:
    """The steps where a maximal set of tight items is live (sorted): rows of the limit there
    hold it everywhere.

    The items live at any step are live at the last start of one of them, so the starts of
    tight items cover every step where the limit can bind, and of those a start whose items
    all outlive the next start is covered by it: the last start each item is live at is kept.
    """
    tight = np.flatnonzero(c.item_tight)
    starts = np.unique(c.item_start[tight])
    last = np.searchsorted(starts, c.item_end[tight], side="left") - 1
    return starts[np.unique(last[last >= 0])].astype(np.int64)

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
