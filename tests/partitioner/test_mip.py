"""The proof race (:func:`tacopt.partitioner.pickers.mip.race`): toulbar2 and the integer program
agree with brute force on tiny problems; a failed or stopped engine leaves the other's answer;
the result does not depend on which engine wins."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from tacopt.partitioner.pickers import mip, pairwise, primal, search
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import contest_like, memory_tight


def _reduced(data: dict) -> Compact:
    c = reduce_problem(index_problem(problem_from_dict(data)))
    assert isinstance(c, Compact)
    return c


def _start(c: Compact) -> np.ndarray:
    """A plan within the limit and without forbidden pairs, as the picker races from."""
    x = primal.search(c, time.monotonic() + 1.0, seed=0)
    assert x is not None and search.fits(c, x) and np.isfinite(search.objective(c, x))
    return x


def _brute(c: Compact) -> float:
    best = math.inf
    for choice in itertools.product(*(range(int(k)) for k in c.k)):
        x = np.asarray(choice, dtype=np.int64)
        if search.fits(c, x):
            best = min(best, float(search.objective(c, x)))
    return best


def _failing(c, nb, x, seconds):
    raise ValueError("engine broke")


def _sleeping(c, nb, x, seconds):
    time.sleep(seconds + 30.0)  # past the race's deadline: killed


FAILING = mip.Engine("failing", _failing)
SLEEPING = mip.Engine("sleeping", _sleeping)
ENGINES = (mip.TOULBAR2, pairwise.INTEGER_PROGRAM)


@pytest.mark.parametrize("seed", range(5))
def test_both_engines_prove_the_brute_force_optimum(seed):
    c = _reduced(contest_like(7, seed=seed, mean_strategies=3.0, tightness=0.05,
                              forbidden_share=0.0))  # fmt: skip
    if int(np.prod(c.k.astype(float))) > 20_000:
        pytest.skip("too many choices for brute force")
    nb = search.neighbourhood(c)
    x = search.lowest_usage(c, nb)
    optimum = _brute(c)
    for engine in ENGINES:  # each alone: both prove the same optimum
        (a,) = mip.race(c, nb, x, time.monotonic() + 30.0, (engine,))
        assert a.proven, a
        plan = x if a.x is None else a.x
        assert search.fits(c, plan) and search.objective(c, plan) == pytest.approx(optimum)
        assert a.bound <= optimum + 1e-6
    best, value, proven = mip.best_of(c, x, mip.race(c, nb, x, time.monotonic() + 30.0,
                                                         ENGINES))  # fmt: skip
    assert proven and value == pytest.approx(optimum) == search.objective(c, best)


def test_a_failed_engine_leaves_the_others_answer():
    c = _reduced(memory_tight(12, seed=1))
    nb = search.neighbourhood(c)
    x = _start(c)
    broken, good = mip.race(c, nb, x, time.monotonic() + 30.0, (FAILING, mip.TOULBAR2))
    assert broken.engine == "failing" and broken.note.startswith("failed: ")
    assert "engine broke" in broken.note and broken.x is None and broken.bound == -math.inf
    assert good.proven
    best, value, proven = mip.best_of(c, x, [broken, good])
    assert proven and value == search.objective(c, best) <= search.objective(c, x)


def test_an_engine_out_of_time_is_stopped_and_the_other_wins():
    c = _reduced(memory_tight(12, seed=2))
    nb = search.neighbourhood(c)
    x = _start(c)
    slow, good = mip.race(c, nb, x, time.monotonic() + 20.0, (SLEEPING, mip.TOULBAR2))
    assert good.proven and slow.note == "stopped" and slow.x is None
    # nobody proves: every engine is stopped at the deadline, the starting plan stands
    (alone,) = mip.race(c, nb, x, time.monotonic() + 1.5, (SLEEPING,))
    assert alone.note == "stopped" and not alone.proven
    best, bound, proven = mip.best_of(c, x, [alone])
    assert best is x and bound == -math.inf and not proven


def test_the_race_gives_the_same_optimum_whichever_engine_wins():
    c = _reduced(memory_tight(16, seed=3, mean_strategies=6.0))
    nb = search.neighbourhood(c)
    x = _start(c)
    values = set()
    for engines in (ENGINES, ENGINES[::-1], ENGINES[:1], ENGINES[1:], ENGINES):
        best, value, proven = mip.best_of(c, x, mip.race(c, nb, x, time.monotonic() + 30.0,
                                                             engines))  # fmt: skip
        assert proven and search.fits(c, best) and value == search.objective(c, best)
        values.add(value)
    assert len(values) == 1
    # one engine: the same plan every time
    plans = [mip.best_of(c, x, mip.race(c, nb, x, time.monotonic() + 30.0, ENGINES[:1]))[0]
             for _ in range(2)]  # fmt: skip
    assert (plans[0] == plans[1]).all()


def test_toulbar2s_bound_out_of_time_is_below_the_optimum():
    c = _reduced(memory_tight(60, seed=11))
    nb = search.neighbourhood(c)
    x = _start(c)
    (short,) = mip.race(c, nb, x, time.monotonic() + 2.5, (mip.TOULBAR2,))
    best, value, proven = mip.best_of(c, x, mip.race(c, nb, x, time.monotonic() + 60.0,
                                                         ENGINES))  # fmt: skip
    if not proven:
        pytest.skip("not proven within 60 s on this machine")
    assert short.bound <= value + 1e-6


def test_toulbar2_stopped_at_its_end_returns_its_plan_and_bound_but_no_proof():
    c = _reduced(memory_tight(200, seed=207, mean_strategies=29.0))  # not proven in seconds
    nb = search.neighbourhood(c)
    x = _start(c)
    (a,) = mip.race(c, nb, x, time.monotonic() + 6.0, (mip.TOULBAR2,))
    assert a.note == "stopped at its end" and not a.proven, a
    assert a.x is not None and search.fits(c, a.x)
    assert a.bound <= search.objective(c, a.x) <= search.objective(c, x)
    assert np.isfinite(a.bound)


def test_past_small_entries_the_race_comes_first_then_the_large_path(monkeypatch):
    c = _reduced(memory_tight(40, seed=4))
    monkeypatch.setattr(pairwise, "SMALL_ENTRIES", 0)  # every problem is "large" here
    monkeypatch.setattr(pairwise, "RACE_ENTRIES", len(c.edge_cost))
    info: dict = {}
    best, bound, proven = pairwise.search_and_prove(c, True, time.monotonic() + 20.0, 0, info)
    assert proven and info["bound_by"] in ("toulbar2", "integer program")
    assert search.fits(c, best) and bound == search.objective(c, best)
    # engines that prove nothing: the large path from the race's plan, its own bound
    monkeypatch.setattr(mip, "TOULBAR2", SLEEPING)
    monkeypatch.setattr(pairwise, "INTEGER_PROGRAM", SLEEPING)
    info = {}
    found, low, sure = pairwise.search_and_prove(c, True, time.monotonic() + 8.0, 0, info)
    assert not sure and found is not None and search.fits(c, found)
    assert low <= bound and search.objective(c, found) >= bound
    assert info["proof"]["sleeping"]["note"] == "stopped" and "primal_s" in info


def test_toulbar2_stopped_before_its_search_sends_nothing_but_no_failure(monkeypatch):
    c = _reduced(memory_tight(20, seed=5))
    nb = search.neighbourhood(c)
    x = _start(c)
    build = mip.windows._network

    def slow_network(*args):
        time.sleep(4.0)  # the stop signal comes while the network is built
        return build(*args)

    monkeypatch.setattr(mip.windows, "_network", slow_network)
    (a,) = mip.race(c, nb, x, time.monotonic() + 3.0, (mip.TOULBAR2,))
    assert a.note == "stopped at its end" and a.x is None and a.bound == -math.inf, a
