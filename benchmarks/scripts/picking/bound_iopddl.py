"""Lower bounds of IOPDDL instances for a study: the bounds stage alone, for as long as asked.

The picker computes its bound beside the search, for a share of the contest's limit. Here the
bounds stage (:func:`~tacopt.partitioner.pickers.bounds.diffusion_bound`: the local polytope by
min-sum diffusion, with the usage limit as a Lagrangian over the maximal sets of concurrently
live nodes) has the whole time, on one core, priced toward the best known value; the edge-split
bound is printed beside it. Each line gives the bound, the gap of the best known value to it,
the seconds (fewer than the budget when the bound stalled first) and the load average::

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks bound_iopddl \\
        ../shared/iopddl/asplos-2025-iopddl-M.json.gz --seconds 60,300
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

from tacopt.benchmarks.scripts.picking.sweep_iopddl import (
    SweepError,
    best_known,
    instance_files,
    instance_name,
)
from tacopt.errors import print_error
from tacopt.partitioner.pickers.bounds import diffusion_bound, edge_split_bound
from tacopt.partitioner.pickers.reduce import Compact, reduce_problem
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import IopddlError, load_iopddl


def bound_lines(path: Path, seconds: Sequence[float], target: int | None) -> list[str]:
    """One printed line per budget in ``seconds`` (each a fresh run) for the instance ``path``."""
    reduced = reduce_problem(index_problem(load_iopddl(path)))
    name = instance_name(path)
    if not isinstance(reduced, Compact):
        return [f"{name}: infeasible ({reduced.reason})"]
    lines = [f"{name}: edge split {edge_split_bound(reduced):,.0f}"]
    print(lines[0], flush=True)
    for budget in seconds:
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        bound = diffusion_bound(reduced, t0 + budget, memory=True, target=target)
        took = time.monotonic() - t0
        gap = "-" if target is None else f"{100 * (target - bound) / target:.3f}%"
        lines.append(f"{name}: lagrangian {bound:,.0f}  gap to best known {gap}  "
                     f"{took:.0f} s  load {load:.2f}->{os.getloadavg()[0]:.2f}")  # fmt: skip
        print(lines[-1], flush=True)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="problem files or folders of them")
    parser.add_argument("--seconds", default="60", help="comma-separated budgets (a run each)")
    parser.add_argument("--best-known", type=Path,
                        help="Markdown with a 'best known now' table (default: README.md beside"
                             " the instances)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        files = [f for f in instance_files(args.paths) if f.name != "example.json"]
        budgets = [float(s) for s in args.seconds.split(",")]
        for path in files:
            known = best_known(args.best_known or path.parent / "README.md")
            bound_lines(path, budgets, known.get(instance_name(path)))
    except (SweepError, IopddlError, ValueError) as exc:
        return print_error("bound_iopddl", exc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
