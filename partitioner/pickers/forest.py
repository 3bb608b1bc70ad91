"""The primal search's view of a reduced problem, and its exact moves on induced forests.

:func:`prepare` builds once per problem the index arrays the search works with (:class:`Graph`).
A *forest move* frees a random set of nodes whose induced subgraph is a forest
(:func:`induced_forest`), folds every edge toward a fixed node into the free nodes' costs, and
solves the rest exactly by min-sum dynamic programming (:func:`forest_dp`): the penalised cost
(:func:`penalised`, with the memory :func:`penalties` of :mod:`.primal`) never rises.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tacopt.partitioner.pickers import search as ls
from tacopt.partitioner.pickers.reduce import Compact, ranges


@dataclass(frozen=True, slots=True, eq=False)
class Graph:
    """Index arrays of a :class:`Compact` for the search: the neighbourhood of
    :mod:`.search`, per node its incident edges and neighbours (CSR), per item the
    usage above its lowest, and the block of every edge with forbidden pairs made finite."""

    nb: ls.Neighbourhood
    adj_ptr: np.ndarray
    adj_nbr: np.ndarray
    adj_edge: np.ndarray
    item_extra: np.ndarray  # per (item, strategy): usage minus the item's lowest usage
    movable: np.ndarray
    adj_node: np.ndarray  # the node each adjacency entry belongs to
    edge_u: list[int]
    views: list[tuple[np.ndarray, np.ndarray]]  # per edge: its matrix and the transpose


def prepare(c: Compact) -> Graph:
    """The index arrays :func:`search` works with (built once per problem)."""
    nb = ls.neighbourhood(c)
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    ends = np.concatenate((u, v))
    others = np.concatenate((v, u))
    eids = np.concatenate((np.arange(len(u)), np.arange(len(u))))
    order = np.argsort(ends, kind="stable")
    ptr = np.searchsorted(ends[order], np.arange(c.n_nodes + 1))
    ik = c.k[c.item_node]
    lows = np.minimum.reduceat(c.item_usage, c.item_offset[:-1]) if len(ik) else np.zeros(0)
    extra = c.item_usage - np.repeat(lows, ik)
    k = c.k
    blocks = np.split(nb.w, c.edge_offset[1:-1]) if len(u) else []
    views = [(m.reshape(k[a], k[b]), m.reshape(k[a], k[b]).T)
             for m, a, b in zip(blocks, u.tolist(), v.tolist())]  # fmt: skip
    return Graph(nb, ptr, others[order], eids[order], extra, np.flatnonzero(c.k > 1),
                 ends[order], u.tolist(), views)  # fmt: skip


def penalties(c: Compact, g: Graph, weight: np.ndarray) -> np.ndarray:
    """Per strategy: its items' usage above their lowest, times their weights."""
    per = np.repeat(weight, c.k[c.item_node]) * g.item_extra
    return np.bincount(g.nb.item_g, weights=per, minlength=len(c.cost))


def induced_forest(
    c: Compact, g: Graph, rng: np.random.Generator, priority: np.ndarray | None = None
) -> np.ndarray:
    """A random set of movable nodes whose induced subgraph is a forest (no cycle), grown
    greedily in random order (``priority`` biases the order: higher first, on average)."""
    nodes = g.movable
    key = rng.random(len(nodes))
    if priority is not None:
        key = key * (1.0 + priority[nodes])
    order = nodes[np.argsort(-key)].tolist()
    parent = list(range(c.n_nodes))
    inside = [False] * c.n_nodes
    ptr, nbr = g.adj_ptr.tolist(), g.adj_nbr.tolist()

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    chosen = []
    for v in order:
        roots = [find(j) for j in nbr[ptr[v] : ptr[v + 1]] if inside[j]]
        if len(roots) != len(set(roots)):
            continue  # two edges into one tree: a cycle
        inside[v] = True
        for r in roots:
            parent[r] = v
        chosen.append(v)
    mask = np.zeros(c.n_nodes, dtype=bool)
    mask[chosen] = True
    return mask


def forest_dp(c: Compact, g: Graph, x: np.ndarray, pen: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The exact optimum of the penalised cost over the ``free`` nodes (an induced forest),
    the others fixed at ``x`` (returns a new choice; never worse than ``x``)."""
    nb = g.nb
    ent = ~free[nb.nbr]  # edge entries toward fixed neighbours fold into node costs
    w = nb.w[nb.base[ent] + nb.stride[ent] * x[nb.nbr[ent]]]
    local = c.cost + pen + np.bincount(nb.g[ent], weights=w, minlength=len(c.cost))
    y = x.copy()
    # free nodes without a free neighbour: their best strategy, all at once
    deg = np.bincount(g.adj_node[free[g.adj_nbr]], minlength=c.n_nodes)
    alone = np.flatnonzero(free & (deg == 0))
    if len(alone):
        y[alone] = _segment_argmin(local, c.offset[alone], c.k[alone])
    off = c.offset.tolist()
    ptr, nbr, eid = g.adj_ptr.tolist(), g.adj_nbr.tolist(), g.adj_edge.tolist()
    eu = g.edge_u
    views = g.views
    inside = (free & (deg > 0)).tolist()
    unary: dict[int, np.ndarray] = {}
    order: list[int] = []
    parent: dict[int, int] = {}
    via: dict[int, int] = {}
    for r in np.flatnonzero(free & (deg > 0)).tolist():
        if r in unary:
            continue
        unary[r] = local[off[r] : off[r + 1]].copy()
        parent[r] = -1
        stack = [r]
        while stack:
            a = stack.pop()
            order.append(a)
            for j, e in zip(nbr[ptr[a] : ptr[a + 1]], eid[ptr[a] : ptr[a + 1]]):
                if inside[j] and j not in unary:
                    unary[j] = local[off[j] : off[j + 1]].copy()
                    parent[j] = a
                    via[j] = e
                    stack.append(j)
    arg: dict[int, np.ndarray] = {}
    for a in reversed(order):
        p = parent[a]
        if p < 0:
            continue
        e = via[a]
        m = views[e][0] if eu[e] == a else views[e][1]  # rows: a's strategies
        tot = unary[a][:, None] + m
        arg[a] = tot.argmin(axis=0)
        unary[p] += tot.min(axis=0)
    for a in order:
        p = parent[a]
        y[a] = int(np.argmin(unary[a])) if p < 0 else int(arg[a][y[p]])
    return y


def _segment_argmin(vals: np.ndarray, start: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per segment ``vals[start:start + k]``, the position of its (first) minimum."""
    idx = np.repeat(start, k) + ranges(k)
    v = vals[idx]
    seg = np.cumsum(k) - k
    low = np.minimum.reduceat(v, seg)
    owner = np.repeat(np.arange(len(k)), k)
    hit = v <= low[owner]
    first = np.full(len(k), np.iinfo(np.int64).max)
    np.minimum.at(first, owner[hit], (np.arange(len(v)) - seg[owner])[hit])
    return first


def penalised(c: Compact, g: Graph, x: np.ndarray, pen: np.ndarray) -> float:
    """The cost of ``x`` plus its penalties (forbidden pairs at their large finite cost)."""
    u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
    pair = g.nb.w[c.edge_offset[:-1] + x[u] * c.k[v] + x[v]].sum()
    return float((c.cost + pen)[c.offset[:-1] + x].sum() + pair)
