"""The proof race on mid-sized problems against the large path alone: the exact picker's plan,
bound and proof per instance, with ``pairwise.RACE_ENTRIES`` as it is ("race": the race for
``RACE_SHARE`` of the time, then the large path from its plan) and at 0 ("large": the primal
search and the Lagrangian bound for the whole time). One line per run::

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks bench_race FILES \\
        --time-limit 60 --jobs 2 --arms large --out DIR

Each run is ``tacopt pick FILE --picker exact --time-limit T --jobs N --json`` called in this
process (the constant is set between runs), the load average before and after beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from tacopt.benchmarks.scripts.picking.sweep_iopddl import write_records
from tacopt.errors import TacoptError, print_error
from tacopt.io import check_output_folder
from tacopt.partitioner.cli import main as tacopt_main
from tacopt.partitioner.pickers import pairwise

ARMS = {"race": pairwise.RACE_ENTRIES, "large": 0}


def run(path: Path, arm: str, time_limit: float, jobs: int) -> dict:
    """One whole pick of ``path`` with the arm's ``RACE_ENTRIES``: its record."""
    kept = pairwise.RACE_ENTRIES
    out = io.StringIO()
    load = os.getloadavg()[0]
    t = time.monotonic()
    try:
        pairwise.RACE_ENTRIES = ARMS[arm]
        with contextlib.redirect_stdout(out):
            tacopt_main(["pick", str(path), "--picker", "exact", "--time-limit", str(time_limit),
                         "--jobs", str(jobs), "--json"])  # fmt: skip
    finally:
        pairwise.RACE_ENTRIES = kept
    wall = time.monotonic() - t
    d = json.loads(out.getvalue())
    p = d["params"]
    return {"instance": path.name.split(".")[0], "arm": arm, "status": d["status"],
            "objective": d["objective"], "bound": d["bound"], "gap": d["gap"],
            "bound_by": p.get("bound_by"), "proof_from": p.get("proof_from"),
            "proof": p.get("proof"), "wall_s": round(wall, 2), "time_limit_s": time_limit,
            "jobs": jobs, "load": [load, os.getloadavg()[0]], "cores": os.cpu_count()}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--arms", default="race,large", help="comma-separated: race, large")
    parser.add_argument("--out", help="write results.jsonl.gz into this folder")
    args = parser.parse_args(argv)
    arms = args.arms.split(",")
    if any(a not in ARMS for a in arms):
        parser.error(f"--arms: one of {', '.join(ARMS)}")
    try:
        out = check_output_folder(args.out, what="--out") if args.out else None
    except TacoptError as exc:
        return print_error("bench_race", exc)
    records = []
    for path in args.files:
        for arm in arms:
            records.append(run(path, arm, args.time_limit, args.jobs))
            print(json.dumps(records[-1]), flush=True)
    if out is not None:
        write_records(out, "results.jsonl.gz", records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
