"""The primal search on memory-tight instances, with and without window moves and sharing.

For each instance of a declared set (``contest_like.TIGHT_TUNING`` or ``TIGHT_HELD_OUT``, or
contest files), :func:`~tacopt.partitioner.pickers.primal.search` runs for ``--seconds`` on the
reduced problem with ``--threads`` processes, twice: as it is (window moves, a shared incumbent)
and without them (``WINDOW_SHARE = 0``, each process keeping its own best: the search before
issue 44). One line per run: the objective, the seconds and the load average::

    flock -s /tmp/tacopt-timing.lock python -m tacopt.benchmarks bench_tight --set held_out \\
        --seconds 55 --threads 2

``--write DIR`` instead writes the set's instances into ``DIR`` as contest files
(``tight_<nodes>_<seed>.json.gz``), for the whole command (``bench_iopddl_front DIR``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from tacopt.io import atomic_write
from tacopt.partitioner.pickers import primal, search
from tacopt.partitioner.pickers.portfolio import Incumbent
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import problem_from_dict
from tacopt.partitioner.problem.contest_like import (
    TIGHT_HELD_OUT,
    TIGHT_RACE,
    TIGHT_SMALL,
    TIGHT_TUNING,
    memory_tight,
)

SETS = {"tuning": TIGHT_TUNING, "held_out": TIGHT_HELD_OUT, "small": TIGHT_SMALL,
        "race": TIGHT_RACE}  # fmt: skip


def run(c: Compact, seconds: float, threads: int, seed: int, before: bool) -> float:
    """The objective the search reaches (``before``: no window moves, no shared incumbent)."""
    share, take = primal.WINDOW_SHARE, Incumbent.take
    try:
        if before:
            primal.WINDOW_SHARE = 0.0
            Incumbent.take = lambda self, than: None  # type: ignore[method-assign]
        x = primal.search(c, time.monotonic() + seconds, seed=seed, threads=threads)
    finally:
        primal.WINDOW_SHARE, Incumbent.take = share, take  # type: ignore[method-assign]
    return float("nan") if x is None else search.objective(c, x)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="held_out")
    parser.add_argument("--max-nodes", type=int, default=1000, help="skip larger instances")
    parser.add_argument("--seconds", type=float, default=55.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", type=Path, help="write the set's files here and stop")
    args = parser.parse_args(argv)
    for n, seed, share, mean_k in SETS[args.set]:
        if n > args.max_nodes:
            continue
        data = memory_tight(n, seed, min_peak_share=share, mean_strategies=mean_k)
        if args.write is not None:
            args.write.mkdir(parents=True, exist_ok=True)
            path = args.write / f"{data['problem']['name']}.json.gz"
            atomic_write(path, gzip.compress(json.dumps(data).encode(), mtime=0))
            print(path, flush=True)
            continue
        c = reduce_problem(index_problem(problem_from_dict(data)))
        if not isinstance(c, Compact):
            print(f"{data['problem']['name']}: infeasible")
            continue
        for before in (False, True):
            load = os.getloadavg()[0]
            value = run(c, args.seconds, args.threads, args.seed, before)
            print(json.dumps({"instance": data["problem"]["name"], "search": "before" if before
                              else "now", "objective": value, "seconds": args.seconds,
                              "threads": args.threads, "load": [load, os.getloadavg()[0]]}),
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
