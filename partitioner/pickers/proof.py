"""The proof on small problems: toulbar2 and the integer program at once, one process each.

The two proof engines of a small reduced problem (:mod:`.pairwise`) suit different instances:
toulbar2 over every node (:func:`~.windows.prove_whole`, from a plan of the primal search)
proved most memory-tight instances of 60-200 nodes in 0.1-10 s of CPU, the integer program
(:func:`~.pairwise.solve_mip`, its memory rows up front) proved the contest's A and its dual
bound was the closest on the ones neither proved. Run one after the other, each had a share of
the time; here they run at the same time, each in a forked process of its own (one core each
on two cores). The first to prove wins and the other is stopped; without a proof each engine's
plan and lower bound count (:func:`race`). toulbar2 is stopped at its end of time by the signal
of its own CPU-time limit and returns its best plan and bound at once (its CPU-time limit alone
ran past a 60 s deadline at load 5-6 on 2 cores, and killing it lost both). An engine that fails
or is stopped at the deadline leaves the other's answer.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError, send_result, worker_result
from tacopt.partitioner.pickers import search, windows
from tacopt.partitioner.pickers.reduce import Compact

#: The share of the race's time (at least :data:`SEND_S` seconds) kept back from the engines'
#: own limits for sending their answers before the deadline (HiGHS may overrun its limit).
SEND_SHARE = 0.08
SEND_S = 1.5


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one proof engine returned: its best plan within the limit (None: none better than
    the plan it started from, or none at all), a lower bound of the problem's objective
    (``-inf``: none), whether it proved its plan (or the starting plan) optimal, its wall
    seconds, and a note (``"stopped"``, ``"failed: ..."`` or the solver's status)."""

    engine: str
    x: np.ndarray | None
    bound: float
    proven: bool
    seconds: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class Engine:
    """A proof engine: its name, ``run(c, nb, x, seconds) -> Attempt``, and the signal that
    makes it return what it has at once (None: it keeps its own limit)."""

    name: str
    run: Callable[[Compact, search.Neighbourhood, np.ndarray, float], Attempt]
    stop_signal: int | None = None


class _Stop(Exception):
    """The stop signal came before toulbar2's search began (while its network was built)."""


def _stop(signum: int, frame: Any) -> None:
    raise _Stop


def _toulbar2(c: Compact, nb: search.Neighbourhood, x: np.ndarray, seconds: float) -> Attempt:
    t = time.monotonic()
    # Until toulbar2's search sets its own handler, the signal's default would end the process
    # (a 300-node problem's network took 13 s at load 6): stop here with nothing instead.
    signal.signal(signal.SIGVTALRM, _stop)
    try:
        y, proven, bound = windows.prove_whole(c, nb, x, max(1, int(seconds)))
    except _Stop:
        return Attempt("toulbar2", None, -math.inf, False, time.monotonic() - t,
                       "stopped before its search")  # fmt: skip
    return Attempt("toulbar2", y, bound, proven, time.monotonic() - t)


#: toulbar2 over every node from the plan (:func:`~.windows.prove_whole`), its bound toulbar2's
#: global dual bound; SIGVTALRM is its CPU-time limit's signal.
TOULBAR2 = Engine("toulbar2", _toulbar2, signal.SIGVTALRM)


def race(
    c: Compact,
    nb: search.Neighbourhood,
    x: np.ndarray,
    deadline: float,
    engines: tuple[Engine, ...],
) -> list[Attempt]:
    """Every engine on ``c`` from ``x`` (which fits) at once, each in a forked process, until
    one proves optimality (the others are then stopped) or ``deadline`` (monotonic seconds).
    At their end of time (:data:`SEND_SHARE` before the deadline) engines with a stop signal
    get it; what they send after it is not a proof (it may be cut short), but its plan and
    bound count.

    Parameters
    ----------
    c, nb
        The reduced problem and its neighbourhood (:func:`~.search.neighbourhood`).
    x
        A plan within the limit: the engines' start (toulbar2 prunes by its cost).
    deadline
        When every engine still running is killed.
    engines
        :data:`TOULBAR2`, the integer program (:data:`~.pairwise.INTEGER_PROGRAM`), ..., in the
        order ties are broken (two proofs in one poll).

    Returns
    -------
    list of Attempt
        One per engine, in the order of ``engines``: what it returned, or an attempt with no
        plan and no bound noted ``"stopped"`` (stopped at the deadline or after another's
        proof) or ``"failed: ..."`` (its error on one line).

    Examples
    --------
    >>> from tacopt.partitioner.problem.contest_like import memory_tight
    >>> from tacopt.partitioner.problem.contest import problem_from_dict
    >>> from tacopt.partitioner.problem import index_problem
    >>> from tacopt.partitioner.pickers.reduce import reduce_problem
    >>> c = reduce_problem(index_problem(problem_from_dict(memory_tight(12, seed=1))))
    >>> nb = search.neighbourhood(c)
    >>> out = race(c, nb, search.lowest_usage(c, nb), time.monotonic() + 20.0, (TOULBAR2,))
    >>> [(a.engine, a.proven) for a in out]
    [('toulbar2', True)]
    """
    t0 = time.monotonic()
    end = deadline - max(SEND_S, SEND_SHARE * (deadline - t0))
    ctx = mp.get_context("fork")
    running: dict[Any, tuple[int, Any]] = {}
    out: list[Attempt | None] = [None] * len(engines)
    stopped: set[int] = set()  # engines sent their stop signal
    signalled = False
    for i, engine in enumerate(engines):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(engine.run, (c, nb, x, max(0.1, end - t0)), send),
                           daemon=True)  # fmt: skip
        proc.start()
        send.close()
        running[receive] = (i, proc)
    try:
        while running and not any(a is not None and a.proven for a in out):
            now = time.monotonic()
            if now >= end and not signalled:
                signalled = True
                for i, proc in running.values():
                    signum = engines[i].stop_signal
                    if signum is not None:
                        os.kill(proc.pid, signum)
                        stopped.add(i)
            wake = end if now < end else deadline
            ready = wait(list(running), timeout=max(0.0, wake - now))
            if not ready and now >= end:
                break  # the deadline
            for conn in sorted(ready, key=lambda r: running[r][0]):  # ties: engine order
                i, proc = running.pop(conn)
                out[i] = _received(engines[i].name, conn, time.monotonic() - t0,
                                   i in stopped)  # fmt: skip
                conn.close()  # type: ignore[union-attr]
                proc.join()
    finally:
        for conn, (i, proc) in running.items():  # the losers and the ones out of time
            proc.kill()
            proc.join()
            conn.close()
            out[i] = Attempt(engines[i].name, None, -math.inf, False, time.monotonic() - t0,
                             "stopped")  # fmt: skip
    return [a for a in out if a is not None]


def _received(name: str, receive: Any, seconds: float, cut_short: bool) -> Attempt:
    """The engine's attempt from its pipe (``cut_short``: sent after its stop signal, so not
    a proof); a failure, or a process that died without sending, becomes an attempt with
    nothing, so the other engine's answer stands."""
    try:
        got = worker_result(receive.recv())
    except PickerError as exc:
        return Attempt(name, None, -math.inf, False, seconds, f"failed: {exc}")
    except (EOFError, OSError):
        return Attempt(name, None, -math.inf, False, seconds, "failed: no answer")
    if cut_short:
        return Attempt(got.engine, got.x, got.bound, False, got.seconds, "stopped at its end")
    return got


def _child(engine: Engine, args: tuple, send: Any) -> None:
    try:
        send_result(send, lambda: engine(*args))
    finally:
        send.close()


def best_of(c: Compact, x: np.ndarray, attempts: list[Attempt]) -> tuple[np.ndarray, float, bool]:
    """The cheapest plan among ``x`` and the attempts' (ties: ``x``, then engine order), the
    best lower bound (its cost when proven; ``-inf``: none), and whether it is proven optimal:
    an engine proved it, or a bound reaches its cost."""
    best, value = x, float(search.objective(c, x))
    for a in attempts:
        if a.x is not None and search.objective(c, a.x) < value:
            best, value = a.x, float(search.objective(c, a.x))
    bound = max([a.bound for a in attempts] + [-math.inf])
    proven = any(a.proven for a in attempts) or bound >= value - 1e-6 * max(1.0, abs(value))
    return best, (value if proven else min(bound, value)), proven
