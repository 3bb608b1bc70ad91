"""A portfolio of searches in forked processes that share their incumbent.

Each process runs one search (:mod:`.primal`) with its own seed, hence its own penalty schedule
(even seeds mostly cheap forest rounds, odd ones more whole solves) and random moves. The best
plan any of them has found lives in shared memory (:class:`Incumbent`): a search publishes each
plan that beats it, and takes it over when it restarts from its best (before a whole solve or a
run of window moves), so every process spends its expensive moves near the best plan known.
The cheapest plan returned wins; a process late past the deadline is stopped and ignored.

Examples
--------
>>> inc = Incumbent(3)
>>> inc.offer(np.array([1, 0, 2]), 7.0); inc.offer(np.array([0, 0, 0]), 9.0)
>>> inc.take(8.0)
(7.0, array([1, 0, 2]))
>>> inc.take(7.0) is None
True
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Sequence

import numpy as np

from tacopt.partitioner.errors import send_result, worker_result


class Incumbent:
    """The best plan (one strategy per node) and its value, shared by forked processes."""

    def __init__(self, n_nodes: int) -> None:
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp
        self._lock = ctx.Lock()
        self._value = ctx.RawValue("d", np.inf)
        self._choice = np.frombuffer(ctx.RawArray("q", max(n_nodes, 1)), dtype=np.int64)

    @property
    def value(self) -> float:
        return float(self._value.value)

    def offer(self, x: np.ndarray, value: float) -> None:
        """Keep ``x`` if its ``value`` beats the incumbent's."""
        if value >= self._value.value:
            return
        with self._lock:
            if value < self._value.value:
                self._choice[: len(x)] = x
                self._value.value = value

    def take(self, than: float) -> tuple[float, np.ndarray] | None:
        """The incumbent's value and a copy of its plan if it beats ``than``, else None."""
        if self._value.value >= than:
            return None
        with self._lock:
            return float(self._value.value), self._choice.copy()


def run_portfolio(
    one: Callable[[int, Incumbent], np.ndarray | None],
    seeds: Sequence[int],
    n_nodes: int,
    deadline: float,
    key: Callable[[np.ndarray], float],
) -> np.ndarray | None:
    """``one(seed, incumbent)`` here for ``seeds[0]`` and in a forked process for each other seed,
    all sharing one :class:`Incumbent`; the result of least ``key`` (None if none found)."""
    shared = Incumbent(n_nodes)
    ctx = mp.get_context("fork")
    kids = []
    for seed in seeds[1:]:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(one, seed, shared, send))
        proc.start()
        send.close()
        kids.append((proc, recv))
    found = [one(seeds[0], shared)]
    for proc, recv in kids:
        try:
            if recv.poll(max(0.0, deadline - time.monotonic()) + 0.2):
                found.append(worker_result(recv.recv()))
        except (EOFError, OSError):
            pass
        finally:
            if proc.is_alive():
                proc.kill()
            proc.join()
            recv.close()
    got = shared.take(np.inf)  # a process stopped late may have published a better plan
    plans = [x for x in found if x is not None] + ([got[1]] if got is not None else [])
    return min(plans, key=key) if plans else None


def _child(one, seed, shared, send) -> None:
    try:
        send_result(send, lambda: one(seed, shared))
    finally:
        send.close()
