"""Primal search on a reduced pick problem (:class:`Compact`): good solutions within the limit.

Memory is kept as a *soft* constraint while searching (the approach of the IOPDDL contest's
winners): every tight usage item ``t`` carries a weight ``w[t]``, and a strategy ``s`` of its
node pays ``w[t] * (usage_t(s) - min usage_t)`` on top of its cost. For fixed weights the
problem is an unconstrained pairwise (min-sum) problem, solved by:

- *forest dynamic programming*: a random induced forest of the graph is freed (all other nodes
  fixed, their edges folded into node costs) and solved exactly by min-sum DP, repeated; each
  step is an exact large-neighbourhood move, so the penalised cost never rises;
- batched best responses (:func:`~.search.sweep`) between.

Weights adapt: those of items live at steps over the limit grow, all others decay, over many
rounds (so each node's weight settles where its memory matters). Each round's choice is
repaired to fit the limit (moves with the best cost per usage saved, on the steps over it)
and polished by forest moves that keep the limit. The cheapest fitting choice is returned.
With ``threads > 1`` as many processes search from different seeds; the best result wins.

Examples
--------
>>> from tacopt.partitioner.problem.contest_like import contest_like
>>> from tacopt.partitioner.problem import index_problem
>>> from tacopt.partitioner.problem.contest import problem_from_dict
>>> from tacopt.partitioner.pickers.reduce import reduce_problem
>>> import time
>>> p = problem_from_dict(contest_like(300, seed=2, tightness=0.2))
>>> c = reduce_problem(index_problem(p))
>>> x = search(c, time.monotonic() + 2.0, seed=1)
>>> bool((c.profile(x) <= c.limit).all())
True
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from tacopt.partitioner.errors import WorkerFailure, send_result, worker_result
from tacopt.partitioner.pickers import search as ls
from tacopt.partitioner.pickers import windows
from tacopt.partitioner.pickers.bounds import diffusion_bound
from tacopt.partitioner.pickers.forest import (
    Graph,
    forest_dp,
    induced_forest,
    penalised,
    penalties,
    prepare,
)
from tacopt.partitioner.pickers.portfolio import Incumbent, run_portfolio
from tacopt.partitioner.pickers.reduce import Compact, ranges

T = TypeVar("T")


def search(
    c: Compact,
    deadline: float,
    *,
    seed: int = 0,
    start: np.ndarray | None = None,
    threads: int = 1,
    graph: Graph | None = None,
    join_at: float | None = None,
    join_if: Callable[[float], bool] | None = None,
) -> np.ndarray | None:
    """The cheapest choice within the limit found by ``deadline`` (``time.monotonic()``).

    Parameters
    ----------
    c
        The reduced problem.
    deadline
        When to return (monotonic seconds); the search stops a little before.
    seed
        Seed of the random choices (each extra thread takes the next seed).
    start
        A choice to start from (kept if nothing better within the limit is found).
    threads
        Searches run at once (processes, one per core).
    graph
        :func:`prepare`'s arrays, if already built.
    join_at
        When the second search starts (monotonic seconds; default at once): until then its
        core is another stage's (the bound's). It starts from the shared best; the others
        start at once.
    join_if
        With ``join_at``: the second search starts earlier, once ``join_if(value of the shared
        best)`` holds (asked every half second).

    Returns
    -------
    numpy.ndarray or None
        One strategy per reduced node, within the limit; None if none was found in time.
    """
    # room for what follows (mapping back, checking and writing the plan, ending processes),
    # which a loaded machine stretches as much as the search
    deadline -= 0.03 * max(0.0, deadline - time.monotonic())
    g = graph if graph is not None else prepare(c)
    if threads > 1 and time.monotonic() < deadline - 2.0:
        def one(s: int, shared: Incumbent) -> np.ndarray | None:
            if s != seed + 1 or join_at is None:
                return _one(c, g, deadline, s, start, shared)
            while time.monotonic() < min(join_at, deadline):
                if join_if is not None and join_if(shared.value):
                    break
                time.sleep(max(0.0, min(0.5, min(join_at, deadline) - time.monotonic())))
            got = shared.take(np.inf)
            return _one(c, g, deadline, s, start if got is None else got[1], shared)

        return run_portfolio(one,
                             [seed + i for i in range(threads)], c.n_nodes, deadline,
                             lambda x: ls.objective(c, x))  # fmt: skip
    return _one(c, g, deadline, seed, start)


def _one(c, g, deadline, seed, start, shared: Incumbent | None = None) -> np.ndarray | None:
    # two kinds of thread: even seeds mostly cheap forest rounds, odd ones more whole solves
    every = 8 if seed % 2 == 0 else 3
    return _Search(c, g, np.random.default_rng(seed), deadline, every, shared).run(start)


class SearchProcess:
    """:func:`search` (one thread) in a forked process, on the second core, while the caller
    does something else (the integer program); then, if ``bound_until`` is later than the
    search's end, :func:`~.bounds.diffusion_bound` with the memory prices until then, priced
    toward the search's plan. The search's plan is sent as soon as it is found, the bound after
    it: :meth:`result` takes what has arrived by ``bound_until`` (or the search's deadline).

    Where fork is not available nothing runs and :meth:`result` is ``(None, None)``.
    """

    def __init__(
        self,
        c: Compact,
        deadline: float,
        *,
        seed: int = 0,
        start: np.ndarray | None = None,
        bound_until: float | None = None,
    ) -> None:
        self.until = max(deadline, bound_until or deadline)
        self.process = None
        if "fork" not in mp.get_all_start_methods():
            return
        ctx = mp.get_context("fork")
        self.receive, send = ctx.Pipe(duplex=False)
        # not a daemon: the search forks toulbar2 solves of its own
        self.process = ctx.Process(target=_search_then_bound,
                                   args=(c, deadline, seed, start, bound_until, send))  # fmt: skip
        self.process.start()
        send.close()

    def result(self) -> tuple[np.ndarray | None, float | None]:
        """The search's choice within the limit (None: none found) and the bound (None: none
        computed); the process is ended."""
        x, bound = None, None
        if self.process is None:
            return x, bound
        try:
            while self.receive.poll(max(self.until - time.monotonic(), 0.0) + 0.1):
                x, bound, done = worker_result(self.receive.recv())
                if done:
                    break
        except (EOFError, OSError):
            pass
        finally:
            self.cancel()
        return x, bound

    def cancel(self) -> None:
        """End the process now (the caller needs its core back)."""
        if self.process is not None and self.process.is_alive():
            self.process.kill()
        if self.process is not None:
            self.process.join(1.0)


def _search_then_bound(c, deadline, seed, start, bound_until, send) -> None:
    try:
        x = search(c, deadline, seed=seed, start=start)
        more = bound_until is not None and time.monotonic() < bound_until - 0.5
        send.send((x, None, not more))
        if more:
            target = None if x is None else ls.objective(c, x)
            send.send((x, diffusion_bound(c, bound_until, memory=True, target=target), True))
    except Exception as exc:  # sent to the parent, which raises it (no traceback here)
        send.send(WorkerFailure.of(exc))
    finally:
        send.close()


_DEBUG = False  # print each round (tuning only)
#: The weight updates' step shrinks by this each time the choice flips between fitting the
#: limit and breaking it, down to ``STEP_LEAST`` (1.0: no damping).
STEP_SHRINK = 0.6
STEP_LEAST = 0.1
STEP_MOST = 3.0
#: The usage weight (times the starting one) of the first plan, grown from the lowest usages.
SAFE_WEIGHT = 20.0
#: At most this share of the search's time goes to exact moves around the best plan's binding
#: steps (:mod:`.windows`) once the weighted rounds stall; halved after each slice that finds
#: nothing better (S: a second per move for 0.2 %), down to a twentieth.
WINDOW_SHARE = 0.4


class _Search:
    """One search thread (state of the adaptive weights and the best choice)."""

    def __init__(
        self,
        c: Compact,
        g: Graph,
        rng: np.random.Generator,
        deadline: float,
        whole_every: int = 8,
        shared: Incumbent | None = None,
    ):
        self.c, self.g, self.rng, self.deadline = c, g, rng, deadline
        self.best: np.ndarray | None = None
        self.fallback: np.ndarray | None = None  # the fewest forbidden pairs, if no plan has none
        self.fallback_val = np.inf
        self.best_val = np.inf
        self.low = ls.lowest_usage(c, g.nb)
        self.hard = np.isfinite(c.limit)
        self.build_s = 0.0
        self.whole_every = whole_every  # rounds without a better choice before a whole solve
        self.t0, self.window_s, self.window_share = time.monotonic(), 0.0, WINDOW_SHARE
        self.shared = shared  # the portfolio's best plan (portfolio.py)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def offer(self, x: np.ndarray) -> None:
        if self.hard and not (self.c.profile(x) <= self.c.limit).all():
            return
        val = ls.objective(self.c, x)
        if val < self.best_val:
            self.best, self.best_val = x.copy(), val
            if self.shared is not None and np.isfinite(val):
                self.shared.offer(x, val)
        elif self.best is None:  # forbidden pairs: kept in case nothing better turns up
            fallback = penalised(self.c, self.g, x, np.zeros(len(self.c.cost)))
            if fallback < self.fallback_val:
                self.fallback, self.fallback_val = x.copy(), fallback

    def descend(self, x: np.ndarray, pen: np.ndarray, stall: int = 3, most: int = 40):
        """Forest moves on the penalised cost until ``stall`` moves in a row gain nothing."""
        val = penalised(self.c, self.g, x, pen)
        quiet = 0
        for _ in range(most):
            if quiet >= stall or self.left() <= 0:
                break
            y = forest_dp(self.c, self.g, x, pen, induced_forest(self.c, self.g, self.rng))
            new = penalised(self.c, self.g, y, pen)
            quiet = quiet + 1 if new >= val - 1e-9 * max(1.0, abs(val)) else 0
            if new <= val:
                x, val = y, new
        return x

    def run(self, start: np.ndarray | None) -> np.ndarray | None:
        c, g = self.c, self.g
        self.offer(self.low)  # lowest usage: fits whenever anything does (one item per node)
        x = ls.greedy_start(c, g.nb) if start is None else start.copy()
        if start is not None:
            self.offer(x)
        zero = np.zeros(len(c.cost))
        everything = np.zeros(c.n_nodes, dtype=bool)
        everything[g.movable] = True
        if not self.hard:
            x = self.descend(x, zero, stall=2, most=10)
            self.offer(x)
            while self.left() > 0.5:
                if self._slice() > 0:
                    x = bounded(
                        ls.exact_sub,
                        self.deadline - 0.3,
                        x,
                        (c, g.nb, x, zero, everything, self._slice(), True),
                    )
                else:
                    x = self.descend(x, zero, stall=3, most=20)
                self.offer(x)
            return self.best
        base = self._base_weight(x)
        tight = c.item_tight
        # A plan that fits early, whatever the time: the lowest usages fit whenever anything
        # does, but hold forbidden pairs; forest moves under heavy usage weights remove them
        # and keep the usage near its lowest (held-out 30k nodes: 9,143 forbidden pairs to 3
        # in five moves, at 0.77 of the limit), then limit-keeping moves polish.
        heavy = penalties(c, g, np.where(tight, SAFE_WEIGHT * base, 0.0))
        self.polish(self.descend(self.low.copy(), heavy, stall=1, most=6), zero)
        weight = np.where(tight, base, 0.0)
        rounds, since, last = 0, 0, 0
        # Step size of the weight updates (in log space): shrinks each time the choice flips
        # between fitting and breaking the limit, grows after three rounds on one side (up to
        # STEP_MOST: weights far from the limit's level get there in a few rounds).
        step, side, run = 1.0, None, 0
        # Whole solves run from the best plan at a scale of the weights of the round that
        # found it, the scale bisected between one whose solve broke the limit and one whose
        # solve fitted (both forgotten when a better plan is found).
        best_w: np.ndarray | None = None
        scale, broke, fitted = 1.0, 0.0, np.inf
        while self.left() > 0.5:
            rounds += 1
            before = self.best_val
            due = since >= self.whole_every or rounds - last >= 2 * self.whole_every
            whole = due and self._slice() > 0
            if whole:
                self.adopt()
            if whole and best_w is not None and self.best is not None:
                # A whole solve is dear (seconds to tens of seconds): spend it near the best
                # plan and its weights (tuning on M: 12 of 13 whole solves at the drifted
                # weights broke the limit several times over or were over-penalised).
                if broke > 0 and fitted / broke < 1.05:  # bracketed: other weights, same level
                    best_w = best_w * np.exp(self.rng.normal(0.0, 0.3, len(best_w)))
                    broke, fitted = 0.0, np.inf
                scale = _next_scale(broke, fitted)
                weight, x = best_w * scale, self.best.copy()
                step, side, run = 1.0, None, 0
            pen = penalties(c, g, weight)
            used = weight.copy()
            if whole:
                last = rounds
                t = time.monotonic()
                seconds = self._slice()
                args = (c, g.nb, x, pen, everything, seconds, True)
                x = bounded(ls.exact_sub, self.deadline - 0.3, x, args)
                self.build_s = max(self.build_s, time.monotonic() - t - seconds)
                since = 0
            else:
                x = self.descend(x, pen, stall=2, most=8)
            prof = c.profile(x)
            over = prof > c.limit
            if _DEBUG:
                print(rounds, round(self.left(), 1), ls.objective(c, x), int(over.sum()),
                      float(prof.max() / c.limit), self.best_val, float(weight.max()),
                      round(step, 3), "W" if whole else "")  # fmt: skip
            rel = prof / c.limit - 1.0
            fits = not over.any()
            run = run + 1 if fits == side else 1
            step = max(step * STEP_SHRINK, STEP_LEAST) if run == 1 and side is not None else \
                min(STEP_MOST, step * 1.5) if run >= 3 else step  # fmt: skip
            side = fits
            if fits:
                self.polish(x, pen)
                # fits: weights of items with room to spare fall, to reach cheaper choices
                room = -ls._range_max(rel, c.item_start, c.item_end)
                weight *= np.where(room > 0.2, 0.5, np.where(room > 0.02, 0.8, 0.97)) ** step
            else:
                fixed = self.repair(x, prof)
                if fixed is not None:
                    self.polish(fixed, pen)
                excess = np.maximum(ls._range_max(rel, c.item_start, c.item_end), 0.0)
                hit = (excess > 0) & tight
                weight[hit] = weight[hit] * 1.15**step \
                    + step * base * (0.02 + np.minimum(excess[hit], 0.5))  # fmt: skip
            since = 0 if self.best_val < before else since + 1
            if self.best is not None and since >= 2 and \
                    self.window_s < self.window_share * (time.monotonic() - self.t0):  # fmt: skip
                self.window_moves()
            if self.best_val < before:
                best_w, broke, fitted = used, 0.0, np.inf
            elif whole and best_w is not None:
                broke, fitted = (broke, min(fitted, scale)) if fits else (max(broke, scale), fitted)
        if self.best is None:  # out of time before anything fitted: one repair, whatever it takes
            fixed = self.repair(self.low, c.profile(self.low), anytime=False)
            if fixed is not None:
                self.offer(fixed)
        return self.best if self.best is not None else self.fallback

    def adopt(self) -> None:
        """Take the portfolio's best plan if it beats this search's."""
        got = self.shared.take(self.best_val) if self.shared is not None else None
        if got is not None:
            self.best_val, self.best = got

    def window_moves(self) -> None:
        """Exact moves that keep the limit around the best plan's binding steps, for a slice."""
        self.adopt()
        t, before = time.monotonic(), self.best_val
        end = min(self.deadline - 1.2, t + max(1.0, 0.05 * self.left()))
        if end > t and self.best is not None:
            self.offer(windows.improve_windows(self.c, self.g.nb, self.best, end, self.rng))
        self.window_s += time.monotonic() - t
        gained = self.best_val < before
        self.window_share = WINDOW_SHARE if gained else max(self.window_share / 2, WINDOW_SHARE / 8)

    def _slice(self) -> int:
        """CPU seconds for one whole solve: a share of the time left, less the time to build
        the solver's model (toulbar2 counts CPU time; under load a second takes longer)."""
        usable = (self.left() - 1.5 * self.build_s) / 2.0
        if usable < 1.0:
            return 0
        return int(max(1.0, min(20.0, 0.15 * usable * 2.0, usable)))

    def _base_weight(self, x: np.ndarray) -> float:
        """Cost per unit of usage: the typical spread of a node's local cost over the spread
        of its usage (the scale the weights start from)."""
        c = self.c
        nb = self.g.nb
        pair = c.edge_cost[nb.base + nb.stride * x[nb.nbr]]  # inf: a forbidden pair
        local = c.cost + np.bincount(nb.g, weights=pair, minlength=len(c.cost))
        finite = np.where(np.isfinite(local), local, np.nan)
        idx = c.offset[:-1]
        spread_c = np.fmax.reduceat(finite, idx) - np.fmin.reduceat(finite, idx)
        ik = c.k[c.item_node]
        spread_u = np.maximum.reduceat(self.g.item_extra, c.item_offset[:-1]) if len(ik) else ik
        per_node = np.bincount(c.item_node, weights=spread_u * c.item_tight, minlength=c.n_nodes)
        ok = (per_node > 0) & np.isfinite(spread_c) & (c.k > 1)
        if not ok.any():
            return 1.0
        return float(np.median(spread_c[ok] / per_node[ok]))

    def repair(self, x: np.ndarray, prof: np.ndarray, anytime: bool = True) -> np.ndarray | None:
        """Move nodes on steps over the limit, cheapest cost per usage saved first, until the
        choice fits (None if it cannot; ``anytime``: None also once the deadline passed)."""
        c, g = self.c, self.g
        x = x.copy()
        for _ in range(1000):
            over = prof > c.limit
            if not over.any():
                return x
            if anytime and self.left() <= 0:
                return None
            cnt = np.concatenate(([0], np.cumsum(over)))
            hit_items = np.flatnonzero(cnt[c.item_end] - cnt[c.item_start] > 0)
            if not len(hit_items):
                return None
            # usage saved by each strategy of the nodes concerned, over their hit items
            ik = c.k[c.item_node[hit_items]]
            pos = np.repeat(c.item_offset[hit_items], ik) + ranges(ik)
            now = np.repeat(c.item_usage[c.item_offset[hit_items] + x[c.item_node[hit_items]]], ik)
            saved = np.bincount(g.nb.item_g[pos], weights=now - c.item_usage[pos],
                                minlength=len(c.cost))  # fmt: skip
            local = ls.local_costs(c, g.nb, x, np.zeros(len(c.cost)))
            cur = local[c.offset[:-1] + x][g.nb.owner]
            extra = local - cur
            ratio = np.where(saved > 0, np.maximum(extra, 0.0) / np.maximum(saved, 1e-12)
                             + 1e-12 * extra, np.inf)  # fmt: skip
            if not np.isfinite(ratio).any():
                return None
            nodes = np.unique(g.nb.owner[np.isfinite(ratio)])
            sub = np.concatenate([ratio[c.offset[i] : c.offset[i + 1]] for i in nodes])
            kk = c.k[nodes]
            starts = np.concatenate(([0], np.cumsum(kk)[:-1]))
            best = np.minimum.reduceat(sub, starts)
            arg = np.array([int(np.argmin(sub[s : s + n])) for s, n in zip(starts, kk)])
            # the cheapest moves first, 1/32 of them per round (M: 51.04e9 where 1/8 gave 52.75e9)
            take = np.argsort(best, kind="stable")[: max(1, len(nodes) // 32)]
            x[nodes[take]] = arg[take]
            prof = c.profile(x)
        return x if (prof <= c.limit).all() else None

    def polish(self, x: np.ndarray, pen: np.ndarray, moves: int = 2) -> None:
        """Forest moves on the penalised cost that keep the limit (trees whose new choice
        breaks it are undone), then batched best responses within the limit."""
        c, g = self.c, self.g
        for _ in range(moves):
            if self.left() <= 0:
                break
            free = induced_forest(c, g, self.rng)
            y = forest_dp(c, g, x, pen, free)
            y = _keep_limit(c, g, x, y)
            if ls.objective(c, y) <= ls.objective(c, x):
                x = y
        x = ls.sweep(c, g.nb, x, hard=True, max_passes=5, deadline=self.deadline)
        self.offer(x)


def _next_scale(broke: float, fitted: float) -> float:
    """The next whole solve's scale of the best plan's weights: between the largest scale
    whose solve broke the limit and the smallest whose solve fitted (geometric mean), else a
    step beyond the one known; 1 at first.

    >>> _next_scale(0.0, np.inf), _next_scale(1.0, np.inf), _next_scale(0.0, 1.0)
    (1.0, 1.6, 0.7)
    >>> round(_next_scale(1.0, 1.6), 3)
    1.265
    """
    if broke > 0 and np.isfinite(fitted):
        return float(np.sqrt(broke * fitted))
    if broke > 0:
        return 1.6 * broke
    return 0.7 * fitted if np.isfinite(fitted) else 1.0


def bounded(fn: Callable[..., tuple[Any, ...]], deadline: float, fallback: T, args: tuple) -> T:
    """``fn(*args)[0]`` computed in a forked process that is stopped at ``deadline`` (then
    ``fallback``): toulbar2 keeps a CPU-time limit, which a loaded machine stretches, and HiGHS
    may overrun its time limit by many seconds (in presolve or a long simplex run)."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, args, send), daemon=True)
    proc.start()
    send.close()
    out = fallback
    try:
        if recv.poll(max(0.0, deadline - time.monotonic())):
            out = worker_result(recv.recv())
    except (EOFError, OSError):
        out = fallback
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    return out


def _child(fn, args, send) -> None:
    try:
        send_result(send, lambda: fn(*args)[0])
    finally:
        send.close()


def _keep_limit(c: Compact, g: Graph, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y`` with the changed nodes that raise usage on steps over the limit reset to ``x``
    (repeated until it fits; ``x`` fits)."""
    y = y.copy()
    for _ in range(30):
        prof = c.profile(y)
        over = prof > c.limit
        if not over.any():
            return y
        cnt = np.concatenate(([0], np.cumsum(over)))
        hit = cnt[c.item_end] - cnt[c.item_start] > 0
        up = c.item_usage[c.item_offset[:-1] + y[c.item_node]] > \
            c.item_usage[c.item_offset[:-1] + x[c.item_node]]  # fmt: skip
        bad = np.unique(c.item_node[hit & up])
        if not len(bad):
            return x.copy()
        y[bad] = x[bad]
    return x.copy()
