"""What ``tacopt bench`` and ``tacopt bench report`` run once their options are parsed
(:mod:`.bench` holds the parser, imported by every ``tacopt --help``): the study, its report,
the contest mode, and where results go.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from tacopt.benchmarks.harness import (
    DEFAULT_DEVICE_SETS,
    DEFAULT_PICKERS,
    FAILED,
    Study,
    StudyInterrupted,
    read_records,
    run_study,
)
from tacopt.benchmarks.report import default_title, report_file, summary_table, write_report
from tacopt.benchmarks.scripts.picking.bench_iopddl import report, run_iopddl_bench
from tacopt.benchmarks.zoos import BenchmarkError
from tacopt.errors import EXIT_INTERRUPTED
from tacopt.io import atomic_write, check_output_folder, check_output_path, read_json_lines
from tacopt.partitioner.cli import load_module

DEFAULT_OUT = Path("tacopt-bench") / "results.jsonl"
EXIT_ALL_FAILED = 1
#: The zoos whose argument is a path (``iopddl:DIR``), not sizes.
_ZOOS_OF_A_PATH = ("iopddl", "folder", "shared")


def bench_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt bench`` (:func:`tacopt.benchmarks.cli.bench.run_bench`)."""
    if getattr(args, "bench_mode", None) == "report":
        return report_command(args)

    try:
        return _run_bench(args)
    except StudyInterrupted as stop:
        return _interrupted(f"{stop.done} of {stop.total} cases done")
    except KeyboardInterrupt:
        return _interrupted("no results lost")


def default_out(zoos: Sequence[str]) -> Path:
    """Where a study's results go without ``--out``: a folder of their own for zoos other than
    the bundled models, so that two studies never share a results file (and its report).

    >>> default_out(["bundled"]).as_posix(), default_out(["shared"]).as_posix()
    ('tacopt-bench/results.jsonl', 'tacopt-bench/shared/results.jsonl')
    >>> default_out(["iopddl:../shared/iopddl", "layered:100,1000"]).as_posix()
    'tacopt-bench/iopddl+layered-100-1000/results.jsonl'
    """
    if list(zoos) in ([], ["bundled"]):
        return DEFAULT_OUT
    names = []
    for zoo in zoos:
        kind, _, arg = zoo.partition(":")
        sizes = arg if kind not in _ZOOS_OF_A_PATH else ""  # a path would make a deep folder
        names.append(re.sub(r"[^\w.]+", "-", f"{kind}:{sizes}" if sizes else kind).strip("-"))
    return DEFAULT_OUT.parent / "+".join(names) / DEFAULT_OUT.name


def _run_bench(args: argparse.Namespace) -> int:
    if args.out is None:
        args.out = default_out(args.zoo or ())
    report_dir = None if args.no_report else (args.report or args.out.parent)
    _check_outputs(args.out, report_dir)
    contest = [z for z in args.zoo or () if z.startswith("iopddl:")]
    if contest:
        return _run_contest(args, contest, report_dir)
    for spec in args.load:
        load_module(spec)
    study = Study(
        zoos=tuple(args.zoo or ("bundled",)),
        device_sets=tuple(args.devices or DEFAULT_DEVICE_SETS),
        granularities=tuple(args.granularity),
        cost_models=tuple(args.cost_model),
        fusion=tuple(args.fusion),
        pickers=tuple(args.pickers or DEFAULT_PICKERS),
        time_limit_s=60.0 if args.time_limit is None else args.time_limit,
        backend=args.backend,
        seed=args.seed,
        memory=tuple(args.memory.items()),
        pins=tuple(args.pins),
    )
    records = run_study(
        study,
        args.out,
        jobs=args.jobs,
        scheduler=args.scheduler,
        progress=not args.no_progress,
        retry_failed=args.retry_failed,
        in_process=False,  # so that Ctrl-C never waits for a solve
        load=tuple(args.load),
        on_resume=lambda r: print(f"tacopt bench: {r.message(args.out)}", file=sys.stderr),
    )

    print(summary_table(records))
    print(f"results: {args.out}")
    if report_dir is not None:
        md = write_report(records, report_dir, title=default_title(records))
        print(f"report:  {md}")
    failed = sum(1 for r in records if r.get("status") in FAILED)
    if failed:
        where = "the Failures section of the report" if report_dir else str(args.out)
        print(f"tacopt bench: warning: {failed} of {len(records)} records failed "
              f"(ERROR / CRASH); see {where}", file=sys.stderr)  # fmt: skip
        if failed == len(records):
            return EXIT_ALL_FAILED
    return 0


def _run_contest(args: argparse.Namespace, zoos: list[str], report_dir: Path | None) -> int:
    """``--zoo iopddl:DIR``: every picker on every contest problem of DIR, each instance with
    the contest's time limit unless ``--time-limit`` is given; records to ``--out``, the
    report (``report.md``) to the report folder."""
    if len(zoos) != len(args.zoo):
        raise BenchmarkError("iopddl:DIR zoos run on their own, not with model zoos")
    if args.out.is_file() and any(
        "key" in r for r in read_json_lines(args.out, what="results file", error=BenchmarkError)
    ):  # the contest's records replace the file: never a model study's
        raise BenchmarkError(
            f"results file '{args.out}' holds the records of a model study: give --out a new file"
        )
    limit = args.time_limit
    pickers = args.pickers or ("exact", "greedy")
    records = []
    for zoo in zoos:
        folder = zoo.removeprefix("iopddl:")
        records += run_iopddl_bench(folder, pickers, limit, None, seed=args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out, "".join(json.dumps(r) + "\n" for r in records))
    print(f"results: {args.out}")
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(report_dir / "report.md", report(records))
        print(f"report:  {report_dir / 'report.md'}")
    return 0


def _check_outputs(out: Path, report_dir: Path | None) -> None:
    """Refuse an output that cannot be written, before any work (missing folders are made)."""
    if check_output_folder(out.parent, what="--out").exists():
        check_output_path(out, what="--out")
    if report_dir is not None:
        check_output_folder(report_dir, what="--report")
        if report_dir.is_dir():
            check_output_path(report_dir / "report.md", what="--report")


def _interrupted(done: str) -> int:
    """Ctrl-C: one line, exit 130; a further Ctrl-C while exiting is ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(f"tacopt bench: interrupted: {done}; run the same command again to resume",
          file=sys.stderr)  # fmt: skip
    return EXIT_INTERRUPTED


def report_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt bench report`` (:func:`tacopt.benchmarks.cli.bench.run_report`)."""
    md = report_file(
        args.results, args.out_dir, title=args.title, plots=not args.no_plots,
        pages=not getattr(args, "no_pages", False),
    )  # fmt: skip
    print(summary_table(read_records(args.results)))
    print(f"report:  {md}")
    return 0
