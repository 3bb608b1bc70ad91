"""The IOPDDL front: the whole ``tacopt pick`` command per instance, against the best known values.

Each instance runs as its own process, one after the other, exactly as a user runs it
(:func:`~tacopt.benchmarks.scripts.picking.sweep_iopddl.run_one`)::

    tacopt pick FILE --picker exact --time-limit T --seed S --json --solution OUT.json [EXTRA]

with the contest's limit for the shared instances (A 60 s, B 60 s, G 120 s, M 180 s, S 240 s)
unless ``--time-limit`` is given. The wall time is the whole command's, start-up and reading
included; the solution file is scored again by the one checker. A row gives the score, its
ratio to the best known value (the "best known now" table of ``--best-known``, by default the
instances' ``README.md``), the bound the command reports and the gap to it, the stage that
gave the bound (else the one that answered), the wall time against the limit, the load average
before and after, the CPU seconds the command and its processes got (on a busy machine a run
may get well under its cores for its wall time), and the cores.
``--jobs N`` (or any ``--extra`` options) are passed to the command; ``--jobs 1,2`` runs each
instance at both, one after the other, for the portfolio's ratio at equal wall-clock time.

Run it under the timing lock, one set of instances per hold::

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks bench_iopddl_front \\
        ../shared/iopddl --out benchmarks/results/iopddl_front/shared
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tacopt.benchmarks.scripts.picking.sweep_iopddl import (
    SweepError,
    best_known,
    instance_files,
    run_one,
    write_records,
)
from tacopt.errors import print_error
from tacopt.io import check_output_folder
from tacopt.partitioner.cli.pick_run import contest_time_limit

HEADER = (f"{'instance':<22} {'jobs':>4} {'status':>9} {'score':>16} {'vs best':>8} "
          f"{'bound':>16} {'gap':>8} {'bound by':>16} {'wall/limit s':>13} {'cpu s':>6} "
          f"{'load':>11} cores")


def gap_of(score: float | None, bound: float | None) -> float | None:
    """``(score - bound) / score`` (None without both; 0 when the score is 0)."""
    if score is None or bound is None or not math.isfinite(bound):
        return None
    return 0.0 if score == 0 else max(score - bound, 0.0) / abs(score)


def row(r: dict[str, Any]) -> str:
    """One printed line of a record."""

    def num(v: Any) -> str:
        return "-" if v is None else f"{v:,.0f}"

    ratio, gap = r.get("ratio_best"), r.get("gap")
    return (f"{r['instance']:<22} {str(r.get('jobs') or '-'):>4} {r['status']:>9} "
            f"{num(r['score']):>16} {'-' if ratio is None else f'{ratio:.5f}':>8} "
            f"{num(r['bound']):>16} {'-' if gap is None else f'{100 * gap:.3f}%':>8} "
            f"{str(r.get('bound_by') or r.get('stage')):>16} "
            f"{r['wall_s']:>7.1f}/{r['time_limit_s']:<5g} {num(r.get('cpu_s')):>6} "
            f"{r['load_before']:>5.2f}->{r['load_after']:<5.2f} {r['cores']:>3}"
            f"{'' if r['valid'] else '  NOT VALID: ' + str(r.get('reason'))}")  # fmt: skip


def front(
    files: Sequence[Path],
    seeds: Sequence[int],
    jobs: Sequence[int | None],
    known: dict[str, int],
    time_limit: float | None = None,
    extra: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every instance x seed x ``--jobs`` value, one run after the other; the records."""
    records = []
    for path in files:
        limit = time_limit or contest_time_limit(path)
        for n in jobs:
            for seed in seeds:
                more = [*extra, *(["--jobs", str(n)] if n is not None else [])]
                rec = run_one(str(path), seed, limit, "exact", more)
                best = known.get(rec["instance"])
                score = rec["score"] if rec["valid"] else None
                rec.update(jobs=n, best_known=best, gap=gap_of(score, rec["bound"]),
                           ratio_best=None if best is None or score is None else score / best)
                records.append(rec)
                print(row(rec), flush=True)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="problem files or folders of them")
    parser.add_argument("--time-limit", type=float,
                        help="seconds per instance (default: the contest's; 60 s for others)")
    parser.add_argument("--jobs", help="comma-separated values of tacopt pick --jobs")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (a run per seed)")
    parser.add_argument("--extra", default="", help="more tacopt pick options, space-separated")
    parser.add_argument("--best-known", type=Path,
                        help="Markdown with a 'best known now' table (default: README.md beside"
                             " the instances)")  # fmt: skip
    parser.add_argument("--out", help="write results.jsonl.gz into this folder")
    args = parser.parse_args(argv)
    try:
        files = [f for f in instance_files(args.paths) if f.name != "example.json"]
        out = check_output_folder(args.out, what="--out") if args.out else None
        seeds = [int(s) for s in args.seeds.split(",")]
        jobs = [int(j) for j in args.jobs.split(",")] if args.jobs else [None]
    except (SweepError, ValueError) as exc:
        return print_error("bench_iopddl_front", exc)
    if not files:
        return print_error("bench_iopddl_front", "no instances besides example.json")
    readme = args.best_known or files[0].parent / "README.md"
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.uname().nodename},"
          f" best known from {readme}")  # fmt: skip
    print(HEADER, flush=True)
    records = front(files, seeds, jobs, best_known(readme), args.time_limit, args.extra.split())
    if out is not None:
        write_records(out, "results.jsonl.gz", records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
