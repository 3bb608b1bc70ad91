"""The engine's bounds stage: lower bounds of a reduced problem in pairwise form.

- :func:`edge_split_bound`: each node's cost split evenly over its edges, each edge at its
  minimum. Instant, weak.
- :func:`diffusion_bound`: the local-polytope (marginalization) LP's dual, approached by
  min-sum diffusion (block coordinate ascent over a node colouring: the nodes of one colour move
  at once, each making its cost and its edges' min-marginals equal). Every iterate is a
  reparametrization of the problem, so ``sum of node minima + sum of edge minima`` is a lower
  bound whenever it stops; it rises monotonically. With ``memory=True`` the usage limit enters
  as a Lagrangian: a price ``lam[t] >= 0`` per step where the live usage could exceed the limit,
  added to the usage of the items live at ``t``, ``lam . limit`` taken off; any prices give a
  bound, and subgradient steps on the diffusion's own choice raise them.

Costs a Compact holds as ``inf`` (a forbidden pair) count as a large finite cost here, which
keeps every figure a lower bound.

Examples
--------
>>> from tacopt.partitioner.pickers.reduce import reduce_problem
>>> from tacopt.partitioner.problem import index_problem
>>> from tacopt.partitioner.problem.contest import problem_from_dict
>>> p = problem_from_dict({"problem": {"nodes": {"intervals": [[0, 1]] * 3,
...     "costs": [[0, 5], [3, 0], [0, 0]], "usages": [[0, 0]] * 3},
...     "edges": {"nodes": [[0, 1], [1, 2]], "costs": [[0, 2, 2, 0], [0, 2, 2, 0]]}}})
>>> c = reduce_problem(index_problem(p))  # a path: the local polytope is exact, optimum 2
>>> edge_split_bound(c) <= round(diffusion_bound(c, time.monotonic() + 5), 3) == 2.0
True
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from tacopt.partitioner.errors import send_result, worker_result
from tacopt.partitioner.pickers.reduce import Compact, ranges

#: The price steps shrink after each overshoot down to this share of Polyak's step.
MIN_STEP_SCALE = 0.01
#: The bound stops early when it rose by less than this share over the last ``STALL_SWEEPS``
#: sweeps (min-sum diffusion has settled; the core goes back to the search).
STALL_SHARE = 2e-5
STALL_SWEEPS = 200


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


def diffusion_bound(
    c: Compact,
    deadline: float,
    *,
    memory: bool = False,
    max_sweeps: int = 100_000,
    colours: list[np.ndarray] | None = None,
    target: float | None = None,
    price_every: int = 4,
    progress=None,
) -> float:
    """The best lower bound min-sum diffusion reaches by ``deadline`` (see the module).

    ``colours``: node sets no two of which share an edge (default: a greedy colouring).
    ``target``: the objective of a known plan, for the price steps (Polyak's rule: a step
    proportional to the gap to it); without one, steps of 5 % of the bound. The bound is read,
    and the prices move, every ``price_every`` sweeps (the diffusion settles between moves); it
    stops before ``deadline`` when the bound has stalled (``STALL_SHARE``). ``progress``: a
    shared value (``.value``) that gets the bound so far at each read, for another process.
    """
    d = _Diffusion(c, colours)
    prices = _Prices(c) if memory and np.isfinite(c.limit) else None
    best = -np.inf
    unread = False  # sweeps since the bound was last read
    history: list[float] = []  # the best bound at each read
    for sweep in range(max_sweeps):
        if time.monotonic() > deadline:
            break
        d.sweep()
        unread = sweep % price_every != price_every - 1
        if unread:
            continue
        best = max(best, _read(d, prices, best, target))
        history.append(best)
        if progress is not None:
            progress.value = best
        back = STALL_SWEEPS // price_every
        if len(history) > back and best - history[-1 - back] <= STALL_SHARE * abs(best):
            break
    if unread:  # the last sweeps' state: its bound, no price step after it
        best = max(best, d.bound()[0] - (prices.offset() if prices is not None else 0.0))
    # Float sums of many terms: keep a margin so that the figure stays below the true bound.
    return float(best - 1e-9 * abs(best) * max(len(c.edge_cost), 1) ** 0.5 - 1e-6)


def _read(d: _Diffusion, prices: _Prices | None, best: float, target: float | None) -> float:
    """The bound of the diffusion's state, then (with prices) a price step from it."""
    bound, choice = d.bound()
    if prices is not None:
        bound -= prices.offset()
        d.unary = d.base + prices.step(choice, bound, best, target)
    return bound


class _Diffusion:
    """Min-sum diffusion state: the per-(edge, row) and per-(edge, column) shifts ``phi``.

    A colour's step needs the min-marginals of its own nodes' sides of their edges only: the
    rows of the edges whose first node moves, the columns of those whose second node does.
    Each colour holds those entries in the order they are reduced (:class:`_Side`), so a sweep
    reads every entry twice (once by row, once by column) whatever the number of colours.
    """

    def __init__(self, c: Compact, colours: list[np.ndarray] | None) -> None:
        k = c.k
        u, v = c.edge_nodes[:, 0], c.edge_nodes[:, 1]
        ku, kv = k[u], k[v]
        finite = np.isfinite(c.edge_cost)
        cost = np.where(np.isfinite(c.cost), c.cost, 0.0)
        big = 4.0 * (np.abs(c.edge_cost[finite]).sum() + np.abs(cost).sum()) + 1.0
        self.c = c
        w = np.where(finite, c.edge_cost, big)
        self.base = np.where(np.isfinite(c.cost), c.cost, big)
        self.unary = self.base.copy()
        self.row_node_g = np.repeat(c.offset[u], ku) + ranges(ku)  # the node strategy of each row
        self.col_node_g = np.repeat(c.offset[v], kv) + ranges(kv)
        self.phi_row = np.zeros(len(self.row_node_g))
        self.phi_col = np.zeros(len(self.col_node_g))
        deg = np.bincount(c.edge_nodes.ravel(), minlength=c.n_nodes).astype(np.float64)
        # diffusion: a moving node keeps one share and gives one to each of its edges
        self.share = 1.0 / (deg[np.repeat(np.arange(c.n_nodes), k)] + 1.0)
        colour = np.zeros(c.n_nodes, dtype=np.int64)
        for j, nodes in enumerate(_colouring(c) if colours is None else colours):
            colour[nodes] = j
        n_colours = int(colour.max(initial=0)) + 1
        self.steps = [(_Side.of(c, w, np.flatnonzero(colour[u] == j), by_row=True),
                       _Side.of(c, w, np.flatnonzero(colour[v] == j), by_row=False))
                      for j in range(n_colours)]  # fmt: skip

    def _node(self) -> np.ndarray:
        n = len(self.unary)
        return (self.unary + np.bincount(self.row_node_g, self.phi_row, n)
                + np.bincount(self.col_node_g, self.phi_col, n))  # fmt: skip

    def sweep(self) -> None:
        """One pass over the colours: each colour's nodes equalise cost and min-marginals."""
        n = len(self.unary)
        for rows, cols in self.steps:
            mr = rows.minmarginals(self.phi_row, self.phi_col)
            mc = cols.minmarginals(self.phi_row, self.phi_col)
            gr, gc = self.row_node_g[rows.ids], self.col_node_g[cols.ids]
            total = self._node() + np.bincount(gr, mr, n) + np.bincount(gc, mc, n)
            avg = total * self.share
            self.phi_row[rows.ids] += mr - avg[gr]
            self.phi_col[cols.ids] += mc - avg[gc]

    def bound(self) -> tuple[float, np.ndarray]:
        """The bound of the current reparametrization, and each node's cheapest strategy."""
        c = self.c
        node = self._node()
        mins = np.minimum.reduceat(node, c.offset[:-1]) if len(node) else np.zeros(0)
        choice = _argmin_per_node(node, c.offset)
        edges = 0.0
        for rows, _ in self.steps:  # every edge's rows are in exactly one colour's step
            if len(rows.ids):
                m = rows.minmarginals(self.phi_row, self.phi_col)
                edges += float(np.minimum.reduceat(m, rows.edge_first).sum())
        return float(mins.sum() + edges + c.const), choice


@dataclass(frozen=True, slots=True)
class _Side:
    """The rows (or columns) of some edges: their entries ``w`` in reduction order, each
    entry's row and column id, and ``ids[g]``, the row (column) id of group ``g``, whose
    entries start at ``starts[g]``; ``edge_first``: each edge's first group."""

    w: np.ndarray
    row_of: np.ndarray
    col_of: np.ndarray
    ids: np.ndarray
    starts: np.ndarray
    edge_first: np.ndarray

    @staticmethod
    def of(c: Compact, w: np.ndarray, edges: np.ndarray, by_row: bool) -> _Side:
        k = c.k
        ku, kv = k[c.edge_nodes[edges, 0]], k[c.edge_nodes[edges, 1]]
        k_all_u, k_all_v = k[c.edge_nodes[:, 0]], k[c.edge_nodes[:, 1]]
        row_start, col_start = _starts(k_all_u)[edges], _starts(k_all_v)[edges]
        size = ku * kv
        local, e = ranges(size), np.repeat(np.arange(len(edges)), size)
        # entry (a, b) of an edge is at a * kv + b; a row's entries run over b, a column's over a
        a, b = (local // kv[e], local % kv[e]) if by_row else (local % ku[e], local // ku[e])
        groups, group_size = (ku, kv) if by_row else (kv, ku)  # per edge
        first = row_start if by_row else col_start
        return _Side(
            w=w[c.edge_offset[edges][e] + a * kv[e] + b],
            row_of=row_start[e] + a,
            col_of=col_start[e] + b,
            ids=np.repeat(first, groups) + ranges(groups),
            starts=_starts(np.repeat(group_size, groups)),
            edge_first=_starts(groups),
        )

    def minmarginals(self, phi_row: np.ndarray, phi_col: np.ndarray) -> np.ndarray:
        """Each group's minimum under the shifts ``phi``."""
        if not len(self.w):
            return np.zeros(0)
        theta = self.w - phi_row[self.row_of] - phi_col[self.col_of]
        return np.minimum.reduceat(theta, self.starts)


class _Prices:
    """Lagrangian prices of the usage limit, one per step where it can be exceeded (the
    steps where a maximal set of live items starts)."""

    def __init__(self, c: Compact) -> None:
        self.c = c
        tight = c.item_tight
        start, end = c.item_start[tight], c.item_end[tight]
        starts = np.unique(start)
        # A start step's live set is maximal when some item ends before the next start.
        nxt = np.append(starts[1:], np.iinfo(np.int64).max)
        ends = np.sort(end)
        first_end = ends[np.searchsorted(ends, starts, side="right")] \
            if len(ends) else starts  # fmt: skip
        self.steps = starts[first_end <= nxt] if len(ends) else starts[:0]
        self.items = np.flatnonzero(tight)
        self.lam = np.zeros(len(self.steps))
        lo = np.searchsorted(self.steps, c.item_start[self.items], side="left")
        hi = np.searchsorted(self.steps, c.item_end[self.items], side="left")
        self.lo, self.hi = lo, hi
        self.scale = 1.0
        self.min_scale = MIN_STEP_SCALE

    def offset(self) -> float:
        return float(self.lam.sum() * self.c.limit)

    def step(
        self, choice: np.ndarray, bound: float, best: float, target: float | None
    ) -> np.ndarray:
        """Move the prices along the subgradient of ``choice``; the new unary price terms."""
        c = self.c
        if not len(self.steps):
            return np.zeros(len(c.cost))
        used = c.item_usage[c.item_offset[self.items] + choice[c.item_node[self.items]]]
        per_step = np.zeros(len(self.steps) + 1)
        np.add.at(per_step, self.lo, used)
        np.add.at(per_step, self.hi, -used)
        excess = np.cumsum(per_step)[:-1] - c.limit
        if bound < best:  # overshoot: smaller steps, never none (the diffusion moves on)
            self.scale = max(0.7 * self.scale, self.min_scale)
        norm = float((excess**2).sum())
        if norm > 0:
            if target is not None and target > bound:
                gap = (target - bound) * self.scale
            else:
                gap = max(abs(bound), 1.0) * 0.05 * self.scale
            self.lam = np.maximum(self.lam + gap / norm * excess, 0.0)
        # each item's strategies pay the prices of the steps it is live at
        cum = np.concatenate(([0.0], np.cumsum(self.lam)))
        price = cum[self.hi] - cum[self.lo]
        k = c.k[c.item_node[self.items]]
        g = np.repeat(c.offset[c.item_node[self.items]], k) + ranges(k)
        use = c.item_usage[np.repeat(c.item_offset[self.items], k) + ranges(k)]
        return np.bincount(g, use * np.repeat(price, k), len(c.cost))


def _starts(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)


def _argmin_per_node(values: np.ndarray, offset: np.ndarray) -> np.ndarray:
    k = np.diff(offset)
    owner = np.repeat(np.arange(len(k)), k)
    order = np.lexsort((values, owner))
    first = np.concatenate(([0], np.cumsum(k)[:-1]))
    return order[first] - offset[:-1] if len(k) else np.zeros(0, np.int64)


def _colouring(c: Compact) -> list[np.ndarray]:
    G = nx.Graph()
    G.add_nodes_from(range(c.n_nodes))
    G.add_edges_from(c.edge_nodes.tolist())
    colour = nx.greedy_color(G, strategy="largest_first")
    col = np.array([colour[i] for i in range(c.n_nodes)], dtype=np.int64)
    return [np.flatnonzero(col == j) for j in range(int(col.max(initial=-1)) + 1)]



class BoundProcess:
    """:func:`diffusion_bound` with the memory prices, run in a second process (the second
    core) while the caller searches; :meth:`result` waits for it until ``deadline`` at most.

    Forked (the reduced problem is inherited, not copied through a pipe); where fork is not
    available it computes nothing and :meth:`result` is None.
    """

    def __init__(self, c: Compact, deadline: float, target: float | None) -> None:
        self.deadline = deadline
        self.process = None
        self._progress = None
        if "fork" not in mp.get_all_start_methods():
            return
        ctx = mp.get_context("fork")
        self._progress = ctx.RawValue("d", -np.inf)  # the bound so far, as the worker reads it
        self.receive, send = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_bound_worker,
                                   args=(c, deadline, target, send, self._progress),
                                   daemon=True)  # fmt: skip
        self.process.start()
        send.close()

    def so_far(self) -> float:
        """The bound the process has reached so far (``-inf`` before its first read)."""
        return -np.inf if self._progress is None else float(self._progress.value)

    def result(self) -> float | None:
        """The bound (None when the process gave none in time); the process is ended."""
        if self.process is None:
            return None
        try:
            if self.receive.poll(max(self.deadline - time.monotonic(), 0.0) + 0.5):
                return float(worker_result(self.receive.recv()))
            return None
        except (EOFError, OSError):
            return None
        finally:
            self.cancel()

    def cancel(self) -> None:
        """End the process now (the caller needs its core back)."""
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(1.0)


def _bound_worker(c: Compact, deadline: float, target: float | None, send, progress) -> None:
    send_result(send, lambda: diffusion_bound(c, deadline, memory=True, target=target,
                                              progress=progress))  # fmt: skip
    send.close()
