"""``tacopt bench``: run a study and report it; ``tacopt bench report RESULTS.jsonl``: report only.

With no arguments, ``tacopt bench`` runs the bundled models on the device sets GPU,CPU /
NNAPI,CPU / GPU,NNAPI,CPU with the pickers exact, tac, greedy and first-fit, writes
``tacopt-bench/results.jsonl`` (resumable: run it again to finish an interrupted study) and the
report beside it, and prints the per-picker table. ``python -m tacopt.benchmarks bench`` is the
same command.

Every option is checked before any work and before anything is written: a bad one is one line
on stderr and exit code 2. Ctrl-C stops the study at once, keeps every finished record, says
how to resume and exits with 130.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, seconds
from tacopt.errors import EXIT_INTERRUPTED

DEFAULT_OUT = Path("tacopt-bench") / "results.jsonl"
EXIT_ALL_FAILED = 1
#: The zoos whose argument is a path (``iopddl:DIR``), not sizes.
_ZOOS_OF_A_PATH = ("iopddl", "folder", "shared")

_EPILOG = """\
zoos: bundled, shared (../shared/zoo), folder:PATH, transformer[:N,...] (layers),
resnet[:N,...] / resnet-int8[:N,...] (blocks), layered[:N,...] (units; synthetic pick problems),
iopddl:DIR (IOPDDL contest problems: pickers exact, greedy, brute; the contest's time limits).
{registered}
examples:
  tacopt bench                                   # bundled models, 3 device sets, {main_job}
  tacopt bench --zoo shared --granularity subgraph,op --out shared.jsonl
  tacopt bench --zoo layered:100,1000,10000 --pickers exact,greedy --jobs 1
  tacopt bench --zoo iopddl:../shared/iopddl --out iopddl/results.jsonl
  tacopt bench --pickers exact,mymod:MyPicker    # a picker of your own (pkg.mod:Name)
  tacopt bench --scheduler tcp://10.0.0.5:8786 --zoo shared
  tacopt bench report shared.jsonl -o shared-report/
"""
#: How long the main job (``tacopt bench``, no arguments) takes; see docs/benchmarks.md.
MAIN_JOB = "~3 s on 2 cores"


def _registered() -> str:
    """The registered names, listed in ``--help`` (computed when help is shown)."""
    from tacopt.benchmarks.zoos import known_zoos
    from tacopt.cost_models.base import registered_cost_models
    from tacopt.partitioner.pickers import picker_names
    from tacopt.partitioner.targets import target_names

    return (
        f"registered: devices {', '.join(target_names())}; pickers {', '.join(picker_names())}; "
        f"cost models {', '.join(registered_cost_models())}; zoos {', '.join(known_zoos())}.\n"
    )


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Fills the registered names into the epilog only when help is printed."""

    def add_text(self, text: str | None) -> None:
        if text is not None and "{registered}" in text:
            import textwrap

            listed = textwrap.fill(_registered(), width=100, break_on_hyphens=False)
            text = text.format(registered=listed + "\n", main_job=MAIN_JOB)
        super().add_text(text)


def _list(text: str) -> tuple[str, ...]:
    """A comma list; empty elements are kept, so that the study refuses them by name."""
    return tuple(s.strip() for s in text.split(","))


def _devices(text: str) -> tuple[str, ...]:
    return tuple(d.upper() for d in _list(text))


def register(subparsers: Any) -> None:
    """Add ``bench`` (and its ``report`` mode) to the ``tacopt`` sub-commands."""
    p = add_command(subparsers, "bench", run_bench, epilog=_EPILOG, formatter_class=_HelpFormatter)
    p.add_argument("--zoo", nargs="+", action="extend", metavar="NAME",
                   help="zoos to run (default: bundled)")  # fmt: skip
    p.add_argument("--devices", nargs="+", action="extend", type=_devices, metavar="D1,D2",
                   help="device sets, each a comma list (default: GPU,CPU NNAPI,CPU "
                   "GPU,NNAPI,CPU)")  # fmt: skip
    p.add_argument("--granularity", type=_list, default=("subgraph", "op"), metavar="G1,G2",
                   help="units of the pick problem: subgraph (TAC's raised subgraphs) and/or op "
                   "(one unit per op) (default: subgraph,op)")  # fmt: skip
    p.add_argument("--fusion", type=_list, default=("fused",), metavar="F1,F2",
                   help="fused (the pipeline fuses first) and/or plain (partition the model as it "
                   "is); both give the report's fusion table (default: fused)")  # fmt: skip
    p.add_argument(
        "--cost-model",
        type=_list,
        default=("tac",),
        metavar="M1,M2",
        help="cost models: names, model.json paths or pkg.mod:Factory (default: tac)",
    )
    p.add_argument(
        "--pickers",
        type=_list,
        default=None,
        metavar="P1,P2",
        help="registered pickers or pkg.mod:Name (default: exact,tac,greedy,first-fit; "
        "exact,greedy for iopddl:DIR)",
    )
    p.add_argument(
        "--jobs",
        type=at_least(1),
        default=None,
        metavar="N",
        help="worker processes (default: number of cores)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="run on a Dask cluster, e.g. tcp://HOST:8786 (needs tacopt[dask])",
    )
    p.add_argument(
        "--time-limit",
        type=seconds,
        default=None,
        metavar="S",
        help="time limit of the exact picker per problem, seconds > 0 (default: 60; the "
        "contest's own per instance for iopddl:DIR)",
    )
    p.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="MODULE",
        help="import a module or .py file that registers pickers, cost models or devices "
        "first, here and in every worker (repeatable)",
    )
    from tacopt.partitioner.cli.partition import add_memory_option, add_pin_option

    add_memory_option(p)
    add_pin_option(p, "in every model case whose device set holds DEVICE; a pin matching no op "
                   "of a model is ignored there; every picker keeps the pins")  # fmt: skip
    p.add_argument("--backend", default=None, help="exact picker backend (default: its own)")
    p.add_argument("--seed", type=int, default=0, help="seed of generators and pickers")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"results JSONL, resumed if present; it holds one study's zoos (default: "
        f"{DEFAULT_OUT} for the bundled models, tacopt-bench/ZOO/results.jsonl for others)",
    )
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="where report.md and the plots go (default: beside --out)",
    )
    p.add_argument("--no-report", action="store_true", help="write no report or plots")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again records that failed (ERROR / CRASH) instead of keeping them",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    modes = p.add_subparsers(dest="bench_mode", metavar="{report}")
    r = add_command(modes, "report", run_report)
    r.add_argument("results", type=Path, help="results JSONL written by tacopt bench")
    r.add_argument(
        "-o",
        "--out-dir",
        type=Path,
        default=None,
        help="output folder; an existing report there is replaced (default: the results "
        "file's folder, which must not hold a report yet)",
    )
    r.add_argument(
        "--title", default=None, help="report heading (default: the replaced report's, or the zoos)"
    )
    r.add_argument("--no-plots", action="store_true", help="Markdown only")
    r.add_argument("--no-pages", action="store_true",
                   help="write no plan pages (default: one HTML page per model, in pages/)")


def run_bench(args: argparse.Namespace) -> int:
    """Run a benchmark study (models x devices x granularities x pickers) and report it.

    Run a benchmark study: zoos x device sets x granularities x cost models x pickers, one JSONL
    record per picker run. Resumable; parallel by default.
    """
    if getattr(args, "bench_mode", None) == "report":
        return run_report(args)
    from tacopt.benchmarks.harness import StudyInterrupted

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
    from tacopt.benchmarks.harness import (
        DEFAULT_DEVICE_SETS,
        DEFAULT_PICKERS,
        FAILED,
        Study,
        run_study,
    )
    from tacopt.benchmarks.report import default_title, write_report
    from tacopt.partitioner.cli import load_module

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
    from tacopt.benchmarks.report import summary_table

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
    import json

    from tacopt.benchmarks.scripts.picking.bench_iopddl import report, run_iopddl_bench
    from tacopt.benchmarks.zoos import BenchmarkError
    from tacopt.io import atomic_write

    if len(zoos) != len(args.zoo):
        raise BenchmarkError("iopddl:DIR zoos run on their own, not with model zoos")
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
    from tacopt.io import check_output_folder, check_output_path

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


def run_report(args: argparse.Namespace) -> int:
    """Write the report of a results file.

    Write report.md and PNG plots from a results JSONL file and print the per-picker table.
    """
    from tacopt.benchmarks.harness import read_records
    from tacopt.benchmarks.report import report_file, summary_table

    md = report_file(
        args.results, args.out_dir, title=args.title, plots=not args.no_plots,
        pages=not getattr(args, "no_pages", False),
    )  # fmt: skip
    print(summary_table(read_records(args.results)))
    print(f"report:  {md}")
    return 0
