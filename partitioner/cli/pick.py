"""``tacopt pick``: solve a pick problem file with one picker, or compare several.

This module is the command's parser (imported by every ``tacopt --help``); what it runs is in
:mod:`tacopt.partitioner.cli.pick_run`.

Examples::

    tacopt pick problem.json --picker exact --time-limit 30 --json
    tacopt pick problem.json --compare exact,tac,greedy
    tacopt pick problem.json --picker mincut --plan plan.json
    tacopt pick problem.json --load mypickers.py --picker mine
    tacopt pick asplos-2025-iopddl-B.json.gz --solution B.solution.json

An IOPDDL contest file (``.json`` or ``.json.gz``, recognised by its content) reads into the
same pick problem (:mod:`tacopt.partitioner.problem.contest`) and every picker runs on it; its
time limit defaults to the contest's (A 60 s, B 60 s, G 120 s, M 180 s, S 240 s; else 60 s), and
``--solution`` writes the contest's format (each unit's choice index) of the plan (with
``--compare``, the cheapest one that keeps the rules), and says so in one line; ``--units``
lists each unit's device and type.

Every picker's plan is checked the same way (:func:`tacopt.partitioner.pickers.pick`, by
:func:`tacopt.partitioner.plan.infeasibility`): one over a capacity or with a forbidden cost
(10^18, the contest's infinity) shows as INFEASIBLE, and a line under the table says why.

The time limit counts from the start of the process: starting Python and reading the problem
come off each picker's budget.

Every option is checked before a picker starts: the pickers exist (a name registered by
``--load`` or ``pkg.mod:Name``, resolved by :func:`tacopt.partitioner.pickers.get_picker`), each
option reaches a picker that takes it, the time limit is positive and finite, the ``--compare``
list is non-empty without repeats, and ``--plan`` can be written. When comparing, a picker that
cannot take the problem (outside its scope) or fails is what ``tacopt bench`` makes of it: an
ERROR row that says why, the other pickers run, the plans are written, and a warning goes to
stderr; only when no picker gives a plan does the command fail (one line, nothing written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, names, output_file, seconds
from tacopt.partitioner.cli import add_load_option

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``pick`` sub-command to ``tacopt``."""
    parser = add_command(subparsers, "pick", run, lists=("pickers",))
    parser.add_argument("problem", type=Path, help="pick problem JSON file")
    parser.add_argument(
        "--picker", default="exact", help="picker name or pkg.mod:Name (default: exact)"
    )
    parser.add_argument(
        "--compare", type=names, metavar="P1,P2,...", help="run several pickers, side by side"
    )
    parser.add_argument("--time-limit", type=seconds, metavar="S", help="solver time limit (s)")
    parser.add_argument("--backend", help="exact picker backend: highs, scip or cp-sat")
    parser.add_argument(
        "--method",
        help="exact picker with HiGHS: decompose (LP + region certificate, default) or "
        "monolithic (branch-and-bound on the whole model)",
    )
    parser.add_argument("--seed", type=int, help="random seed of the solver")
    parser.add_argument(
        "--jobs", type=at_least(1), metavar="N",
        help="exact picker: processes it may run at once, a portfolio of searches sharing their"
        " best plan (default: the cores available)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    parser.add_argument("--plan", type=output_file, metavar="OUT.json", help="write the plan here")
    parser.add_argument(
        "--solution",
        type=output_file,
        metavar="OUT.json",
        help="contest problems: write the solution in the contest's format (strategy indices)",
    )
    parser.add_argument(
        "--units", action="store_true", help="one picker: also print each unit's device/type"
    )
    add_load_option(parser, registers="pickers")


def run(args: argparse.Namespace) -> int:
    """Assign a device and type to every unit of a pick problem.

    Solve a pick problem (docs/pick-problem.md) and print the plan.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's module, and
    # what this command runs (the pickers' registry, the problem readers, numpy) would add to them.
    from tacopt.partitioner.cli.pick_run import options_from_args, run_pick

    return run_pick(options_from_args(args))
