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
import textwrap
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, seconds
from tacopt.partitioner.cli.partition import add_memory_option, add_pin_option

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
    # Deferred for start-up: the registries (numpy, networkx, the devices' tables) are loaded only
    # when this help is printed, not by every command that builds the parser.
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
        help="results JSONL, resumed if present; it holds one study's zoos (default: "
        "tacopt-bench/results.jsonl for the bundled models, tacopt-bench/ZOO/results.jsonl for "
        "others)",
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
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.benchmarks.cli.bench_run import bench_command

    return bench_command(args)


def run_report(args: argparse.Namespace) -> int:
    """Write the report of a results file.

    Write report.md and PNG plots from a results JSONL file and print the per-picker table.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.benchmarks.cli.bench_run import report_command

    return report_command(args)
