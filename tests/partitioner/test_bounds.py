"""The bounds stage (:mod:`tacopt.partitioner.pickers.bounds`): every figure a lower bound.

Oracles: the brute-force picker on tiny random problems (with and without a usage limit), the
exact picker's proven optimum on generated memory-tight problems, and the local polytope's
exactness on a tree.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tacopt.partitioner.pickers import pick
from tacopt.partitioner.pickers.bounds import BoundProcess, diffusion_bound, edge_split_bound
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.plan import NoPlanError
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import memory_tight
from tests.partitioner.test_iopddl import EXAMPLE, tiny_problems


def _reduced(data: dict) -> Compact | None:
    c = reduce_problem(index_problem(problem_from_dict(data)))
    return c if isinstance(c, Compact) else None


def _bounds(c: Compact, sweeps: int) -> list[float]:
    far = time.monotonic() + 60
    return [edge_split_bound(c), diffusion_bound(c, far, max_sweeps=sweeps),
            diffusion_bound(c, far, memory=True, max_sweeps=sweeps, price_every=1),
            diffusion_bound(c, far, memory=True, max_sweeps=sweeps)]  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tiny_problems())
def test_every_bound_is_below_the_brute_force_optimum(data: dict) -> None:
    c = _reduced(data)
    if c is None:  # nothing to bound: no plan, or reduced away
        return
    try:
        optimum = pick(problem_from_dict(data), "brute").objective
    except NoPlanError:  # no plan fits: any figure is a bound
        return
    if optimum >= 10**18:  # every plan breaks the rules: the reduced problem has none (inf)
        return
    for b in _bounds(c, 300):
        assert b <= optimum + 1e-6 * max(1.0, abs(optimum))


def test_the_price_of_memory_raises_the_bound_on_the_contest_example() -> None:
    # Without the limit the example's optimum is 415; with the prices the bound reaches 445.
    c = _reduced(EXAMPLE)
    assert c is not None
    edge, plain, priced, every_fourth = _bounds(c, 2000)
    assert 415 - 1e-3 <= plain <= 415 == edge
    assert 445 - 1e-3 <= min(priced, every_fourth) <= max(priced, every_fourth) <= 445


@pytest.mark.parametrize("seed", [1, 2])
def test_the_bound_is_below_a_proven_optimum_of_a_memory_tight_problem(seed: int) -> None:
    data = memory_tight(40, seed, min_peak_share=0.93, mean_strategies=6.0)
    plan = pick(problem_from_dict(data), "exact", time_limit_s=60)
    assert plan.status == "OPTIMAL"
    c = _reduced(data)
    assert c is not None
    for b in _bounds(c, 3000):
        assert b <= plan.objective + 1e-6 * abs(plan.objective)


def test_the_bound_is_exact_on_a_tree_and_the_same_every_run() -> None:
    # 0 - 1 - 2 - 3, a path with costs that disagree along it: the local polytope is exact.
    rng = np.random.default_rng(7)
    k = [3, 4, 2, 3]
    data = {"problem": {
        "nodes": {"intervals": [[0, 1]] * 4, "costs": [rng.integers(0, 50, s).tolist() for s in k],
                  "usages": [[0] * s for s in k]},
        "edges": {"nodes": [[0, 1], [1, 2], [2, 3]],
                  "costs": [rng.integers(0, 50, a * b).tolist()
                            for a, b in zip(k, k[1:])]}}}  # fmt: skip
    c = _reduced(data)
    optimum = pick(problem_from_dict(data), "brute").objective
    if c is None:  # the reductions solved it
        return
    first = diffusion_bound(c, time.monotonic() + 60, max_sweeps=3000)
    assert first == diffusion_bound(c, time.monotonic() + 60, max_sweeps=3000)
    assert optimum - 1e-3 <= first <= optimum


def test_a_stalled_bound_stops_before_its_deadline() -> None:
    c = _reduced(EXAMPLE)
    assert c is not None
    t0 = time.monotonic()
    assert diffusion_bound(c, t0 + 20, memory=True, max_sweeps=10**9) > 445 - 1e-3
    assert time.monotonic() - t0 < 5  # settled after a few hundred sweeps, not at the deadline


def test_the_bound_so_far_is_seen_by_another_process_and_is_a_bound() -> None:
    """``BoundProcess.so_far``: what the worker has read so far (the search's portfolio asks
    it), never above the optimum (445 on the contest example) nor the final bound."""
    c = _reduced(EXAMPLE)
    assert c is not None
    beside = BoundProcess(c, time.monotonic() + 20, None)
    for _ in range(200):
        if np.isfinite(beside.so_far()):
            break
        time.sleep(0.01)
    seen = beside.so_far()
    final = beside.result()
    assert final is not None and np.isfinite(seen)
    assert seen <= 445 + 1e-6 and final <= 445
    assert seen <= final + 1e-3 * abs(final) + 1e-6  # the final has a float margin taken off
