"""The proof on small problems: toulbar2 and the integer program at once, one process each.

The two proof engines of a small reduced problem (:mod:`.pairwise`) suit different instances:
toulbar2 over every node (:func:`~.windows.prove_whole`, from a plan of the primal search)
proved most memory-tight instances of 60-200 nodes in 0.1-10 s of CPU, the integer program
(:func:`~.pairwise.solve_mip`, its memory rows up front) proved the contest's A and its dual
bound was the closest on the ones neither proved. Run one after the other, each had a share of
the time; here they run at the same time, each in a forked process of its own (one core each
on two cores). The first to prove wins and the other is stopped; without a proof each engine's
plan and lower bound count (:func:`race`). An engine that fails or is stopped at the deadline
leaves the other's answer.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError, send_result, worker_result
from tacopt.partitioner.pickers import search, windows
from tacopt.partitioner.pickers.reduce import Compact

#: Seconds kept back from an engine's own limit for sending its answer before the deadline.
SEND_S = 1.0


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


Engine = Callable[[Compact, search.Neighbourhood, np.ndarray, float], Attempt]


def toulbar2(c: Compact, nb: search.Neighbourhood, x: np.ndarray, seconds: float) -> Attempt:
    """toulbar2 over every node from ``x`` (which fits) for ``seconds`` of CPU
    (:func:`~.windows.prove_whole`); its bound is toulbar2's global dual bound."""
    t = time.monotonic()
    y, proven, bound = windows.prove_whole(c, nb, x, max(1, int(seconds)))
    return Attempt("toulbar2", y, bound, proven, time.monotonic() - t)


def race(
    c: Compact,
    nb: search.Neighbourhood,
    x: np.ndarray,
    deadline: float,
    engines: tuple[Engine, ...],
) -> list[Attempt]:
    """Every engine on ``c`` from ``x`` (which fits) at once, each in a forked process, until
    one proves optimality (the others are then stopped) or ``deadline`` (monotonic seconds).

    Parameters
    ----------
    c, nb
        The reduced problem and its neighbourhood (:func:`~.search.neighbourhood`).
    x
        A plan within the limit: the engines' start (toulbar2 prunes by its cost).
    deadline
        When every engine still running is stopped; each gets its own limit :data:`SEND_S`
        before it.
    engines
        Functions ``(c, nb, x, seconds) -> Attempt`` (:func:`toulbar2`; the integer program:
        :func:`~.pairwise.integer_program`), in the order ties are broken (two proofs in one poll).

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
    >>> out = race(c, nb, search.lowest_usage(c, nb), time.monotonic() + 20.0, (toulbar2,))
    >>> [(a.engine, a.proven) for a in out]
    [('toulbar2', True)]
    """
    t0 = time.monotonic()
    seconds = max(0.1, deadline - t0 - SEND_S)
    ctx = mp.get_context("fork")
    running: dict[Any, tuple[int, Any]] = {}
    out: list[Attempt | None] = [None] * len(engines)
    for i, engine in enumerate(engines):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(engine, (c, nb, x, seconds), send), daemon=True)
        proc.start()
        send.close()
        running[receive] = (i, proc)
    try:
        while running and not any(a is not None and a.proven for a in out):
            ready = wait(list(running), timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                break  # the deadline
            for end in sorted(ready, key=lambda r: running[r][0]):  # ties: engine order
                i, proc = running.pop(end)
                out[i] = _received(engines[i], end, time.monotonic() - t0)
                end.close()  # type: ignore[union-attr]
                proc.join()
    finally:
        for end, (i, proc) in running.items():  # the losers and the ones out of time
            proc.kill()
            proc.join()
            end.close()
            out[i] = Attempt(_name(engines[i]), None, -math.inf, False, time.monotonic() - t0,
                             "stopped")  # fmt: skip
    return [a for a in out if a is not None]


def _name(engine: Engine) -> str:
    return engine.__name__.replace("_", " ")  # toulbar2, integer program


def _received(engine: Engine, receive: Any, seconds: float) -> Attempt:
    """The engine's attempt from its pipe; a failure (or a process that died without sending)
    becomes an attempt with nothing, so the other engine's answer stands."""
    try:
        return worker_result(receive.recv())
    except PickerError as exc:
        return Attempt(_name(engine), None, -math.inf, False, seconds, f"failed: {exc}")
    except (EOFError, OSError):
        return Attempt(_name(engine), None, -math.inf, False, seconds, "failed: no answer")


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
