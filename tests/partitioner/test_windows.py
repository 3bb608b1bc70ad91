"""Exact moves that keep the usage limit (:mod:`tacopt.partitioner.pickers.windows`).

Every move is checked by the reduced problem's own objective and profile; on tiny problems the
move over every node is compared with brute force over all choices within the limit.
"""

from __future__ import annotations

import time
from itertools import product

import numpy as np
import pytest

from tacopt.partitioner.pickers import search, windows
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import contest_like, memory_tight


def _brute(c: Compact) -> float:
    best = np.inf
    for combo in product(*(range(int(k)) for k in c.k)):
        x = np.array(combo, dtype=np.int64)
        if search.fits(c, x):
            best = min(best, search.objective(c, x))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_a_window_over_every_node_is_the_optimum_within_the_limit(seed):
    data = contest_like(7, seed=seed, mean_strategies=3.0, tightness=0.05, forbidden_share=0.0)
    c = reduce_problem(index_problem(problem_from_dict(data)))
    assert isinstance(c, Compact)
    if int(np.prod(c.k.astype(float))) > 20_000:
        pytest.skip("too many choices for brute force")
    nb = search.neighbourhood(c)
    x = search.lowest_usage(c, nb)
    assert search.fits(c, x)
    y, proven = windows.window_move(c, nb, x, np.ones(c.n_nodes, dtype=bool), seconds=5)
    assert proven and search.fits(c, y)
    assert search.objective(c, y) == pytest.approx(_brute(c))


def test_window_moves_keep_the_limit_and_never_cost_more():
    c = reduce_problem(index_problem(problem_from_dict(memory_tight(200, seed=9))))
    nb = search.neighbourhood(c)
    x = search.lowest_usage(c, nb)
    rng = np.random.default_rng(0)
    for _ in range(5):
        free = windows.binding_window(c, nb, x, rng, 20)
        assert 0 < free.sum() <= 30
        y, _ = windows.window_move(c, nb, x, free)
        assert search.fits(c, y) and search.objective(c, y) <= search.objective(c, x)
        assert (y[~free] == x[~free]).all()  # only the window moved
        x = y
    assert search.objective(c, windows.improve_windows(c, nb, x, time.monotonic() + 1.0, rng)) \
        <= search.objective(c, x)  # fmt: skip


def test_window_rows_hold_for_the_plan_they_come_from():
    c = reduce_problem(index_problem(problem_from_dict(memory_tight(150, seed=4))))
    nb = search.neighbourhood(c)
    x = search.lowest_usage(c, nb)
    free = windows.binding_window(c, nb, x, np.random.default_rng(1), 30)
    rows = windows.window_rows(c, x, free)
    assert rows  # memory-tight: some rows bind
    for terms, room in rows:
        assert sum(w for i, s, w in terms if x[i] == s) <= room


@pytest.mark.parametrize("seed", range(6))
def test_the_whole_proof_is_the_optimum_within_the_limit(seed):
    data = contest_like(7, seed=seed, mean_strategies=3.0, tightness=0.05, forbidden_share=0.0)
    c = reduce_problem(index_problem(problem_from_dict(data)))
    assert isinstance(c, Compact) and windows.is_whole(c)
    if int(np.prod(c.k.astype(float))) > 20_000:
        pytest.skip("too many choices for brute force")
    nb = search.neighbourhood(c)
    y, proven, bound = windows.prove_whole(c, nb, search.lowest_usage(c, nb), seconds=5)
    assert proven and search.fits(c, y)
    assert bound <= search.objective(c, y) == pytest.approx(_brute(c))


def test_costs_that_are_not_whole_numbers_are_not_for_toulbar2():
    data = contest_like(7, seed=1, mean_strategies=3.0, tightness=0.05, forbidden_share=0.0)
    c = reduce_problem(index_problem(problem_from_dict(data)))
    assert isinstance(c, Compact) and windows.is_whole(c)
    c.cost[int(np.flatnonzero(np.isfinite(c.cost))[0])] += 0.25  # one strategy's cost
    assert not windows.is_whole(c)
