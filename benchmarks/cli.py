"""``tacopt bench``: run a study and report it; ``tacopt bench report RESULTS.jsonl``: report only.

With no arguments, ``tacopt bench`` runs the bundled models on the device sets GPU,CPU /
NNAPI,CPU / GPU,NNAPI,CPU with the pickers exact, tac, greedy and first-fit, writes
``tacopt-bench/results.jsonl`` (resumable: run it again to finish an interrupted study) and the
report beside it, and prints the per-picker table. ``python -m benchmarks`` is the same command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path("tacopt-bench") / "results.jsonl"

_EPILOG = """\
zoos: bundled, shared (../shared/zoo), folder:PATH, transformer[:N,...] (layers),
resnet[:N,...] / resnet-int8[:N,...] (blocks), layered[:N,...] (units; synthetic pick problems).

examples:
  tacopt bench                                   # bundled models, 3 device sets, ~1 min
  tacopt bench --zoo shared --granularity subgraph,op --out shared.jsonl
  tacopt bench --zoo layered:100,1000,10000 --pickers exact,greedy --jobs 1
  tacopt bench --scheduler tcp://10.0.0.5:8786 --zoo shared
  tacopt bench report shared.jsonl -o shared-report/
"""


def _list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _devices(text: str) -> tuple[str, ...]:
    return tuple(d.upper() for d in _list(text))


def register(subparsers: Any) -> None:
    """Add ``bench`` (and its ``report`` mode) to the ``tacopt`` sub-commands."""
    p = subparsers.add_parser(
        "bench",
        help="run a benchmark study (models x devices x granularities x pickers) and report it",
        description="Run a benchmark study: zoos x device sets x granularities x cost models x "
        "pickers, one JSONL record per picker run. Resumable; parallel by default.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--zoo", nargs="+", action="extend", metavar="NAME",
                   help="zoos to run (default: bundled)")  # fmt: skip
    p.add_argument("--devices", nargs="+", action="extend", type=_devices, metavar="D1,D2",
                   help="device sets, each a comma list (default: GPU,CPU NNAPI,CPU "
                   "GPU,NNAPI,CPU)")  # fmt: skip
    p.add_argument("--granularity", type=_list, default=("subgraph", "op"), metavar="G1,G2",
                   help="granularities: subgraph, op (default: subgraph,op)")  # fmt: skip
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
        default=("exact", "tac", "greedy", "first-fit"),
        metavar="P1,P2",
        help="pickers (default: exact,tac,greedy,first-fit)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="worker processes (default: number of cores; 1 = in this process)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="run on a Dask cluster, e.g. tcp://HOST:8786 (needs tacopt[dask])",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="time limit of the exact picker per problem (default: 60)",
    )
    p.add_argument("--backend", default=None, help="exact picker backend (default: its own)")
    p.add_argument("--seed", type=int, default=0, help="seed of generators and pickers")
    p.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="FILE",
        help=f"results JSONL, resumed if present (default: {DEFAULT_OUT})",
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
    p.set_defaults(run=run_bench)

    modes = p.add_subparsers(dest="bench_mode", metavar="{report}")
    r = modes.add_parser("report", help="write the report of a results file",
                         description="Write report.md and PNG plots from a results JSONL file "
                         "and print the per-picker table.")  # fmt: skip
    r.add_argument("results", type=Path, help="results JSONL written by tacopt bench")
    r.add_argument(
        "-o",
        "--out-dir",
        type=Path,
        default=None,
        help="output folder (default: the results file's folder)",
    )
    r.add_argument("--title", default=None, help="report heading")
    r.add_argument("--no-plots", action="store_true", help="Markdown only")
    r.set_defaults(run=run_report)


def run_bench(args: argparse.Namespace) -> int:
    """Run the study described by ``args``, write the report and print the per-picker table."""
    if getattr(args, "bench_mode", None) == "report":
        return run_report(args)
    from tacopt.benchmarks.harness import DEFAULT_DEVICE_SETS, Study, run_study
    from tacopt.benchmarks.report import summary_table, write_report

    study = Study(
        zoos=tuple(args.zoo or ("bundled",)),
        device_sets=tuple(args.devices or DEFAULT_DEVICE_SETS),
        granularities=tuple(args.granularity),
        cost_models=tuple(args.cost_model),
        pickers=tuple(args.pickers),
        time_limit_s=args.time_limit,
        backend=args.backend,
        seed=args.seed,
    )
    records = run_study(
        study,
        args.out,
        jobs=args.jobs,
        scheduler=args.scheduler,
        progress=not args.no_progress,
        retry_failed=args.retry_failed,
    )
    print(summary_table(records))
    print(f"results: {args.out}")
    if not args.no_report:
        md = write_report(records, args.report or args.out.parent, title=_title(study))
        print(f"report:  {md}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Write the report of ``args.results`` and print the per-picker table."""
    from tacopt.benchmarks.harness import read_records
    from tacopt.benchmarks.report import report_file, summary_table

    md = report_file(args.results, args.out_dir, title=args.title or f"tacopt benchmark: "
                     f"{args.results.name}", plots=not args.no_plots)  # fmt: skip
    print(summary_table(read_records(args.results)))
    print(f"report:  {md}")
    return 0


def _title(study: Any) -> str:
    return f"tacopt benchmark: {', '.join(study.zoos)}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks [ARGS]``: the same as ``tacopt bench [ARGS]``."""
    from tacopt.fusion.errors import TacoptError
    from tacopt.partitioner.cli import EXIT_BAD_INPUT

    parser = argparse.ArgumentParser(prog="python -m benchmarks", add_help=False)
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.run(args) or 0)
    except TacoptError as exc:
        print(f"tacopt bench: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("tacopt bench: interrupted (run the same command again to resume)", file=sys.stderr)
        return 130
