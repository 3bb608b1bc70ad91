"""The IOPDDL contest instances: every picker on a folder of ``.json`` / ``.json.gz`` problems.

Each instance reads into the pick problem (:mod:`tacopt.partitioner.problem.contest`) and runs every
picker with the contest's time limit (A 60 s, B 60 s, G 120 s, M 180 s, S 240 s; 60 s for
others) unless one is given; the time to read the file comes off it. Every plan is checked by
:func:`tacopt.partitioner.plan.validate_plan` (the contest's rules: exact integer cost, usage
within the limit at every step); the table gives the score, the bound, the gap, the status,
the time and the ratio to the best score known from the contest and to XLA's.

Run it under the timing lock (the figures are times)::

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks bench_iopddl ../shared/iopddl \\
        --out results/iopddl

``--read N`` only reads each instance N times and prints what reading costs before a picker
starts (reading, decoding and checking the file into the pick problem, then its index), with
the spread over the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tacopt.errors import print_error
from tacopt.io import atomic_write, check_output_folder
from tacopt.partitioner.cli.pick_run import contest_time_limit
from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.pickers import get_picker, pick, picker_options
from tacopt.partitioner.plan import NoPlanError, validate_plan
from tacopt.partitioner.problem import index_problem
from tacopt.partitioner.problem.contest import IopddlError, load_iopddl

#: Lowest valid score of the contest's final results, and XLA's (the contest's XLA row).
BEST_KNOWN = {"A": 6_548_641_531, "B": 532_843, "G": 217_039, "M": 49_928_460_991,
              "S": 1_534_613_444}  # fmt: skip
XLA = {"A": 13_214_846_074, "B": 990_205, "G": 1_264_777}


def instances(folder: str | os.PathLike[str]) -> list[Path]:
    """The problem files of ``folder`` (``*.json``, ``*.json.gz``), sorted by name."""
    root = Path(folder)
    if not root.is_dir():
        raise IopddlError(f"{root}: not a folder of contest problems")
    found = sorted(p for p in root.iterdir() if p.name.endswith((".json", ".json.gz")))
    if not found:
        raise IopddlError(f"{root}: no .json or .json.gz contest problems in it")
    return found


def _letter(name: str) -> str | None:
    tail = name.removesuffix(".gz").removesuffix(".json").rsplit("-", 1)[-1]
    return tail if tail in BEST_KNOWN else None


def run_iopddl_bench(
    folder: str | os.PathLike[str],
    pickers: Sequence[str] = ("exact",),
    time_limit: float | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Run ``pickers`` on every instance of ``folder``; write ``results.jsonl`` and
    ``report.md`` to ``out_dir`` (if given) and return the records.

    ``time_limit`` (seconds) applies to every instance; None takes the contest's per instance.
    """
    for name in pickers:
        get_picker(name)  # an unknown name fails before any instance is read
    out = check_output_folder(out_dir, what="--out") if out_dir is not None else None
    records: list[dict[str, Any]] = []
    for path in instances(folder):
        t0 = time.monotonic()
        problem = load_iopddl(path)
        load_s = time.monotonic() - t0
        limit = time_limit or contest_time_limit(path)
        for name in pickers:
            # the contest's limit covers the whole run: reading the file comes off it
            options: dict[str, Any] = {}
            if {"time_limit_s", "*"} & picker_options(name):
                options["time_limit_s"] = max(limit - load_s, 1.0)
            if {"seed", "*"} & picker_options(name):
                options["seed"] = seed
            started = time.monotonic()
            try:
                plan = pick(problem, name, **options)
                validate_plan(problem, plan)  # the contest's rules, once more, independently
                rec: dict[str, Any] = {"picker": name, "status": plan.status,
                                       "objective": plan.objective, "bound": plan.bound,
                                       "gap": plan.gap, "seconds": round(plan.seconds, 3),
                                       "params": dict(plan.params)}  # fmt: skip
            except (NoPlanError, PickerError) as exc:
                rec = {"picker": name, "status": getattr(exc, "status", "ERROR"),
                       "objective": None, "bound": None, "gap": None,
                       "seconds": round(time.monotonic() - started, 3), "reason": str(exc)}
            letter = _letter(path.name)
            best, xla = BEST_KNOWN.get(letter or ""), XLA.get(letter or "")
            cost = rec["objective"]
            rec.update(
                instance=path.name.removesuffix(".gz").removesuffix(".json"), file=path.name,
                nodes=len(problem.units), edges=len(problem.pairwise), load_s=round(load_s, 3),
                time_limit_s=limit, total_s=round(load_s + rec["seconds"], 3),
                best_known=best, xla=xla,
                ratio_best=None if best is None or cost is None else cost / best,
                ratio_xla=None if xla is None or cost is None else cost / xla,
                peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                loadavg=os.getloadavg()[0],
            )  # fmt: skip
            records.append(rec)
            print(table([rec], header=len(records) == 1), flush=True)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "results.jsonl", "".join(json.dumps(r) + "\n" for r in records))
        atomic_write(out / "report.md", report(records))
    return records


_COLUMNS = ("instance", "nodes", "picker", "score", "bound", "gap", "status", "time",
            "load", "vs best", "vs XLA")  # fmt: skip


def _row(r: dict[str, Any]) -> list[str]:
    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:,.0f}"

    def ratio(v: float | None) -> str:
        return "-" if v is None else f"{v:.5f}"

    gap = r.get("gap")
    return [r["instance"], f"{r['nodes']:,}", r["picker"], num(r["objective"]), num(r["bound"]),
            "-" if gap is None else f"{100 * gap:.3g}%", r["status"], f"{r['seconds']:.1f}s",
            f"{r['load_s']:.1f}s", ratio(r["ratio_best"]), ratio(r["ratio_xla"])]  # fmt: skip


def table(records: Sequence[dict[str, Any]], header: bool = True) -> str:
    """Plain-text rows of the records (with the header line if asked)."""
    rows = ([list(_COLUMNS)] if header else []) + [_row(r) for r in records]
    return "\n".join("  ".join(f"{c:>14}" if i else f"{c:<22}" for i, c in enumerate(row))
                     for row in rows)  # fmt: skip


def report(records: Sequence[dict[str, Any]]) -> str:
    """A Markdown report: one table row per instance and picker."""
    lines = ["# IOPDDL contest instances", "",
             "Score: the contest's cost of the solution (checked by the contest's rules); "
             "bound: a proven lower bound; vs best / vs XLA: score divided by the best valid "
             "score of the contest and by XLA's (below 1: better).", "",
             "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]  # fmt: skip
    lines += ["| " + " | ".join(_row(r)) + " |" for r in records]
    loads = sorted({f"{r['loadavg']:.2f}" for r in records})
    lines += ["", f"Load average (1 min) at each row: {', '.join(loads)}."]
    return "\n".join(lines) + "\n"


def read_times(folder: str | os.PathLike[str], runs: int) -> list[dict[str, Any]]:
    """Seconds to read each instance (``load_iopddl``) and to index it, over ``runs`` runs."""
    rows = []
    for path in instances(folder):
        load, index = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            problem = load_iopddl(path)
            t1 = time.perf_counter()
            index_problem(problem)
            load.append(t1 - t0)
            index.append(time.perf_counter() - t1)
        total = sorted(a + b for a, b in zip(load, index, strict=True))
        rows.append({"instance": path.name, "units": len(problem.units), "load_s": sorted(load),
                     "index_s": sorted(index), "total_s": total,
                     "loadavg": os.getloadavg()[0]})  # fmt: skip
        print(f"{path.name:<34} {len(problem.units):>6} units  read {min(load):6.2f} s  "
              f"index {min(index):5.2f} s  total median {total[len(total) // 2]:6.2f} s "
              f"(min {total[0]:.2f}, max {total[-1]:.2f})  load {rows[-1]['loadavg']:.1f}",
              flush=True)  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", help="folder of contest problems (.json, .json.gz)")
    parser.add_argument("--pickers", default="exact", help="comma-separated: exact,greedy,...")
    parser.add_argument("--time-limit", type=float, help="seconds per instance (default: contest)")
    parser.add_argument("--out", help="write results.jsonl and report.md here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--read", type=int, metavar="N",
                        help="only read each instance N times and print the times")
    args = parser.parse_args(argv)
    try:
        if args.read:
            read_times(args.folder, args.read)
            return 0
        run_iopddl_bench(args.folder, tuple(args.pickers.split(",")), args.time_limit, args.out,
                         seed=args.seed)  # fmt: skip
    except (IopddlError, PickerError) as exc:
        return print_error("bench_iopddl", exc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
