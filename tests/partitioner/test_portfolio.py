"""Searches sharing their incumbent (:mod:`~tacopt.partitioner.pickers.portfolio`)."""

from __future__ import annotations

import time

import numpy as np

from tacopt.partitioner.pickers import primal, search
from tacopt.partitioner.pickers.portfolio import Incumbent, run_portfolio
from tacopt.partitioner.pickers.reduce import reduce_problem
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import memory_tight


def test_a_plan_published_in_one_process_is_taken_in_another():
    def one(seed: int, shared: Incumbent) -> np.ndarray:
        mine = np.full(4, seed)
        shared.offer(mine, float(10 - seed))  # seed 1 (forked) publishes 9, seed 0 here 10
        if seed == 0:
            end = time.monotonic() + 5.0
            while shared.value > 9.0 and time.monotonic() < end:
                time.sleep(0.01)
            got = shared.take(10.0)
            assert got is not None
            return got[1]
        return mine

    best = run_portfolio(one, [0, 1], 4, time.monotonic() + 5.0, key=lambda x: -float(x[0]))
    assert best is not None and best.tolist() == [1, 1, 1, 1]


def test_two_searches_share_and_return_a_plan_within_the_limit():
    c = reduce_problem(index_problem(problem_from_dict(memory_tight(150, seed=5))))
    x = primal.search(c, time.monotonic() + 4.0, seed=0, threads=2)
    assert x is not None and search.fits(c, x) and np.isfinite(search.objective(c, x))
