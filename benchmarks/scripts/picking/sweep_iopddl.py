"""A sweep of IOPDDL instances x seeds x time limits as one command, on Dask.

    python -m tacopt.benchmarks sweep_iopddl ../shared/iopddl --seeds 0,1,2 \\
        --time-limits contest,30 --out sweep/
    ... --scheduler tcp://HOST:8786   # a running Dask cluster (every worker sees the same paths)
    ... --workers 2                   # a local cluster of 2 single-threaded worker processes

Each run is the whole command as a user runs it, in its own process on a Dask worker::

    tacopt pick FILE --picker exact --time-limit T --seed S --json --solution OUT.json

so the time limit counts start-up and reading. The worker scores the solution file again with
the one checker (:func:`~tacopt.partitioner.plan.evaluate` and
:func:`~tacopt.partitioner.plan.infeasibility`, on flat arrays: exact integer cost, no
forbidden pair, usage within the limit at every step). Locally one worker is the default: two
runs never share the cores, so each run's figures are its own (``--workers`` more for
throughput, not for figures).

Written into ``--out``:

- ``runs.jsonl.gz``: one record per run (instance, seed, limit, score, status, bound, wall
  time, load average, cores);
- ``results.csv``: the contest organisers' results format (asplos-contest/2025,
  ``misc/iopddl_final_results.csv``): a header ``TEAM #,A,B,...``, a row per configuration
  (one per seed and limit, and the best of the seeds per limit), a column per instance, each
  cell the score of a valid solution, empty when the run gave none;
- ``report.md``: per configuration and instance, the score against the best known value (the
  table "best known now" of ``--best-known``, by default the instances' ``README.md``), and the
  geometric mean of those ratios; each run's wall time against its limit.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import importlib
import io
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from tacopt.cli_options import at_least, names, seconds
from tacopt.errors import TacoptError, print_error
from tacopt.io import atomic_write, check_output_folder
from tacopt.partitioner.cli.pick_run import contest_time_limit
from tacopt.partitioner.plan import evaluate_index, infeasibility_of
from tacopt.partitioner.problem import PickProblem, ProblemIndex, index_problem
from tacopt.partitioner.problem.contest import IopddlError, load_iopddl, read_solution

#: The command as users run it (the installed script), else through this Python.
TACOPT = [shutil.which("tacopt") or sys.executable,
          *([] if shutil.which("tacopt") else ["-m", "tacopt.partitioner.cli"])]  # fmt: skip


class SweepError(TacoptError):
    """A sweep that cannot start: no instances, a bad limit, no cluster."""


def instance_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The contest problem files among ``paths`` (files, or folders of ``.json``/``.json.gz``)."""
    found: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            found += sorted(p for p in given.iterdir() if p.name.endswith((".json", ".json.gz")))
        elif given.is_file():
            found.append(given)
        else:
            raise SweepError(f"{given}: no such file or folder")
    if not found:
        raise SweepError(f"no .json or .json.gz contest problems in {', '.join(map(str, paths))}")
    return found


def instance_name(path: Path) -> str:
    """The column of an instance: the contest's letter (``asplos-2025-iopddl-B`` is ``B``), else
    the file's name without its suffixes."""
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    found = re.fullmatch(r"asplos-2025-iopddl-([A-Z])", stem)
    return found.group(1) if found else stem


def best_known(readme: Path | None) -> dict[str, int]:
    """The "best known now" column of the Markdown tables of ``readme``, by instance (first
    column); empty when there is no such file or column."""
    if readme is None or not readme.is_file():
        return {}
    values: dict[str, int] = {}
    column = None
    for line in readme.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if "|" in line else []
        if not cells:
            column = None
            continue
        if "best known now" in cells:
            column = cells.index("best known now")
            continue
        if column is not None and len(cells) > column:
            number = re.match(r"[\d,]+", cells[column])
            if number:
                values[cells[0]] = int(number.group(0).replace(",", ""))
    return values


def run_one(path: str, seed: int, limit_s: float, picker: str, extra: Sequence[str]) -> dict:
    """One run of the whole command, then its solution scored by the one checker (on a worker)."""
    with tempfile.TemporaryDirectory(prefix="tacopt-sweep-") as tmp:
        solution = Path(tmp) / "solution.json"
        cmd = [*TACOPT, "pick", path, "--picker", picker, "--time-limit", f"{limit_s:g}",
               "--seed", str(seed), "--json", "--solution", str(solution), *extra]  # fmt: skip
        load_before = os.getloadavg()[0]
        cpu_before = _children_cpu_s()
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall_s = time.monotonic() - t0
        # the CPU the command and its processes got: on a busy machine a run may get far less
        # than its cores for its wall time (S at --jobs 1 got 51 % of it under the lock, load 4-6)
        cpu_s = _children_cpu_s() - cpu_before
        record: dict[str, Any] = {
            "instance": instance_name(Path(path)), "file": Path(path).name, "picker": picker,
            "seed": seed, "time_limit_s": limit_s, "wall_s": round(wall_s, 2),
            "exit": done.returncode, "load_before": load_before, "cpu_s": round(cpu_s, 1),
            "load_after": os.getloadavg()[0], "cores": len(os.sched_getaffinity(0)),
            "extra": list(extra), "score": None, "valid": False,
        }  # fmt: skip
        try:
            reported = json.loads(done.stdout)
        except json.JSONDecodeError:
            reported = {}
        params = reported.get("params", {})
        record.update(status=reported.get("status", "ERROR"), bound=reported.get("bound"),
                      stage=params.get("stage"), bound_by=params.get("bound_by"),
                      joined_s=params.get("joined_s"))  # fmt: skip
        if done.returncode != 0 or not solution.exists():
            record["reason"] = (done.stderr.strip().splitlines() or ["no solution written"])[-1]
            return record
        problem, index = _problem(path)
        chosen = index.choice_start[:-1] + read_solution(solution, problem)
        broken = infeasibility_of(problem, index, chosen)
        record.update(score=evaluate_index(index, chosen).total, valid=broken is None,
                      reason=broken or "")  # fmt: skip
        return record


def _children_cpu_s() -> float:
    """User and system seconds of this process's ended children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@lru_cache(maxsize=4)
def _problem(path: str) -> tuple[PickProblem, ProblemIndex]:
    problem = load_iopddl(path)  # a worker scores every seed of an instance: read it once
    return problem, index_problem(problem)


def sweep(
    files: Sequence[Path],
    seeds: Sequence[int],
    limits: Sequence[str],
    *,
    picker: str = "exact",
    extra: Sequence[str] = (),
    scheduler: str | None = None,
    workers: int = 1,
) -> list[dict]:
    """Run every (instance, seed, limit) on Dask and return the records in a fixed order.

    ``limits`` are seconds or ``"contest"`` (the contest's limit of each instance). With
    ``scheduler`` the runs go to that cluster, else to a local one of ``workers`` processes of
    one thread each.
    """
    from dask.distributed import Client, LocalCluster  # only the sweep needs Dask (an extra)

    tasks = [(str(f), s, _limit(lim, f), lim) for f in files for lim in limits for s in seeds]
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)  # fmt: skip
    try:
        client = Client(scheduler or cluster, timeout=30)
    except OSError as exc:
        raise SweepError(f"cannot reach Dask scheduler {scheduler!r}: {exc}") from None
    # Run as a script (python -m tacopt.benchmarks sweep_iopddl) this module is __main__, which
    # workers cannot import: they get the function of the module under its importable name.
    runner = importlib.import_module(__spec__.name if __spec__ else __name__).run_one
    try:
        futures = [client.submit(runner, path, seed, limit_s, picker, tuple(extra), pure=False)
                   for path, seed, limit_s, _ in tasks]  # fmt: skip
        records = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    for record, (_, _, _, asked) in zip(records, tasks):
        record["limit"] = asked
    return records


def _limit(asked: str, path: Path) -> float:
    return contest_time_limit(path) if asked == "contest" else float(asked)


def results_csv(records: Sequence[dict]) -> str:
    """The organisers' format: ``TEAM #`` and a column per instance; a row per seed and limit,
    then the best valid score of the seeds per limit."""
    columns = list(dict.fromkeys(r["instance"] for r in records))
    rows: dict[str, dict[str, int]] = {}
    for r in records:
        picker, limit = r["picker"], r["limit"]
        for name in (f"tacopt-{picker}-{limit}-seed{r['seed']}", f"tacopt-{picker}-{limit}-best"):
            cells = rows.setdefault(name, {})
            if r["valid"] and (r["instance"] not in cells or r["score"] < cells[r["instance"]]):
                cells[r["instance"]] = r["score"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["TEAM #", *columns])
    configs = list(dict.fromkeys(name.rsplit("-", 1)[0] for name in rows))
    for name in sorted(rows, key=lambda n: (configs.index(n.rsplit("-", 1)[0]),
                                            n.endswith("-best"))):  # fmt: skip
        writer.writerow([name, *(rows[name].get(c, "") for c in columns)])
    return out.getvalue()


def report(records: Sequence[dict], known: dict[str, int], source: str) -> str:
    """Per configuration: each instance's score over the best known, their geometric mean, and
    every run's wall time against its limit."""
    table = list(csv.reader(io.StringIO(results_csv(records))))
    columns = table[0][1:]
    lines = [f"# IOPDDL sweep ({len(records)} runs)", "",
             f"Score / best known ({source}; - where none is known or no valid solution).", "",
             "| configuration | " + " | ".join(columns) + " | geomean |",
             "|---|" + "---:|" * (len(columns) + 1)]  # fmt: skip
    for name, *cells in table[1:]:
        ratios = [int(v) / known[c] for c, v in zip(columns, cells) if v and c in known]
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
        shown = [f"{int(v) / known[c]:.5f}" if v and c in known else "-"
                 for c, v in zip(columns, cells)]  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(shown) + f" | {_ratio(mean)} |")
    over = [r for r in records if r["wall_s"] > r["time_limit_s"]]
    lines += ["", f"Wall time of the whole command within its limit: {len(records) - len(over)}"
              f" / {len(records)} runs.", "",
              "| instance | seed | limit s | wall s | status | valid | stage | load | cores |",
              "|---|---:|---:|---:|---|---|---|---:|---:|"]  # fmt: skip
    for r in records:
        lines.append(f"| {r['instance']} | {r['seed']} | {r['time_limit_s']:g} | {r['wall_s']:.1f}"
                     f" | {r['status']} | {'yes' if r['valid'] else 'no: ' + r.get('reason', '')}"
                     f" | {r.get('stage') or '-'} | {r['load_before']:.2f} | {r['cores']} |")
    return "\n".join(lines) + "\n"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.5f}"


def write_records(out: Path, name: str, records: Sequence[dict]) -> None:
    """``records`` as gzipped JSON lines in ``out/name`` (the folder made if need be): sorted keys
    and no timestamp, so the same records give the same bytes."""
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    atomic_write(out / name, gzip.compress(lines.encode(), mtime=0))


def write_outputs(out: Path, records: Sequence[dict], known: dict[str, int], source: str) -> None:
    """``runs.jsonl.gz``, ``results.csv`` and ``report.md`` into ``out``."""
    write_records(out, "runs.jsonl.gz", records)
    atomic_write(out / "results.csv", results_csv(records))
    atomic_write(out / "report.md", report(records, known, source))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sweep_iopddl", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="contest problem files or folders of them")
    parser.add_argument("--seeds", type=names, default=("0",), metavar="S1,S2",
                        help="seeds (default: 0)")  # fmt: skip
    parser.add_argument("--time-limits", type=names, default=("contest",), metavar="T1,T2",
                        help="seconds, or contest (each instance's own; the default)")
    parser.add_argument("--picker", default="exact", help="picker (default: exact)")
    parser.add_argument("--pick-args", default="", metavar="'ARGS'",
                        help="more options for every `tacopt pick`, e.g. '--jobs 2'")
    parser.add_argument("--scheduler", metavar="ADDR", help="a Dask cluster, tcp://HOST:8786")
    parser.add_argument("--workers", type=at_least(1), default=1,
                        help="local worker processes (default 1: runs never share the cores)")
    parser.add_argument("--best-known", type=Path, metavar="README.md",
                        help="Markdown with a 'best known now' column (default: the first"
                        " folder's README.md)")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    args = parser.parse_args(argv)
    try:
        out = check_output_folder(args.out, what="--out")
        files = instance_files(args.paths)
        seeds = [int(s) for s in args.seeds]
        for limit in args.time_limits:
            if limit != "contest":
                seconds(limit)  # one line for a bad one, before any run
        readme = args.best_known or next(
            (Path(p) / "README.md" for p in args.paths if Path(p).is_dir()), None)
        records = sweep(files, seeds, args.time_limits, picker=args.picker,
                        extra=args.pick_args.split(), scheduler=args.scheduler,
                        workers=args.workers)  # fmt: skip
        write_outputs(out, records, best_known(readme), str(readme))
    except (TacoptError, IopddlError, ValueError, argparse.ArgumentTypeError) as exc:
        return print_error("sweep_iopddl", exc)
    print((out / "report.md").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
