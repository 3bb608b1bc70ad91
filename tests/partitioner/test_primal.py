"""The primal search (:mod:`tacopt.partitioner.pickers.primal`) and the contest-like generator.

Every solution is checked by the one evaluator (:func:`~tacopt.partitioner.plan.evaluate_index`)
and the one memory check (:func:`~tacopt.partitioner.memory.fits_batch`); tiny problems are
compared with the brute-force picker.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from itertools import product
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from tacopt.partitioner.memory import fits_batch
from tacopt.partitioner.pickers import forest, pick, primal, search
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.plan import evaluate_index
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import contest_like, memory_tight

EXAMPLE = Path(__file__).resolve().parents[3] / "shared" / "iopddl" / "example.json"


def _reduced(n: int, seed: int, tightness: float = 0.2) -> tuple:
    index = index_problem(problem_from_dict(contest_like(n, seed, tightness=tightness)))
    c = reduce_problem(index)
    assert isinstance(c, Compact)
    return index, c


def _score(index, c: Compact, x: np.ndarray) -> tuple[int, bool]:
    """The contest's score of the reduced choice ``x`` and whether it fits the limit."""
    chosen = index.choice_start[:-1] + c.original(x)
    b = evaluate_index(index, chosen)
    return b.compute + b.pairwise, bool(fits_batch(index, chosen[None, :])[0])


def _brute_penalised(c: Compact, g: forest.Graph, x, pen, free) -> float:
    nodes = np.flatnonzero(free)
    best = np.inf
    for combo in product(*(range(int(c.k[i])) for i in nodes)):
        y = x.copy()
        y[nodes] = combo
        best = min(best, forest.penalised(c, g, y, pen))
    return best


def test_contest_like_is_deterministic_and_contest_shaped():
    a, b = contest_like(300, seed=4), contest_like(300, seed=4)
    assert json.dumps(a) == json.dumps(b)
    nodes = a["problem"]["nodes"]
    k = np.array([len(c) for c in nodes["costs"]])
    assert 2.8 <= k.mean() <= 29
    assert any(v >= 10**18 for m in a["problem"]["edges"]["costs"] for v in m)  # forbidden
    index = index_problem(problem_from_dict(a))
    c = reduce_problem(index)
    low = primal._Search(c, forest.prepare(c), np.random.default_rng(0), 0.0).low
    assert _score(index, c, low)[1]  # the lowest usages fit: the limit can be met


@pytest.mark.parametrize("share", [0.85, 0.97])
def test_memory_tight_puts_the_lowest_peak_at_its_share_of_the_limit(share):
    d = memory_tight(400, seed=7, min_peak_share=share, mean_strategies=30.0)
    assert json.dumps(d) == json.dumps(memory_tight(400, seed=7, min_peak_share=share,
                                                    mean_strategies=30.0))  # fmt: skip
    nodes = d["problem"]["nodes"]
    k = np.array([len(c) for c in nodes["costs"]])
    assert 20 <= k.mean() <= 40 and k.max() <= 180 and k.max() > 40
    index = index_problem(problem_from_dict(d))
    c = reduce_problem(index)
    low = primal._Search(c, forest.prepare(c), np.random.default_rng(0), 0.0).low
    peak = c.profile(low).max()
    assert peak <= c.limit and peak / c.limit == pytest.approx(share, abs=0.005)


def test_induced_forest_has_no_cycle():
    _, c = _reduced(400, 1)
    g = forest.prepare(c)
    free = forest.induced_forest(c, g, np.random.default_rng(0))
    G = nx.Graph()
    G.add_nodes_from(np.flatnonzero(free).tolist())
    G.add_edges_from((int(u), int(v)) for u, v in c.edge_nodes if free[u] and free[v])
    assert free.sum() > 0.5 * len(g.movable) and nx.is_forest(G)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forest_dp_is_exact_on_a_small_forest(seed):
    _, c = _reduced(60, seed + 10)
    g = forest.prepare(c)
    rng = np.random.default_rng(seed)
    free = forest.induced_forest(c, g, rng)
    keep = np.flatnonzero(free)[:6]  # a sub-forest small enough to enumerate
    free[:] = False
    free[keep] = True
    x = np.zeros(c.n_nodes, dtype=np.int64)
    pen = rng.random(len(c.cost)) * 1000
    y = forest.forest_dp(c, g, x, pen, free)
    assert (y[~free] == x[~free]).all()
    assert forest.penalised(c, g, y, pen) == pytest.approx(_brute_penalised(c, g, x, pen, free))


def test_exact_sub_matches_brute_force():
    _, c = _reduced(60, 21)
    g = forest.prepare(c)
    free = np.zeros(c.n_nodes, dtype=bool)
    free[g.movable[:5]] = True
    x = np.zeros(c.n_nodes, dtype=np.int64)
    pen = np.zeros(len(c.cost))
    y, _ = search.exact_sub(c, g.nb, x, pen, free, 5)
    assert forest.penalised(c, g, y, pen) == pytest.approx(_brute_penalised(c, g, x, pen, free))


@pytest.mark.parametrize("threads", [1, 2])
def test_search_fits_the_limit_and_beats_the_start(threads):
    index, c = _reduced(500, 3, tightness=0.1)
    g = forest.prepare(c)
    start = primal._Search(c, g, np.random.default_rng(0), time.monotonic() + 5).low
    x = primal.search(c, time.monotonic() + 4.0, seed=1, threads=threads)
    assert x is not None
    cost, fits = _score(index, c, x)
    assert fits and cost <= _score(index, c, start)[0]


@pytest.mark.parametrize("threads", [2, 3])
def test_a_late_search_joins_from_the_shared_plan_and_the_deadline_holds(threads):
    """``join_at``: the portfolio's second search starts late (its core is the bound's until
    then), from the shared plan, and the whole still ends by its deadline."""
    index, c = _reduced(500, 3, tightness=0.1)
    t0 = time.monotonic()
    x = primal.search(c, t0 + 4.0, seed=1, threads=threads, join_at=t0 + 2.0)
    assert time.monotonic() - t0 < 4.5
    alone = primal.search(c, time.monotonic() + 4.0, seed=1, threads=1)
    assert x is not None and _score(index, c, x)[1]
    assert _score(index, c, x)[0] <= _score(index, c, alone)[0] * 1.05


def test_the_second_search_joins_early_once_asked():
    """``join_if``: the second search starts before ``join_at`` once it holds (asked with the
    shared best's value), and the whole still ends by its deadline with a plan."""
    index, c = _reduced(500, 3, tightness=0.1)
    seen = mp.get_context("fork").RawValue("d", -1.0)  # the value join_if got, in the child

    def join_if(value: float) -> bool:
        seen.value = value
        return True

    t0 = time.monotonic()
    x = primal.search(c, t0 + 3.0, seed=1, threads=2, join_at=t0 + 60.0, join_if=join_if)
    assert time.monotonic() - t0 < 3.5  # not waiting for join_at
    assert x is not None and _score(index, c, x)[1]
    assert seen.value != -1.0  # asked (the shared best's value: inf until one is published)


def test_search_finds_the_example_optimum():
    index = index_problem(problem_from_dict(json.loads(EXAMPLE.read_text())))
    c = reduce_problem(index)
    x = primal.search(c, time.monotonic() + 2.0)
    assert _score(index, c, x) == (445, True)


def test_search_agrees_with_brute_force_on_tiny_problems():
    for seed in range(3):
        p = problem_from_dict(contest_like(8, seed=seed, mean_strategies=3.0, tightness=0.3))
        index = index_problem(p)
        c = reduce_problem(index)
        if not isinstance(c, Compact):
            continue
        brute = pick(p, "brute")
        x = primal.search(c, time.monotonic() + 1.5, seed=seed)
        assert x is not None and _score(index, c, x) == (brute.objective, True)


def test_search_process_sends_a_plan_that_fits_and_a_bound_below_it():
    index, c = _reduced(300, 5, tightness=0.15)
    now = time.monotonic()
    found, bound = primal.SearchProcess(c, now + 2.0, seed=3, bound_until=now + 3.0).result()
    assert found is not None and bound is not None
    cost, fits = _score(index, c, found)
    assert fits and bound <= cost + 1e-6
    # cancelled at once: nothing arrives, nothing is left running
    proc = primal.SearchProcess(c, time.monotonic() + 30.0)
    proc.cancel()
    assert proc.process is not None and not proc.process.is_alive()


def test_search_out_of_time_still_returns_a_plan_that_fits():
    # no time at all: the lowest usages (which fit, forbidden pairs or not) are the last resort
    index, c = _reduced(400, 7, tightness=0.1)
    x = primal.search(c, time.monotonic())
    assert x is not None and bool((c.profile(x) <= c.limit).all())
    assert _score(index, c, x)[1]
