"""Contest-like pick problems: generated instances with the IOPDDL contest's statistics.

The contest's problems come from sharding a deep-learning program over devices: each node is an
operation or a parameter, each strategy a sharding of its tensor, an edge's matrix the cost of
resharding the producer's tensor into the layout its consumer wants, and a node's memory is live
from its production to its last use. :func:`contest_like` builds such a problem:

- nodes in program order; each takes one input from a recent node (mostly the previous one,
  sometimes a skip connection from further back), and some nodes read a *parameter* node that is
  live for the whole program (so memory is tightest where parameters and activations pile up);
- strategies are drawn from one vocabulary of shardings; a sharding of degree ``p`` divides the
  node's usage and compute by ``p`` and may add a collective (communication) cost;
- an edge's matrix is the producer's tensor size times a resharding factor between the two
  shardings (zero for matching ones): chains and trees of nodes with structured matrices;
- the usage limit lies a fraction ``tightness`` of the way from the lowest possible peak to the
  peak of every node at its cheapest strategy (``tightness`` near 0: tight memory).

The result is the contest's JSON (``{"problem": {...}}``), readable by
:func:`~tacopt.partitioner.problem.contest.problem_from_dict`.

Examples
--------
>>> from tacopt.partitioner.problem.contest import problem_from_dict
>>> p = problem_from_dict(contest_like(200, seed=1))
>>> k = [len(u.choices) for u in p.units]
>>> len(p.units), bool(2.8 <= sum(k) / len(k) <= 29)
(200, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The contest's "infinity": a pair or strategy that must not be chosen.
FORBIDDEN = 10**18
#: Number of shardings in the vocabulary (a node's strategies are a subset).
VOCABULARY = 48


def contest_like(
    n_nodes: int,
    seed: int = 0,
    *,
    mean_strategies: float = 9.0,
    tightness: float = 0.3,
    param_share: float = 0.25,
    forbidden_share: float = 0.3,
    name: str | None = None,
) -> dict[str, Any]:
    """A contest-like problem of ``n_nodes`` nodes as contest JSON (see the module doc).

    Parameters
    ----------
    n_nodes
        Number of nodes (at least 2).
    seed
        Seed of the generator (same arguments, same problem).
    mean_strategies
        About the mean number of strategies per node (the contest's range is 2.8 to 29).
    tightness
        Where the limit lies between the lowest possible peak (0) and the peak of every node at
        its cheapest strategy (1).
    param_share
        Share of nodes that are parameters (live for the whole program).
    forbidden_share
        Share of pairs of shardings that cannot be converted (cost 10^18).

    Returns
    -------
    dict
        ``{"problem": {"name", "nodes": {...}, "edges": {...}, "usage_limit"}}``.

    Examples
    --------
    >>> d = contest_like(50, seed=3, tightness=0.1)
    >>> len(d["problem"]["nodes"]["costs"])
    50
    """
    if n_nodes < 2:
        raise ValueError(f"contest_like: n_nodes must be at least 2, not {n_nodes}")
    rng = np.random.default_rng(seed)
    n = n_nodes
    # The sharding vocabulary: degree, collective cost factor, resharding factors; some pairs
    # of shardings cannot be converted (the contest's "forbidden" cost of 10^18).
    degree = rng.choice([1, 2, 4, 8, 16], size=VOCABULARY, p=[0.1, 0.25, 0.3, 0.25, 0.1])
    degree[0] = 1  # sharding 0: replicated
    collective = np.where(rng.random(VOCABULARY) < 0.5, rng.uniform(0.0, 1.5, VOCABULARY), 0.0)
    collective[0] = 0.0
    reshard = rng.uniform(0.2, 2.0, size=(VOCABULARY, VOCABULARY))
    reshard[rng.random((VOCABULARY, VOCABULARY)) < forbidden_share] = np.inf
    reshard[np.arange(VOCABULARY), np.arange(VOCABULARY)] = 0.0
    reshard[0, :] = np.minimum(reshard[0, :], 0.05)  # slicing a replicated tensor is cheap
    reshard[:, 0] = np.minimum(reshard[:, 0], 3.0)  # gathering one is always possible
    kinds = [rng.choice(VOCABULARY, size=24, replace=False) for _ in range(8)]
    # Program structure: each node reads a recent node (sometimes one far back); parameters
    # are read by later nodes; a few hubs (shared tensors) are read by many.
    is_param = rng.random(n) < param_share
    is_param[0] = False
    kind = rng.integers(0, len(kinds), n)
    size = np.exp(rng.normal(0.0, 1.5, n)) * 1e5
    size[is_param] *= rng.uniform(1.0, 4.0, int(is_param.sum()))
    flops = size * np.exp(rng.normal(1.0, 0.8, n))
    ops = np.flatnonzero(~is_param)
    params = np.flatnonzero(is_param)
    edges: list[tuple[int, int]] = []
    for j, v in enumerate(ops[1:].tolist(), start=1):
        back = 1 if rng.random() < 0.7 else int(rng.integers(1, 30))
        u = int(ops[max(0, j - back)])
        edges.append((u, v))
        if rng.random() < 0.5:
            kind[v] = kind[u]  # a consumer often shares its producer's kind of shardings
        if rng.random() < 0.15 and j > 2:  # a skip connection, sometimes from far back
            w = int(ops[max(0, j - int(rng.integers(2, 30 if rng.random() < 0.7 else n)))])
            if w != u:
                edges.append((w, v))
    for p_ in params.tolist():  # a parameter feeds one or two later ops
        after = ops[ops > p_]
        for v in rng.choice(after, size=min(len(after), 1 + int(rng.random() < 0.2)),
                            replace=False).tolist() if len(after) else []:  # fmt: skip
            edges.append((p_, int(v)))
    for h in rng.choice(ops[:-1], size=max(1, n // 400), replace=False).tolist():
        after = ops[ops > h]
        for v in rng.choice(after, size=min(len(after), int(rng.integers(5, 200))),
                            replace=False).tolist():  # fmt: skip
            edges.append((h, int(v)))
    edges = sorted(set(edges))
    last_use = np.arange(n)
    for u, v in edges:
        last_use[u] = max(last_use[u], v)
    start = np.arange(n)
    end = last_use + 1
    start[is_param] = 0
    end[is_param] = n
    scalar = (rng.random(n) < 0.08) & ~is_param
    end[scalar] = start[scalar]  # nodes that hold no memory
    # Strategies per node: replicated plus shardings of its kind (and a few others).
    k = np.clip(np.round(rng.gamma(1.5, mean_strategies / 1.5, n)), 1, 40).astype(int)
    specs = []
    for i, kk in enumerate(k.tolist()):
        pool = kinds[kind[i]]
        own = rng.choice(pool, size=min(kk - 1, len(pool)), replace=False)
        more = rng.choice(np.setdiff1d(np.arange(1, VOCABULARY), own),
                          size=max(0, kk - 1 - len(own)), replace=False)  # fmt: skip
        specs.append(np.unique(np.concatenate(([0], own[own != 0], more))))
    costs, usages = [], []
    for i, sp in enumerate(specs):
        noise = rng.uniform(0.9, 1.1, len(sp))
        c = flops[i] / degree[sp] * noise + collective[sp] * size[i]
        if is_param[i] or rng.random() < 0.6:
            c = np.where(rng.random(len(sp)) < 0.8, 0.0, collective[sp] * size[i] * noise)
        costs.append(np.round(c).astype(np.int64))
        usages.append(np.round(size[i] / degree[sp]).astype(np.int64))
    mats = []
    for u, v in edges:
        m = size[u] * reshard[specs[u][:, None], specs[v][None, :]]
        m = np.where(np.isfinite(m), np.round(m), FORBIDDEN)
        mats.append(m.astype(np.int64))
    limit = _limit(start, end, costs, usages, tightness, n)
    return {"problem": {
        "name": name or f"contest_like_{n}_{seed}",
        "nodes": {"intervals": np.stack([start, end], axis=1).tolist(),
                  "costs": [c.tolist() for c in costs],
                  "usages": [u.tolist() for u in usages]},
        "edges": {"nodes": [list(e) for e in edges], "costs": [m.ravel().tolist() for m in mats]},
        "usage_limit": int(limit),
    }}  # fmt: skip


def _limit(start, end, costs, usages, tightness: float, steps: int) -> int:
    """A limit ``tightness`` of the way from the lowest peak to the peak at cheapest costs."""
    low = np.array([u.min() for u in usages], dtype=np.float64)
    cheap = np.array([u[np.argmin(c)] for c, u in zip(costs, usages)], dtype=np.float64)

    def peak(w: np.ndarray) -> float:
        delta = np.zeros(steps + 1)
        live = start < end
        np.add.at(delta, start[live], w[live])
        np.add.at(delta, end[live], -w[live])
        return float(np.cumsum(delta).max())

    lo, hi = peak(low), peak(np.maximum(cheap, low))
    return int(np.ceil(lo + tightness * max(hi - lo, 0.0)))
