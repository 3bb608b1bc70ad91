"""Local search on a reduced pairwise problem: batched best responses under a usage limit.

Nodes are coloured so that no edge joins two nodes of one colour; all nodes of a colour then
move at once to their best strategy given their neighbours (iterated conditional modes). Two
modes:

- *penalised*: usage at step ``t`` costs ``lam[t]`` per unit (Lagrangian prices); the limit
  may be broken, and :func:`price_search` raises the prices where it is until it holds;
- *hard*: a move may raise a node's usage only by the slack left under the limit on its
  interval, and moves that together break the limit are undone, so a solution that fits keeps
  fitting.

And one exact move: :func:`exact_sub` solves a set of free nodes (the others fixed) with toulbar2,
a cost-function-network solver, for the primal search's whole solves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from tacopt.partitioner.pickers.reduce import Compact, ranges


@dataclass(frozen=True, slots=True, eq=False)
class Neighbourhood:
    """Precomputed index arrays: for each (strategy, incident edge) pair, the edge entry at
    the neighbour's current choice is ``edge_cost[base + stride * x[nbr]]``."""

    g: np.ndarray
    base: np.ndarray
    stride: np.ndarray
    nbr: np.ndarray
    owner: np.ndarray
    w: np.ndarray
    colours: list[np.ndarray]
    colour_entries: list[np.ndarray]
    colour_strategies: list[np.ndarray]
    adjacency: list[np.ndarray]  # incident edges per node
    item_g: np.ndarray  # per (item, strategy) entry: the node's strategy index
    colour_items: list[np.ndarray]


def neighbourhood(c: Compact) -> Neighbourhood:
    """The index arrays and a greedy colouring of ``c``'s graph."""
    k, off, eoff = c.k, c.offset, c.edge_offset
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    ku, kv = k[u], k[v]
    g = np.concatenate((np.repeat(off[u], ku) + ranges(ku), np.repeat(off[v], kv) + ranges(kv)))
    base = np.concatenate((np.repeat(eoff[:-1], ku) + ranges(ku) * np.repeat(kv, ku),
                           np.repeat(eoff[:-1], kv) + ranges(kv)))  # fmt: skip
    stride = np.concatenate((np.ones(int(ku.sum()), np.int64), np.repeat(kv, kv)))
    nbr = np.concatenate((np.repeat(v, ku), np.repeat(u, kv)))
    owner = np.repeat(np.arange(c.n_nodes), k)
    G = nx.Graph()
    G.add_nodes_from(range(c.n_nodes))
    G.add_edges_from(c.edge_nodes.tolist())
    colour = nx.greedy_color(G, strategy="largest_first")
    col = np.array([colour[i] for i in range(c.n_nodes)], dtype=np.int64)
    movable = k > 1
    colours = [np.flatnonzero((col == j) & movable) for j in range(int(col.max(initial=-1)) + 1)]
    colours = [nodes for nodes in colours if len(nodes)]
    ecol = col[owner[g]]
    colour_entries = [np.flatnonzero(ecol == col[nodes[0]]) for nodes in colours]
    colour_strategies = [np.repeat(off[nodes], k[nodes]) + ranges(k[nodes]) for nodes in colours]
    by_node = np.argsort(np.concatenate((u, v)), kind="stable")
    ends = np.searchsorted(np.concatenate((u, v))[by_node], np.arange(c.n_nodes + 1))
    edge_of = np.concatenate((np.arange(len(u)), np.arange(len(u))))[by_node]
    adjacency = [edge_of[ends[i] : ends[i + 1]] for i in range(c.n_nodes)]
    finite = np.isfinite(c.edge_cost)
    big = 4.0 * (np.abs(c.edge_cost[finite]).sum() + np.abs(c.cost).sum()) + 1.0
    w = np.where(finite, c.edge_cost, big)  # a forbidden pair: dearer than any whole solution
    ik = k[c.item_node]
    item_g = np.repeat(off[c.item_node], ik) + ranges(ik)
    item_col = col[c.item_node]
    colour_items = [np.flatnonzero(item_col == col[nodes[0]]) for nodes in colours]
    return Neighbourhood(g, base, stride, nbr, owner, w, colours, colour_entries, colour_strategies,
                         adjacency, item_g, colour_items)  # fmt: skip


def objective(c: Compact, x: np.ndarray) -> float:
    """The reduced problem's cost of ``x`` (float; ``inf`` on a forbidden pair)."""
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    pair = c.edge_cost[c.edge_offset[:-1] + x[u] * c.k[v] + x[v]].sum()
    return float(c.cost[c.offset[:-1] + x].sum() + pair + c.const)


def profile(c: Compact, x: np.ndarray) -> np.ndarray:
    """Usage at each step of the chosen strategies."""
    return c.profile(x)


def fits(c: Compact, x: np.ndarray) -> bool:
    return not np.isfinite(c.limit) or bool(profile(c, x).max(initial=0.0) <= c.limit)


def _range_max(prof: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """max(prof[s:e]) per node (``-inf`` for empty intervals), by a sparse table."""
    if len(prof) == 0:
        return np.full(len(start), -np.inf)
    table = [prof]
    while 2 * len(table[-1]) > len(prof) and (1 << len(table)) <= len(prof):
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-half], prev[half:]))
    length = end - start
    ok = length > 0
    out = np.full(len(start), -np.inf)
    lev = np.floor(np.log2(np.maximum(length[ok], 1))).astype(np.int64)
    s, e = start[ok], end[ok]
    vals = np.empty(len(s))
    for j in np.unique(lev):
        m = lev == j
        t = table[j]
        vals[m] = np.maximum(t[s[m]], t[e[m] - (1 << j)])
    out[ok] = vals
    return out


def sweep(
    c: Compact,
    nb: Neighbourhood,
    x: np.ndarray,
    lam: np.ndarray | None = None,
    hard: bool = False,
    max_passes: int = 50,
    deadline: float = float("inf"),
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Best responses colour by colour until no node moves (returns a new ``x``).

    ``lam`` prices usage per step (penalised mode); ``hard`` keeps the limit.
    """
    x = x.copy()
    pen = _prices(c, nb, lam)
    prof = profile(c, x) if hard else np.zeros(0)
    order = list(range(len(nb.colours)))
    for _ in range(max_passes):
        moved = 0
        if rng is not None:
            rng.shuffle(order)
        for j in order:
            if time.monotonic() > deadline:
                return x
            moved += _move_colour(c, nb, x, j, pen, prof if hard else None)
        if moved == 0:
            break
    return x


def _move_colour(c, nb, x, j, pen, prof) -> int:
    nodes, ent, strat = nb.colours[j], nb.colour_entries[j], nb.colour_strategies[j]
    w = nb.w[nb.base[ent] + nb.stride[ent] * x[nb.nbr[ent]]]
    local = c.cost + pen + np.bincount(nb.g[ent], weights=w, minlength=len(c.cost))
    k = c.k[nodes]
    cur = c.offset[nodes] + x[nodes]
    vals = local[strat].copy()
    if prof is not None and np.isfinite(c.limit):
        vals[_breaks_limit(c, nb, x, j, prof)[strat]] = np.inf
    seg = np.cumsum(k) - k
    best = np.minimum.reduceat(vals, seg)
    cur_val = local[cur]
    better = best < cur_val - 1e-9 * np.maximum(1.0, np.abs(cur_val))
    if not better.any():
        return 0
    owner = np.repeat(np.arange(len(nodes)), k)
    hit = vals <= best[owner]
    first = np.full(len(nodes), np.iinfo(np.int64).max)
    np.minimum.at(first, owner[hit], (np.arange(len(vals)) - seg[owner])[hit])
    mv = np.flatnonzero(better)
    old = x[nodes[mv]].copy()
    x[nodes[mv]] = first[mv]
    if prof is not None and np.isfinite(c.limit):
        mv = _keep_fitting(c, x, nodes[mv], old, prof)
    return len(mv)


def _breaks_limit(c, nb, x, j, prof) -> np.ndarray:
    """Per strategy (all nodes of colour j): whether taking it alone breaks the limit."""
    items = nb.colour_items[j]
    slack = c.limit - _range_max(prof, c.item_start[items], c.item_end[items])
    kk = c.k[c.item_node[items]]
    pos = np.repeat(c.item_offset[items], kk) + ranges(kk)
    now = c.item_usage[c.item_offset[items] + x[c.item_node[items]]]
    bad = c.item_usage[pos] - np.repeat(now, kk) > np.repeat(slack, kk) + 1e-9
    return np.bincount(nb.item_g[pos], weights=bad, minlength=len(c.cost)) > 0


def _keep_fitting(c, x, moved, old, prof) -> np.ndarray:
    """Update ``prof`` for the moves; undo usage-raising moves on steps over the limit."""
    pos_of = np.full(c.n_nodes, -1)
    pos_of[moved] = np.arange(len(moved))
    items = np.flatnonzero(pos_of[c.item_node] >= 0)
    who = pos_of[c.item_node[items]]
    start, end = c.item_start[items], c.item_end[items]
    steps = len(prof)
    while True:
        d = c.item_usage[c.item_offset[items] + x[c.item_node[items]]] \
            - c.item_usage[c.item_offset[items] + old[who]]  # fmt: skip
        delta = np.zeros(steps + 1)
        np.add.at(delta, start, d)
        np.add.at(delta, end, -d)
        new = prof + np.cumsum(delta[:-1])
        over = new > c.limit + 1e-9
        if not over.any():
            prof[:] = new
            return moved
        cnt = np.concatenate(([0], np.cumsum(over)))
        bad_item = (d > 0) & (cnt[end] - cnt[start] > 0)
        bad = np.zeros(len(moved), dtype=bool)
        bad[who[bad_item]] = True
        if not bad.any():  # cannot happen when prof fitted before; be safe
            x[moved] = old
            return moved[:0]
        x[moved[bad]] = old[bad]


def price_search(
    c: Compact,
    nb: Neighbourhood,
    x: np.ndarray,
    deadline: float,
    rounds: int = 40,
) -> np.ndarray | None:
    """Lagrangian search: best responses with usage priced per step; prices rise where the
    limit breaks and decay where it holds. Each round's choice is repaired (nodes on steps
    over the limit take their lowest usage) and polished by hard sweeps; the cheapest
    fitting choice is returned (None if no round produced one)."""
    if not np.isfinite(c.limit):
        return sweep(c, nb, x, deadline=deadline)
    lam = np.zeros(c.n_steps)
    best: np.ndarray | None = None
    best_val = np.inf
    scale = max(float(np.abs(c.cost).mean()) if len(c.cost) else 1.0, 1.0) / max(c.limit, 1.0)
    low = lowest_usage(c, nb)
    for r in range(rounds):
        if time.monotonic() > deadline:
            break
        x = sweep(c, nb, x, lam=lam, deadline=deadline)
        prof = profile(c, x)
        over = prof > c.limit
        fixed = repair(c, x, prof, low)
        if fixed is not None:
            fixed = sweep(c, nb, fixed, hard=True, deadline=deadline)
            val = objective(c, fixed)
            if val < best_val:
                best, best_val = fixed, val
        if not over.any() and r > 0:
            lam *= 0.8  # prices too high somewhere: let them fall
        lam = np.where(over, lam * 1.5 + scale * (prof / c.limit - 1.0 + 0.05), lam)
    return best


def repair(c: Compact, x: np.ndarray, prof: np.ndarray, low: np.ndarray) -> np.ndarray | None:
    """``x`` with every node that has an item on a step over the limit moved to ``low`` (its
    lowest-usage strategy), repeated while that helps; None if it still does not fit."""
    x = x.copy()
    for _ in range(8):
        over = np.concatenate(([0], np.cumsum(prof > c.limit)))
        if over[-1] == 0:
            return x
        hit = over[c.item_end] - over[c.item_start] > 0
        nodes = np.unique(c.item_node[hit])
        nodes = nodes[x[nodes] != low[nodes]]
        if not len(nodes):
            return None
        x[nodes] = low[nodes]
        prof = profile(c, x)
    return x if (prof <= c.limit).all() else None


def lowest_usage(c: Compact, nb: Neighbourhood) -> np.ndarray:
    """Per node the strategy of least usage summed over its tight items (cheapest among
    equals); fits whenever any solution does when every node has one item."""
    tight = np.repeat(c.item_tight, c.k[c.item_node])
    total = np.bincount(nb.item_g[tight], weights=c.item_usage[tight], minlength=len(c.cost))
    seg = c.offset[:-1]
    if not len(seg):
        return np.zeros(0, dtype=np.int64)
    owner = nb.owner
    low = np.minimum.reduceat(total, seg)
    cand = np.where(total <= low[owner], c.cost, np.inf)
    best = np.minimum.reduceat(cand, seg)
    hit = cand <= best[owner]
    first = np.full(c.n_nodes, np.iinfo(np.int64).max)
    np.minimum.at(first, owner[hit], (np.arange(len(cand)) - seg[owner])[hit])
    return first


def greedy_start(c: Compact, nb: Neighbourhood, lam: np.ndarray | None = None) -> np.ndarray:
    """Nodes in index order, each taking its cheapest strategy given the nodes already placed
    (node cost, priced usage, and the edges to placed neighbours)."""
    pen = _prices(c, nb, lam)
    order = np.argsort(nb.owner[nb.g], kind="stable")
    ptr = np.searchsorted(nb.owner[nb.g][order], np.arange(c.n_nodes + 1))
    x = np.full(c.n_nodes, -1, dtype=np.int64)
    placed = np.zeros(c.n_nodes, dtype=bool)
    g, base, stride, nbr, w = nb.g, nb.base, nb.stride, nb.nbr, nb.w
    off = c.offset.tolist()
    local_all = c.cost + pen
    for i in range(c.n_nodes):
        lo, hi = off[i], off[i + 1]
        local = local_all[lo:hi].copy()
        ent = order[ptr[i] : ptr[i + 1]]
        if len(ent):
            ent = ent[placed[nbr[ent]]]
            if len(ent):
                vals = w[base[ent] + stride[ent] * x[nbr[ent]]]
                local += np.bincount(g[ent] - lo, weights=vals, minlength=hi - lo)
        x[i] = int(np.argmin(local))
        placed[i] = True
    return x


def _prices(c: Compact, nb: Neighbourhood, lam: np.ndarray | None) -> np.ndarray:
    """Per strategy: its items' usages times the summed price of the steps they cover."""
    if lam is None:
        return np.zeros(len(c.cost))
    cum = np.concatenate(([0.0], np.cumsum(lam)))
    price = cum[c.item_end] - cum[c.item_start]
    per_entry = c.item_usage * np.repeat(price, c.k[c.item_node])
    return np.bincount(nb.item_g, weights=per_entry, minlength=len(c.cost))


def local_costs(c: Compact, nb: Neighbourhood, x: np.ndarray, pen: np.ndarray) -> np.ndarray:
    """Every strategy's cost given the neighbours' current choices (node cost, price, edges)."""
    w = nb.w[nb.base + nb.stride * x[nb.nbr]]
    return c.cost + pen + np.bincount(nb.g, weights=w, minlength=len(c.cost))


def hub_moves(
    c: Compact, nb: Neighbourhood, x: np.ndarray, lam: np.ndarray | None, min_degree: int = 8
) -> np.ndarray:
    """Star moves: a node of high degree changes strategy together with each neighbour's best
    reply to it (one node alone cannot leave a strategy its neighbours are locked to). A move
    is kept when it lowers the priced objective."""
    pen = _prices(c, nb, lam)
    k, off = c.k, c.offset
    hubs = [i for i in range(c.n_nodes) if len(nb.adjacency[i]) >= min_degree and k[i] > 1]
    x = x.copy()
    for h in sorted(hubs, key=lambda i: -len(nb.adjacency[i])):
        local = local_costs(c, nb, x, pen)
        total = local[off[h] : off[h + 1]].copy() - local[off[h] + x[h]]
        replies = []
        for e in nb.adjacency[h]:
            a, b = c.edge_nodes[e]
            m = nb.w[c.edge_offset[e] : c.edge_offset[e + 1]].reshape(k[a], k[b])
            j, m = (b, m) if a == h else (a, m.T)  # rows: the hub's strategies
            lj = local[off[j] : off[j + 1]] - m[x[h]]
            opts = lj[None, :] + m  # (k_h, k_j): neighbour cost for each hub strategy
            pick = np.argmin(opts, axis=1)
            total += opts[np.arange(k[h]), pick] - local[off[j] + x[j]]
            replies.append((j, pick))
        s = int(np.argmin(total))
        if s == x[h] or total[s] >= -1e-9 * max(1.0, abs(float(local[off[h] + x[h]]))):
            continue
        trial = x.copy()
        trial[h] = s
        for j, pick in replies:
            trial[j] = pick[s]
        if _priced(c, nb, trial, pen) < _priced(c, nb, x, pen):
            x = trial
    return x


def _priced(c: Compact, nb: Neighbourhood, x: np.ndarray, pen: np.ndarray) -> float:
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    pair = nb.w[c.edge_offset[:-1] + x[u] * c.k[v] + x[v]].sum()
    return float((c.cost + pen)[c.offset[:-1] + x].sum() + pair)


def exact_sub(
    c: Compact,
    nb: Neighbourhood,
    x: np.ndarray,
    pen: np.ndarray,
    free: np.ndarray,
    seconds: int = 1,
    improve: bool = False,
) -> tuple[np.ndarray, bool]:
    """The penalised optimum over the ``free`` nodes, the others fixed at ``x``, by toulbar2
    (a cost-function-network solver) within ``seconds`` of CPU; returns the choice (``x`` if
    nothing better was found) and whether it was proven optimal. ``improve``: search only
    below the cost of ``x`` (an upper bound prunes the search)."""
    import pytoulbar2  # required (pyproject.toml); 10 ms to import, loaded at the first solve

    ent = ~free[nb.nbr]
    w = nb.w[nb.base[ent] + nb.stride[ent] * x[nb.nbr[ent]]]
    local = c.cost + pen + np.bincount(nb.g[ent], weights=w, minlength=len(c.cost))
    nodes = np.flatnonzero(free)
    pos = np.full(c.n_nodes, -1)
    pos[nodes] = np.arange(len(nodes))
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    inner = np.flatnonzero(free[u] & free[v])
    cur = sum(float(local[c.offset[i] + x[i]]) for i in nodes.tolist())
    cur += float(nb.w[c.edge_offset[inner] + x[u[inner]] * c.k[v[inner]] + x[v[inner]]].sum())
    shift = float(local.min(initial=0.0))
    ub = cur - shift * len(nodes) + 1.0 if improve else None
    cfn = pytoulbar2.CFN(ubinit=ub, resolution=0, verbose=-1, seed=int(x.sum() % 1000 + 1))
    for i in nodes.tolist():
        cfn.AddVariable(f"x{i}", range(int(c.k[i])))
    for i in nodes.tolist():
        cfn.AddFunction([int(pos[i])], (local[c.offset[i] : c.offset[i + 1]] - shift).tolist())
    for e in inner.tolist():
        cfn.AddFunction([int(pos[u[e]]), int(pos[v[e]])],
                        nb.w[c.edge_offset[e] : c.edge_offset[e + 1]].tolist())  # fmt: skip
    try:
        res = cfn.Solve(timeLimit=max(1, int(seconds)))
    except Exception:  # toulbar2 signals contradictions and limits by exceptions
        return x, False
    if not res:
        return x, False
    y = x.copy()
    y[nodes] = np.asarray(res[0], dtype=np.int64)
    optimal = cfn.GetDDualBound() >= res[1] - 0.5 if hasattr(cfn, "GetDDualBound") else False
    new = sum(float(local[c.offset[i] + y[i]]) for i in nodes.tolist())
    new += float(nb.w[c.edge_offset[inner] + y[u[inner]] * c.k[v[inner]] + y[v[inner]]].sum())
    return (y if new <= cur else x), optimal
