"""The engine's first stage: reductions of a pick problem in pairwise form before solving.

A problem is in pairwise form when its objective is choice costs plus pairwise matrices (no
tensor costs anything) and at most one device has a capacity (:func:`pairwise_scope`): every
IOPDDL instance, and zoo problems without tensors.

Each rule keeps at least one optimal solution (given that some solution avoids the
"forbidden" costs of 10^18 and more, which the contest uses as infinity):

- parallel edges are summed into one matrix, a self-loop's diagonal goes into node costs;
- a strategy whose node cost is forbidden, or whose row in some edge is forbidden for every
  remaining strategy of the neighbour, is dropped (arc consistency);
- a strategy dominated by another one of the same node (node cost, usage where the limit can
  be reached, and every incident edge row all no lower) is dropped;
- two nodes joined by a *permutation* edge (one allowed pair per row and per column: the
  choice of one fixes the other's) are merged into one node, which then holds usage over
  several intervals (one *item* per original node);
- an edge whose matrix is separable, ``M[a, b] = r[a] + c[b]`` (always so once a side has one
  strategy), is folded into the two nodes' costs.

Usage matters only at "tight" steps, where the largest usage the live items could reach
exceeds the limit; an item whose interval holds no tight step does not compete on usage.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from tacopt.partitioner.problem import MAX_TOTAL, ProblemIndex

#: Costs at or above this are the contest's "infinity" (the pick problem's largest cost).
FORBIDDEN = int(MAX_TOTAL)


def ranges(size: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s)`` for each ``s`` in ``size`` (the stages' flat indexing).

    >>> ranges(np.array([2, 0, 3])).tolist()
    [0, 1, 0, 1, 2]
    """
    size = np.asarray(size, dtype=np.int64)
    total = int(size.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.arange(total) - np.repeat(np.cumsum(size) - size, size)


def pairwise_scope(index: ProblemIndex) -> str | None:
    """Why ``index`` is not in pairwise form (None when it is)."""
    if len(index.src_unit):
        return "its tensors cost transfers and conversions (not pairwise)"
    if int(np.isfinite(index.capacity).sum()) > 1:
        return "more than one device has a capacity"
    return None


@dataclass(frozen=True, slots=True)
class _Flat:
    """A problem in pairwise form as flat arrays: node ``i`` owns ``cost[offset[i]:offset[i +
    1]]`` (and ``usage``), edge ``e`` joins ``edge_nodes[e]`` with a row-major matrix from
    ``edge_offset[e]``, and node ``i`` holds its usage on steps ``interval[i]``."""

    offset: np.ndarray
    cost: np.ndarray
    usage: np.ndarray
    interval: np.ndarray
    edge_nodes: np.ndarray
    edge_offset: np.ndarray
    edge_cost: np.ndarray
    usage_limit: float | None

    @property
    def n_strategies(self) -> np.ndarray:
        return np.diff(self.offset)

    @property
    def n_steps(self) -> int:
        return int(self.interval[:, 1].max(initial=0))


def _flat(index: ProblemIndex) -> _Flat:
    capped = np.flatnonzero(np.isfinite(index.capacity))
    n = index.n_units
    if len(capped):
        usage = np.where(index.choice_dev == capped[0], index.choice_memory, 0.0)
        limit: float | None = float(index.capacity[capped[0]])
    else:
        usage, limit = np.zeros(len(index.choice_cost)), None
    if index.hold_start is not None and index.hold_end is not None:
        interval = np.stack([index.hold_start, index.hold_end], axis=1)
    else:  # memory held for the whole run: every node live at one and the same step
        interval = np.tile(np.array([[0, 1]], dtype=np.int64), (n, 1))
    k = np.diff(index.choice_start)
    sizes = k[index.pair_a] * k[index.pair_b]
    # Exact integers where the problem has them: beyond 10^18 floats cannot tell 1 apart.
    cost = index.choice_cost if index.choice_cost_int is None else index.choice_cost_int
    pair = index.pair_cost if index.pair_cost_int is None else index.pair_cost_int
    return _Flat(index.choice_start, cost, usage, interval.reshape(n, 2),
                 np.stack([index.pair_a, index.pair_b], axis=1).reshape(-1, 2),
                 np.concatenate(([0], np.cumsum(sizes))).astype(np.int64), pair,
                 limit)  # fmt: skip


@dataclass(frozen=True, slots=True, eq=False)
class Compact:
    """A reduced problem in float arrays. Node ``i`` has ``k[i]`` strategies, flat from
    ``offset[i]``; edge matrices may hold ``inf`` (a forbidden pair); ``const`` is the cost
    folded out. Usage comes in items: item ``t`` belongs to node ``item_node[t]``, is live on
    ``[item_start[t], item_end[t])`` and uses ``item_usage[item_offset[t] + s]`` under the
    node's strategy ``s``. Original node ``j`` is part of node ``member_node[j]`` and takes
    strategy ``member_map[member_offset[j] + s]`` when that node takes ``s``."""

    offset: np.ndarray
    cost: np.ndarray
    edge_nodes: np.ndarray
    edge_offset: np.ndarray
    edge_cost: np.ndarray
    const: float
    limit: float
    item_node: np.ndarray
    item_start: np.ndarray
    item_end: np.ndarray
    item_offset: np.ndarray
    item_usage: np.ndarray
    item_tight: np.ndarray
    member_node: np.ndarray
    member_offset: np.ndarray
    member_map: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.offset) - 1

    @property
    def k(self) -> np.ndarray:
        return np.diff(self.offset)

    @property
    def n_steps(self) -> int:
        return int(self.item_end.max(initial=0))

    def profile(self, x: np.ndarray, items: np.ndarray | None = None) -> np.ndarray:
        """Usage at each step under the choice ``x`` (of ``items`` only, if given)."""
        sel = np.arange(len(self.item_node)) if items is None else items
        use = self.item_usage[self.item_offset[sel] + x[self.item_node[sel]]]
        delta = np.zeros(self.n_steps + 1)
        np.add.at(delta, self.item_start[sel], use)
        np.add.at(delta, self.item_end[sel], -use)
        return np.cumsum(delta[:-1])

    def original(self, x: np.ndarray) -> np.ndarray:
        """The original strategy index of every original node under the reduced choice ``x``."""
        return self.member_map[self.member_offset[:-1] + x[self.member_node]]


@dataclass(frozen=True, slots=True)
class Infeasible:
    """Why no solution exists (one line); ``forbidden``: only among those avoiding forbidden
    costs (one may exist at a cost of 10^18 or more)."""

    reason: str
    forbidden: bool = False


@dataclass(slots=True)
class _State:
    """The problem while it is being reduced; strategies of node i are ``alive[i]`` (indices
    into its own arrays)."""

    cost: list[np.ndarray]
    items: list[list[tuple[int, int, np.ndarray]]]
    members: list[list[tuple[int, np.ndarray]]]
    mats: dict[tuple[int, int], np.ndarray]
    alive: list[np.ndarray]
    limit: float
    steps: int
    const: float = 0.0


def reduce_problem(
    index: ProblemIndex, rounds: int = 4, forbid: bool = True
) -> Compact | Infeasible:
    """Apply the reductions until nothing changes (at most ``rounds`` rounds each).

    With ``forbid=False`` costs of 10^18 and more are kept as large finite costs (above any
    solution without them) instead of ruling their strategies and pairs out.
    """
    st = _initial_state(_flat(index), forbid)
    for i, a in enumerate(st.alive):
        if len(a) == 0:
            return Infeasible(f"node {i}: every strategy has a forbidden cost", forbidden=True)
    for phase in range(2):
        todo = set(range(len(st.alive)))  # nodes to examine: all, then those that changed
        previous: list[np.ndarray] | None = None
        for _ in range(rounds):
            tight = _tight(st)
            if isinstance(tight, Infeasible):
                return tight
            if previous is not None:
                todo |= {i for i, (a, b) in enumerate(zip(tight, previous))
                         if not np.array_equal(a, b)}  # fmt: skip
            previous = tight
            changed = _prune(st, tight, sorted(todo))
            if isinstance(changed, Infeasible):
                return changed
            todo = _fold_separable(st)
            if not changed and not todo:
                break
        if phase == 0:
            merged = _contract(st)
            if isinstance(merged, Infeasible):
                return merged
            st = merged
    tight = _tight(st)
    if isinstance(tight, Infeasible):
        return tight
    return _compact(st, tight)


def _initial_state(problem: _Flat, forbid: bool) -> _State:
    n = len(problem.offset) - 1
    split = problem.offset[1:-1]
    big = np.inf
    if not forbid:  # above the total of any solution without forbidden costs
        ok_n, ok_e = problem.cost < FORBIDDEN, problem.edge_cost < FORBIDDEN
        big = 1.0 + float(problem.cost[ok_n].sum()) + float(problem.edge_cost[ok_e].sum())

    def finite(c: np.ndarray) -> np.ndarray:
        over = c >= FORBIDDEN
        return np.where(over, big + (c - FORBIDDEN) * over, c).astype(np.float64)

    cost = [finite(c) for c in np.split(problem.cost, split)] if n else []
    usage = np.split(problem.usage.astype(np.float64), split) if n else []
    k = problem.n_strategies.tolist()
    items = [[(s, e, u)] if s < e else []
             for (s, e), u in zip(problem.interval.tolist(), usage)]  # fmt: skip
    members = [[(i, np.arange(k[i]))] for i in range(n)]
    mats: dict[tuple[int, int], np.ndarray] = {}
    bounds = problem.edge_offset.tolist()
    for e, (u, v) in enumerate(problem.edge_nodes.tolist()):
        m = problem.edge_cost[bounds[e] : bounds[e + 1]].reshape(k[u], k[v])
        f = finite(m)
        if u == v:
            cost[u] = cost[u] + np.diag(f)
            continue
        key, f = ((u, v), f) if u < v else ((v, u), f.T)
        mats[key] = mats[key] + f if key in mats else f
    alive = [np.flatnonzero(np.isfinite(c)) for c in cost]
    limit = float("inf") if problem.usage_limit is None else float(problem.usage_limit)
    return _State(cost, items, members, mats, alive, limit, problem.n_steps)


def _tight(st: _State) -> list[np.ndarray] | Infeasible:
    """Per node, which of its items hold a step where the live items could exceed the limit
    (empty when there is no limit); Infeasible when even the lowest usages exceed it."""
    if not np.isfinite(st.limit):
        return [np.zeros(len(it), dtype=bool) for it in st.items]
    flat = [(s, e, u[a].min(), u[a].max())
            for it, a in zip(st.items, st.alive) for s, e, u in it]  # fmt: skip
    arr = np.array(flat, dtype=np.float64).reshape(len(flat), 4)
    start, end = arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64)
    prof_lo, prof_hi = (_profile(arr[:, j], start, end, st.steps) for j in (2, 3))
    if (prof_lo > st.limit).any():
        t = int(np.argmax(prof_lo > st.limit))
        return Infeasible(f"step {t}: the lowest usages of the live nodes sum to "
                          f"{prof_lo[t]:.0f} > limit {st.limit:.0f}")  # fmt: skip
    over = np.concatenate(([0], np.cumsum(prof_hi > st.limit)))
    hot = over[end] - over[start] > 0
    sizes = np.cumsum([len(it) for it in st.items])[:-1]
    return np.split(hot, sizes) if len(st.items) else []


def _profile(w: np.ndarray, start: np.ndarray, end: np.ndarray, steps: int) -> np.ndarray:
    delta = np.zeros(steps + 1)
    np.add.at(delta, start, w)
    np.add.at(delta, end, -w)
    return np.cumsum(delta[:steps])


def _adjacency(n: int, mats: dict) -> list[list[tuple[int, int]]]:
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for u, v in mats:
        adj[u].append((u, v))
        adj[v].append((u, v))
    return adj


def _features(st: _State, i: int, adj, tight) -> np.ndarray:
    a = st.alive[i]
    cols = [st.cost[i][a][:, None]]
    cols += [u[a][:, None] for (_, _, u), hot in zip(st.items[i], tight[i]) if hot]
    for u, v in adj[i]:
        m = st.mats[(u, v)]
        cols.append(m[a[:, None], st.alive[v]] if u == i else m[st.alive[u][:, None], a].T)
    return np.hstack(cols)


def _prune(st: _State, tight, todo: list[int]) -> bool | Infeasible:
    """Arc consistency and dominance over a worklist (from ``todo``); True if any strategy
    was dropped."""
    n = len(st.alive)
    adj = _adjacency(n, st.mats)
    queue = deque(todo)
    queued = np.zeros(n, dtype=bool)
    queued[todo] = True
    changed = False
    while queue:
        i = queue.popleft()
        queued[i] = False
        if len(st.alive[i]) <= 1:
            continue
        F = _features(st, i, adj, tight)
        keep = np.isfinite(F[:, 0])
        col = 1 + int(tight[i].sum())
        for u, v in adj[i]:
            width = len(st.alive[v] if u == i else st.alive[u])
            keep &= np.isfinite(F[:, col : col + width]).any(axis=1)
            col += width
        keep &= ~_dominated(F)
        if keep.all():
            continue
        if not keep.any():
            return Infeasible(f"node {i}: no strategy is compatible with its neighbours", True)
        st.alive[i] = st.alive[i][keep]
        changed = True
        for u, v in adj[i]:
            j = v if u == i else u
            if not queued[j]:
                queued[j] = True
                queue.append(j)
    return changed


def _dominated(F: np.ndarray, chunk: int = 64) -> np.ndarray:
    """Rows some other row is <= everywhere (ties: the later row is the dominated one)."""
    k = len(F)
    if k * k * F.shape[1] > 4e7:  # too wide to compare pairwise in reasonable time
        return np.zeros(k, dtype=bool)
    le = np.concatenate([(F[s : s + chunk, None, :] <= F[None, :, :]).all(axis=2)
                         for s in range(0, k, chunk)])  # fmt: skip
    idx = np.arange(k)
    # a row equal to another (le both ways) is dominated only by an earlier one
    dom = le & (~le.T | (idx[:, None] < idx[None, :]))
    np.fill_diagonal(dom, False)
    return dom.any(axis=0)


def _fold_separable(st: _State) -> set[int]:
    """Fold separable restricted matrices into node costs; returns the nodes touched."""
    folded = []
    for (u, v), m in st.mats.items():
        au, av = st.alive[u], st.alive[v]
        r = m[au[:, None], av]
        if not np.isfinite(r).all():
            continue
        row, col = r[:, :1], r[:1, :]
        if np.array_equal(r, row + col - r[0, 0]):
            st.cost[u][au] += row[:, 0]
            st.cost[v][av] += col[0] - r[0, 0]
            folded.append((u, v))
    for key in folded:
        del st.mats[key]
    return {i for key in folded for i in key}


def _permutation(r: np.ndarray) -> np.ndarray | None:
    """For a square 0/1 pattern with one allowed entry per row and column, the column of
    each row's entry; else None."""
    ok = np.isfinite(r)
    if r.shape[0] != r.shape[1] or not (ok.sum(axis=1) == 1).all() or \
            not (ok.sum(axis=0) == 1).all():  # fmt: skip
        return None
    return np.argmax(ok, axis=1)


def _contract(st: _State) -> _State | Infeasible:
    """Merge the nodes joined by permutation edges; each group becomes one node whose
    strategies are those of its first node (in index order)."""
    n = len(st.alive)
    perm: dict[tuple[int, int], np.ndarray] = {}
    for (u, v), m in st.mats.items():
        p = _permutation(m[st.alive[u][:, None], st.alive[v]])
        if p is not None:
            perm[(u, v)] = p
    adj: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n)]
    for (u, v), p in perm.items():
        adj[u].append((v, p))  # local index at u -> local index at v
        adj[v].append((u, np.argsort(p)))
    group = np.full(n, -1, dtype=np.int64)
    sigma: list[np.ndarray] = [np.zeros(0, np.int64)] * n  # root local -> own local index
    roots: list[int] = []
    for r in range(n):
        if group[r] >= 0:
            continue
        group[r] = len(roots)
        roots.append(r)
        sigma[r] = np.arange(len(st.alive[r]))
        queue = deque([r])
        while queue:
            a = queue.popleft()
            for b, p in adj[a]:
                if group[b] < 0:
                    group[b] = group[r]
                    sigma[b] = p[sigma[a]]
                    queue.append(b)
    # A cycle of permutations may disagree: the root strategies where it does are dropped.
    valid = [np.ones(len(st.alive[r]), dtype=bool) for r in roots]
    for (u, v), p in perm.items():
        valid[group[u]] &= p[sigma[u]] == sigma[v]
    new = _State([], [], [], {}, [], st.limit, st.steps, st.const)
    for g, r in enumerate(roots):
        if not valid[g].any():
            return Infeasible(f"node {r}: its merged nodes admit no common strategy", True)
        new.cost.append(np.zeros(len(st.alive[r])))
        new.items.append([])
        new.members.append([])
        new.alive.append(np.flatnonzero(valid[g]))
    for j in range(n):
        g, own = group[j], st.alive[j][sigma[j]]  # root local index -> j's own index
        new.cost[g] += st.cost[j][own]
        new.items[g] += [(s, e, u[own]) for s, e, u in st.items[j]]
        new.members[g] += [(orig, mp[own]) for orig, mp in st.members[j]]
    for (u, v), m in st.mats.items():
        gu, gv = group[u], group[v]
        sub = m[st.alive[u][sigma[u]][:, None], st.alive[v][sigma[v]]]
        if gu == gv:
            new.cost[gu] = new.cost[gu] + np.diagonal(sub)  # both ends share the strategy
            continue
        key, sub = ((gu, gv), sub) if gu < gv else ((gv, gu), sub.T)
        new.mats[key] = new.mats[key] + sub if key in new.mats else sub
    new.alive = [keep[np.isfinite(c[keep])] for keep, c in zip(new.alive, new.cost)]
    for g, keep in enumerate(new.alive):
        if len(keep) == 0:
            return Infeasible(f"node {roots[g]}: its merged nodes admit no common strategy", True)
    return new


def _compact(st: _State, tight: list[np.ndarray]) -> Compact:
    alive = st.alive
    k = np.array([len(a) for a in alive], dtype=np.int64)
    offset = np.concatenate(([0], np.cumsum(k))).astype(np.int64)

    def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    cost = cat([c[a] for c, a in zip(st.cost, alive)], np.float64)
    keys = sorted(st.mats)
    blocks = [st.mats[(u, v)][alive[u][:, None], alive[v]].ravel() for u, v in keys]
    edge_nodes = np.array(keys, dtype=np.int64).reshape(len(keys), 2)
    edge_offset = np.concatenate(([0], np.cumsum([len(b) for b in blocks]))).astype(np.int64)
    items = [(i, s, e, u[alive[i]], hot) for i, (it, tt) in enumerate(zip(st.items, tight))
             for (s, e, u), hot in zip(it, tt)]  # fmt: skip
    item_node = np.array([t[0] for t in items], dtype=np.int64)
    sizes = k[item_node]
    members = sorted((orig, g, mp[alive[g]]) for g, ms in enumerate(st.members) for orig, mp in ms)
    member_offset = np.concatenate(([0], np.cumsum([len(m[2]) for m in members]))).astype(np.int64)
    return Compact(
        offset=offset,
        cost=cost,
        edge_nodes=edge_nodes,
        edge_offset=edge_offset,
        edge_cost=cat(blocks, np.float64),
        const=st.const,
        limit=st.limit,
        item_node=item_node,
        item_start=np.array([t[1] for t in items], dtype=np.int64),
        item_end=np.array([t[2] for t in items], dtype=np.int64),
        item_offset=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        item_usage=cat([t[3] for t in items], np.float64),
        item_tight=np.array([t[4] for t in items], dtype=bool),
        member_node=np.array([m[1] for m in members], dtype=np.int64),
        member_offset=member_offset,
        member_map=cat([m[2] for m in members], np.int64),
    )
