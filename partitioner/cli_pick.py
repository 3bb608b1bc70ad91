"""``tacopt pick``: solve a pick problem file with one picker, or compare several.

Examples::

    tacopt pick problem.json --picker exact --time-limit 30 --json
    tacopt pick problem.json --compare exact,tac,greedy
    tacopt pick problem.json --picker mincut --plan plan.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class PickOptions:
    """Everything ``tacopt pick`` was asked to do, parsed from the command line."""

    problem: Path
    pickers: tuple[str, ...]
    compare: bool
    time_limit_s: float | None
    backend: str | None
    method: str | None
    seed: int | None
    as_json: bool
    plan_out: Path | None


def register(subparsers: Any) -> None:
    """Add the ``pick`` sub-command to ``tacopt``."""
    parser = subparsers.add_parser(
        "pick",
        help="assign a device and type to every unit of a pick problem",
        description="Solve a pick problem (docs/pick-problem.md) and print the plan.",
    )
    parser.add_argument("problem", type=Path, help="pick problem JSON file")
    parser.add_argument("--picker", default="exact", help="picker name (default: exact)")
    parser.add_argument("--compare", metavar="P1,P2,...", help="run several pickers, side by side")
    parser.add_argument("--time-limit", type=float, metavar="S", help="solver time limit (s)")
    parser.add_argument("--backend", help="exact picker backend: highs, scip or cp-sat")
    parser.add_argument(
        "--method",
        help="exact picker with HiGHS: decompose (LP + region certificate, default) or "
        "monolithic (branch-and-bound on the whole model)",
    )
    parser.add_argument("--seed", type=int, help="random seed of the solver")
    parser.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    parser.add_argument("--plan", type=Path, metavar="OUT.json", help="write the plan here")
    parser.set_defaults(run=run)


def options_from_args(args: argparse.Namespace) -> PickOptions:
    """The frozen options of a parsed command line."""
    compare = args.compare is not None
    names = args.compare.split(",") if compare else [args.picker]
    return PickOptions(
        problem=args.problem,
        pickers=tuple(n.strip() for n in names if n.strip()),
        compare=compare,
        time_limit_s=args.time_limit,
        backend=args.backend,
        method=args.method,
        seed=args.seed,
        as_json=args.json,
        plan_out=args.plan,
    )


def run(args: argparse.Namespace) -> int:
    """Entry point of ``tacopt pick``; returns the exit code."""
    return run_pick(options_from_args(args))


def run_pick(options: PickOptions) -> int:
    """Load the problem, run the pickers, print (and maybe write) the plans."""
    from tacopt.fusion.io import atomic_write
    from tacopt.partitioner.pickers import get_picker, pick, picker_options
    from tacopt.partitioner.problem import load_problem

    problem = load_problem(options.problem)
    for name in options.pickers:
        get_picker(name)
    given = {
        key: value
        for key, value in (
            ("time_limit_s", options.time_limit_s),
            ("backend", options.backend),
            ("method", options.method),
            ("seed", options.seed),
        )
        if value is not None
    }
    plans = []
    for name in options.pickers:
        accepted = picker_options(name)
        # When comparing, each picker gets only the options it takes.
        opts = (
            given
            if not options.compare or "*" in accepted
            else {k: v for k, v in given.items() if k in accepted}
        )
        plans.append(pick(problem, name, **opts))

    records = [plan.to_dict() for plan in plans]
    payload: Any = {"plans": records} if options.compare else records[0]
    if options.plan_out is not None:
        atomic_write(options.plan_out, json.dumps(payload, indent=1) + "\n")
    if options.as_json:
        print(json.dumps(payload))
    elif options.compare:
        print(_table(records))
    else:
        print(_table(records))
        print(_assignment(records[0]))
    return 0


_COLUMNS = ("picker", "status", "objective", "bound", "gap", "compute", "transfer", "quant",
            "seconds")  # fmt: skip


def _table(records: Sequence[dict[str, Any]]) -> str:
    rows = [list(_COLUMNS)]
    for r in records:
        b = r["breakdown"]
        rows.append(
            [r["picker"], r["status"], _num(r["objective"]), _num(r["bound"]), _gap(r["gap"]),
             _num(b["compute"]), _num(b["transfer"]), _num(b["quant"]), f"{r['seconds']:.3f}"]
        )  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in
                  enumerate(zip(row, widths)))
        for row in rows
    )  # fmt: skip


def _assignment(record: dict[str, Any]) -> str:
    lines = ["", "unit  device/type"]
    lines += [f"{unit}  {c['device']}/{c['type']}" for unit, c in record["assignment"].items()]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _gap(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.3g}%"
