"""The integer program of a reduced problem (:mod:`tacopt.partitioner.pickers.pairwise`): the
memory rows given up front (:func:`live_steps`) cover every step, and the program with them
(and a MIP start) finds what the lazy rows find; on tiny problems, toulbar2's optimum."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.partitioner.pickers import pairwise, search, windows
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import contest_like, memory_tight


def _reduced(data: dict) -> Compact:
    c = reduce_problem(index_problem(problem_from_dict(data)))
    assert isinstance(c, Compact)
    return c


@pytest.mark.parametrize("seed", range(4))
def test_live_steps_cover_every_step_where_the_limit_can_bind(seed):
    c = _reduced(memory_tight(150, seed=seed))
    steps = pairwise.live_steps(c)
    tight = np.flatnonzero(c.item_tight)
    live = np.zeros((c.n_steps, len(c.item_node)), dtype=bool)
    for i in tight.tolist():
        live[c.item_start[i] : c.item_end[i], i] = True
    assert len(steps) and (np.diff(steps) > 0).all()
    for t in range(c.n_steps):  # the items live at t are all live at one kept step
        assert (~live[t] | live[steps]).all(axis=1).any(), t
    # and none of the kept steps is covered by another one
    for a in steps.tolist():
        others = steps[steps != a]
        assert not (~live[a] | live[others]).all(axis=1).any(), a


@pytest.mark.parametrize("seed", range(6))
def test_the_program_with_every_row_up_front_is_the_optimum(seed):
    c = _reduced(contest_like(7, seed=seed, mean_strategies=3.0, tightness=0.05,
                              forbidden_share=0.0))  # fmt: skip
    everything = np.ones(c.n_nodes, dtype=bool)
    nb = search.neighbourhood(c)
    x = search.lowest_usage(c, nb)
    res = pairwise.solve_mip(c, everything, x, 30.0, steps=pairwise.live_steps(c), warm=True)
    assert res.optimal and res.x is not None and search.fits(c, res.x)
    # toulbar2 over every node (test_windows: brute force's optimum on these problems)
    y, proven = windows.window_move(c, nb, x, everything, seconds=5)
    assert proven and search.objective(c, res.x) == pytest.approx(search.objective(c, y))


def test_rows_up_front_and_lazy_rows_reach_the_same_optimum():
    c = _reduced(memory_tight(24, seed=5, mean_strategies=8.0))
    everything = np.ones(c.n_nodes, dtype=bool)
    x = search.lowest_usage(c, search.neighbourhood(c))
    lazy = pairwise.solve_mip(c, everything, x, 60.0)
    ahead = pairwise.solve_mip(c, everything, x, 60.0, steps=pairwise.live_steps(c), warm=True)
    assert lazy.optimal and ahead.optimal and ahead.x is not None and search.fits(c, ahead.x)
    assert ahead.objective == pytest.approx(lazy.objective)
    assert search.objective(c, ahead.x) == pytest.approx(ahead.objective)
