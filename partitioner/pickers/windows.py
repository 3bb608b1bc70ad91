"""Exact moves that keep the usage limit: windows around the binding steps, solved by toulbar2.

Where memory takes almost the whole limit, penalties (:mod:`.primal`) find a plan that fits but
cannot tell which of two plans near the limit is cheaper: moves under penalties either break the
limit or leave room unused. Here the limit is a hard constraint of the move itself. A *window*
of nodes around a step where the plan's usage is within a few percent of the limit (a binding
step) is freed, the other nodes are fixed, and the free nodes are solved exactly by toulbar2
with their edges as cost functions and the limit as knapsack constraints, one per distinct set
of free items live together at a step where they could exceed what the fixed items leave
(:func:`window_rows`). The move never raises the cost and always fits.

Examples
--------
>>> import time
>>> from tacopt.partitioner.problem.contest import problem_from_dict
>>> from tacopt.partitioner.problem.contest_like import memory_tight
>>> from tacopt.partitioner.problem import index_problem
>>> from tacopt.partitioner.pickers.reduce import reduce_problem
>>> from tacopt.partitioner.pickers import search
>>> c = reduce_problem(index_problem(problem_from_dict(memory_tight(120, seed=3))))
>>> nb = search.neighbourhood(c)
>>> x = search.lowest_usage(c, nb)
>>> y = improve_windows(c, nb, x, time.monotonic() + 2.0, np.random.default_rng(0))
>>> bool(search.fits(c, y) and search.objective(c, y) <= search.objective(c, x))
True
"""

from __future__ import annotations

import time

import numpy as np

from tacopt.partitioner.pickers import search as ls
from tacopt.partitioner.pickers.reduce import Compact, ranges

#: A step binds when the plan's usage there is within this share of the limit.
BINDING = 0.02
#: Free nodes per window: first, least and most (adapted to how fast windows are proven).
WINDOW_NODES = (40, 12, 160)


def window_rows(
    c: Compact, x: np.ndarray, free: np.ndarray
) -> list[tuple[list[tuple[int, int, int]], int]]:
    """The usage limit over the ``free`` nodes, the others fixed at ``x``: per distinct set of
    free items live together at a step where they could exceed the room the fixed items leave,
    ``(terms, room)`` meaning ``sum of usage above the item's lowest <= room``, each term
    ``(node, strategy, usage above lowest)`` (terms of one node and strategy summed)."""
    its = np.flatnonzero(free[c.item_node])
    if not len(its) or not np.isfinite(c.limit):
        return []
    fixed = c.profile(x, np.flatnonzero(~free[c.item_node]))
    lows = np.minimum.reduceat(c.item_usage, c.item_offset[:-1])[its]
    highs = np.maximum.reduceat(c.item_usage, c.item_offset[:-1])[its]
    start, end = c.item_start[its], c.item_end[its]
    # The free items' live set changes only at their own starts and ends: segments of steps.
    cuts = np.unique(np.concatenate(([0, c.n_steps], start, end)))
    cuts = cuts[cuts <= c.n_steps]
    seg_lo, seg_hi = cuts[:-1], cuts[1:]
    # Every (free item, strategy) with usage above the item's lowest: its node and the excess.
    ik = c.k[c.item_node[its]]
    ent_item = np.repeat(np.arange(len(its)), ik)
    ent_s = ranges(ik)
    ent_over = c.item_usage[np.repeat(c.item_offset[its], ik) + ent_s] - np.repeat(lows, ik)
    ent_node = c.item_node[its][ent_item]
    width = int(c.k.max()) + 1
    rows = []
    for a, b in zip(seg_lo.tolist(), seg_hi.tolist()):
        live = (start <= a) & (end > a)
        if not live.any():
            continue
        room = float((c.limit - fixed[a:b]).min()) - float(lows[live].sum())
        if float((highs - lows)[live].sum()) <= room:
            continue  # cannot bind here
        hit = live[ent_item] & (ent_over > 0)
        keys, where = np.unique(ent_node[hit] * width + ent_s[hit], return_inverse=True)
        total = np.rint(np.bincount(where, ent_over[hit], len(keys))).astype(np.int64)
        rows.append((list(zip((keys // width).tolist(), (keys % width).tolist(),
                              total.tolist())), int(np.floor(room + 1e-9))))  # fmt: skip
    return rows


def window_move(
    c: Compact, nb: ls.Neighbourhood, x: np.ndarray, free: np.ndarray, seconds: int = 1
) -> tuple[np.ndarray, bool]:
    """The cheapest choice of the ``free`` nodes within the limit, the others fixed at ``x``
    (which fits), by toulbar2 within ``seconds`` of CPU: ``(choice, proven)``; the choice is
    ``x`` unless a cheaper one that fits was found."""
    import pytoulbar2  # required (pyproject.toml); 10 ms to import, loaded at the first solve

    free = free & (c.k > 1)
    nodes = np.flatnonzero(free)
    if not len(nodes):
        return x, True
    cfn = pytoulbar2.CFN(ubinit=_free_cost(c, nb, x, free), resolution=0, verbose=-1, seed=1)
    if not _network(cfn, c, nb, x, free):
        return x, False  # x itself does not fit here: nothing to keep
    res, ended = _run(cfn, seconds)
    if not res:  # nothing below x found: proven so if the search ended before the limit
        return x, ended
    proven = ended and float(cfn.GetDDualBound()) >= float(res[1]) - 0.5
    return _better(c, x, nodes, res[0]), proven


def prove_whole(
    c: Compact, nb: ls.Neighbourhood, x: np.ndarray, seconds: int
) -> tuple[np.ndarray, bool, float]:
    """The optimum within the limit over every node, by toulbar2 from ``x`` (which fits) with
    VAC in preprocessing, within ``seconds`` of CPU: ``(choice, proven, bound)``, the choice
    ``x`` unless a cheaper one was found; ``proven`` when the search ended before the limit;
    ``bound`` a lower bound of the objective, proven or not (toulbar2's global dual bound, at
    most the choice's cost). The costs and usages must be whole numbers (toulbar2 rounds them:
    :func:`is_whole`). SIGVTALRM (toulbar2's CPU-time limit) stops it early with what it has.

    VAC in preprocessing only: a 100-node memory-tight problem (25 strategies per node) proven
    in 7.6 s of CPU with it, 35 s without (a 200-node one: 9.7 s, not in 60 s without). After a
    complete search toulbar2's dual bound is stale (below the optimum), so the proof is the
    search's end.
    """
    import pytoulbar2  # required (pyproject.toml); 10 ms to import, loaded at the first solve

    free = c.k > 1
    nodes = np.flatnonzero(free)
    value = float(ls.objective(c, x))
    if not len(nodes):
        return x, True, value
    cfn = pytoulbar2.CFN(ubinit=_free_cost(c, nb, x, free), resolution=0, verbose=-1, seed=1,
                         vac=1)  # fmt: skip
    if not _network(cfn, c, nb, x, free):
        return x, False, -np.inf
    res, ended = _run(cfn, seconds)
    y = x if not res else _better(c, x, nodes, res[0])
    # the network's costs are the objective less a constant (fixed nodes, shifts)
    bound = min(float(cfn.GetDDualBound()) + value - _free_cost(c, nb, x, free),
                float(ls.objective(c, y)))  # fmt: skip
    return y, ended and (not res or y is not x), bound  # proven: nothing below x, or y


def is_whole(c: Compact) -> bool:
    """Whether every finite cost and every usage of ``c`` is a whole number: toulbar2's costs
    are integers (``resolution=0``) and the knapsack rows round usages, so only then is its
    optimum the problem's."""
    parts = (c.cost, c.edge_cost, c.item_usage)
    return all(bool((np.round(a[np.isfinite(a)]) == a[np.isfinite(a)]).all()) for a in parts)


def _run(cfn, seconds: float):
    """toulbar2's search within ``seconds`` of CPU: its result (None: nothing below the upper
    bound) and whether it ended before the limit."""
    limit = max(1, int(seconds))
    cpu = time.process_time()
    try:
        res = cfn.Solve(timeLimit=limit)
    except Exception:  # toulbar2 signals some contradictions by exceptions: nothing below x
        return None, True
    return res, time.process_time() - cpu < 0.9 * limit  # toulbar2's limit is CPU time


def _shifted(c: Compact, nb: ls.Neighbourhood, x: np.ndarray, free: np.ndarray):
    """Per strategy, its cost plus its edges to fixed neighbours at ``x``, and per free node
    that cost's least (taken off, so each node's least is 0)."""
    ent = ~free[nb.nbr]  # edges to fixed neighbours fold into the free nodes' costs
    w = nb.w[nb.base[ent] + nb.stride[ent] * x[nb.nbr[ent]]]
    local = c.cost + np.bincount(nb.g[ent], weights=w, minlength=len(c.cost))
    return local, np.minimum.reduceat(local, c.offset[:-1])[np.flatnonzero(free)]


def _free_cost(c: Compact, nb: ls.Neighbourhood, x: np.ndarray, free: np.ndarray) -> float:
    """The cost of ``x`` in the free nodes' network (:func:`_network`): toulbar2's initial
    upper bound (solutions strictly below it)."""
    local, shift = _shifted(c, nb, x, free)
    nodes = np.flatnonzero(free)
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    inner = np.flatnonzero(free[u] & free[v])
    cur = float((local[c.offset[nodes] + x[nodes]] - shift).sum())
    return cur + float(nb.w[c.edge_offset[inner] + x[u[inner]] * c.k[v[inner]] + x[v[inner]]].sum())


def _network(cfn, c: Compact, nb: ls.Neighbourhood, x: np.ndarray, free: np.ndarray) -> bool:
    """The free nodes as toulbar2 variables, their costs and edges as cost functions and the
    limit as knapsack constraints (:func:`window_rows`); False if ``x`` itself breaks one."""
    local, shift = _shifted(c, nb, x, free)
    nodes = np.flatnonzero(free)
    pos = np.full(c.n_nodes, -1)
    pos[nodes] = np.arange(len(nodes))
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    inner = np.flatnonzero(free[u] & free[v])
    for i in nodes.tolist():
        cfn.AddVariable(f"x{i}", range(int(c.k[i])))
    for j, i in enumerate(nodes.tolist()):
        cfn.AddFunction([j], (local[c.offset[i] : c.offset[i + 1]] - shift[j]).tolist())
    for e in inner.tolist():
        cfn.AddFunction([int(pos[u[e]]), int(pos[v[e]])],
                        nb.w[c.edge_offset[e] : c.edge_offset[e + 1]].tolist())  # fmt: skip
    for terms, room in window_rows(c, x, free):
        if room < 0:
            return False
        cfn.AddGeneralizedLinearConstraint([(int(pos[i]), s, w) for i, s, w in terms], "<=",
                                           room)  # fmt: skip
    return True


def _better(c: Compact, x: np.ndarray, nodes: np.ndarray, values) -> np.ndarray:
    """``x`` with the free nodes at toulbar2's ``values`` if that is cheaper and fits."""
    y = x.copy()
    y[nodes] = np.asarray(values, dtype=np.int64)
    return y if ls.objective(c, y) < ls.objective(c, x) and ls.fits(c, y) else x


def binding_window(
    c: Compact, nb: ls.Neighbourhood, x: np.ndarray, rng: np.random.Generator, size: int
) -> np.ndarray:
    """About ``size`` movable nodes around a random binding step ``t`` of ``x``: the nodes whose
    items start nearest ``t`` (program order: neighbours in the graph, mostly), and a third
    drawn from the long-lived items live at ``t`` (they hold memory at every step near it)."""
    prof = c.profile(x)
    free = np.zeros(c.n_nodes, dtype=bool)
    if not len(prof):
        return free
    binding = np.flatnonzero(prof >= (1.0 - BINDING) * c.limit)
    if not len(binding):
        binding = np.array([int(np.argmax(prof))])
    t = int(rng.choice(binding))
    movable = c.k[c.item_node] > 1
    near = np.flatnonzero(movable)
    order = near[np.argsort(np.abs(c.item_start[near] - t) + rng.random(len(near)), kind="stable")]
    free[c.item_node[order[: max(1, (2 * size) // 3)]]] = True
    live = np.flatnonzero(movable & (c.item_start <= t) & (c.item_end > t) & ~free[c.item_node])
    if len(live):
        free[rng.choice(c.item_node[live], size=min(len(live), size // 3), replace=False)] = True
    return free


def improve_windows(
    c: Compact,
    nb: ls.Neighbourhood,
    x: np.ndarray,
    deadline: float,
    rng: np.random.Generator,
    size: int = WINDOW_NODES[0],
) -> np.ndarray:
    """Window moves (:func:`binding_window`, :func:`window_move`) from ``x`` (which fits) until
    ``deadline`` (a move started before it may take a CPU second); windows grow while
    toulbar2 proves them fast and shrink when it does not."""
    least, most = WINDOW_NODES[1], WINDOW_NODES[2]
    while time.monotonic() < deadline:  # a move may take a CPU second past it
        free = binding_window(c, nb, x, rng, size)
        t = time.monotonic()
        x, proven = window_move(c, nb, x, free)
        took = time.monotonic() - t
        size = min(int(size * 1.2) + 1, most) if proven and took < 0.3 else \
            max(int(size * 0.8), least) if not proven else size  # fmt: skip
    return x
