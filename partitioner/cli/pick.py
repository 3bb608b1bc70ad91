"""``tacopt pick``: solve a pick problem file with one picker, or compare several.

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
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, names, options_of, output_file, seconds
from tacopt.errors import TacoptError, one_line, printable
from tacopt.partitioner.cli import OptionError, add_load_option, align_columns


@dataclass(frozen=True, slots=True)
class PickOptions:
    """Everything ``tacopt pick`` was asked to do, parsed from the command line."""

    problem: Path
    pickers: tuple[str, ...]
    compare: bool
    time_limit_s: float | None
    backend: str | None
    jobs: int | None
    method: str | None
    seed: int | None
    json: bool
    plan: Path | None
    load: tuple[str, ...] = ()
    solution: Path | None = None
    units: bool = False


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


def options_from_args(args: argparse.Namespace) -> PickOptions:
    """The frozen options of a parsed command line (argparse checked the lists and numbers)."""
    compare = args.compare is not None
    return options_of(
        PickOptions, args, pickers=args.compare if compare else (args.picker,), compare=compare,
        time_limit_s=args.time_limit,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Assign a device and type to every unit of a pick problem.

    Solve a pick problem (docs/pick-problem.md) and print the plan.
    """
    return run_pick(options_from_args(args))


_OPTION_FLAGS = {
    "time_limit_s": "--time-limit",
    "backend": "--backend",
    "method": "--method",
    "seed": "--seed",
    "threads": "--jobs",
}


def run_pick(options: PickOptions) -> int:
    """Check the options, load the problem, run the pickers, print (and maybe write) the plans."""
    from tacopt.io import all_or_nothing
    from tacopt.partitioner.cli import load_module
    from tacopt.partitioner.errors import PickerError
    from tacopt.partitioner.pickers import get_picker, pick, picker_options
    from tacopt.partitioner.pickers.registry import out_of_scope
    from tacopt.partitioner.plan import NoPlanError
    from tacopt.partitioner.problem import PickProblem, load_problem
    from tacopt.partitioner.problem.contest import solution_indices, solution_json

    entered = time.monotonic()
    contest, data = _read(options.problem)
    outputs = [("--plan", options.plan), ("--solution", options.solution)]
    with all_or_nothing(outputs, inputs=[options.problem]) as out:
        for spec in options.load:
            load_module(spec)
        for name in options.pickers:
            get_picker(name)
        given = {
            key: value
            for key, value in (
                ("time_limit_s", options.time_limit_s),
                ("backend", options.backend),
                ("method", options.method),
                ("seed", options.seed),
                ("threads", options.jobs),
            )
            if value is not None
        }
        per_picker = _options_per_picker(options, given)
        for name, chosen in per_picker.items():  # every core by default
            if "threads" in picker_options(name):
                chosen.setdefault("threads", len(os.sched_getaffinity(0)))
        if contest is not None and "time_limit_s" not in given:  # the contest's own limit
            limit = contest_time_limit(options.problem)
            for name, chosen in per_picker.items():
                if {"time_limit_s", "*"} & picker_options(name):
                    chosen["time_limit_s"] = limit
        source = str(options.problem)
        if contest is not None:
            problem = contest
        elif data is None:
            problem = load_problem(source)
        else:
            problem = PickProblem.from_dict(data, source=source)
        # The limit counts from the start of the process: what is spent so far comes off it.
        spent = _STARTUP_S + time.monotonic() - entered
        for chosen in per_picker.values():
            if "time_limit_s" in chosen:
                chosen["time_limit_s"] = max(chosen["time_limit_s"] - spent, 0.1)

        records: list[dict[str, Any]] = []
        failed: list[str] = []
        best: Any = None
        for name in options.pickers:
            # Comparing behaves as `tacopt bench` does: a picker that cannot take the problem
            # (out of its scope, or failing) is an ERROR row saying why; the others run.
            reason = out_of_scope(problem, name, **per_picker[name]) if options.compare else None
            if reason is not None:
                records.append({"picker": name, "status": "ERROR", "error": reason})
                failed.append(f"{name}: {reason}")
                continue
            try:
                plan = pick(problem, name, **per_picker[name])
                records.append(plan.to_dict())
                valid = plan.status != "INFEASIBLE"  # checked by pick: capacity, forbidden costs
                if valid and (best is None or plan.objective < best.objective):
                    best = plan
            except NoPlanError as exc:
                if not options.compare:
                    raise
                # No plan within the capacities is an outcome to compare, not a failure.
                records.append({"picker": name, "status": exc.status, "error": str(exc)})
            except TacoptError as exc:
                if not options.compare:
                    raise
                records.append({"picker": name, "status": "ERROR", "error": str(exc)})
                failed.append(f"{name}: {exc}")

        payload: Any = {"plans": records} if options.compare else records[0]
        if options.json:
            print(json.dumps(payload))
        else:
            # Unit and picker names come from the problem file: shown escaped.
            print(printable(_table(records), keep_newlines=True))
            if not options.compare and options.units:
                print(printable(_assignment(records[0]), keep_newlines=True))
            print(_units_line(problem.cost_unit))
        if failed and len(failed) == len(records):
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise PickerError(f"no picker gave a plan: {failed[0]}{more}; nothing written")
        wrote = []
        if options.plan is not None:
            out.write(options.plan, json.dumps(payload, indent=1) + "\n")
            wrote.append(f"wrote the plan{'s' if options.compare else ''} to {options.plan}")
        if options.solution is not None:
            if best is None:
                raise PickerError("--solution: no plan keeps the problem's rules (capacity,"
                                  " forbidden costs); nothing written")  # fmt: skip
            out.write(options.solution,
                      solution_json(solution_indices(problem, best.assignment)))  # fmt: skip
            wrote.append(f"wrote {best.picker}'s solution ({len(problem.units)} strategy"
                         f" indices) to {options.solution}")  # fmt: skip
    for line in wrote:  # after all_or_nothing has put every file in place
        print(f"tacopt pick: {line}", file=sys.stderr if options.json else sys.stdout)
    if failed:  # as `tacopt bench` warns of failed records
        print(f"tacopt pick: warning: {len(failed)} of {len(records)} pickers gave no plan "
              "(ERROR); the table says why", file=sys.stderr)  # fmt: skip
    return 0


#: The contest's time limit per instance (seconds), by the letter ending its name.
CONTEST_TIME_LIMIT_S = {"A": 60.0, "B": 60.0, "G": 120.0, "M": 180.0, "S": 240.0}
DEFAULT_TIME_LIMIT_S = 60.0


def contest_time_limit(path: Path) -> float:
    """The contest's time limit of a known instance (by file name), else the default.

    Examples
    --------
    >>> contest_time_limit(Path("asplos-2025-iopddl-G.json.gz"))
    120.0
    >>> contest_time_limit(Path("mine.json"))
    60.0
    """
    found = re.search(r"iopddl-([A-Z])(?:\.json(?:\.gz)?)?$", path.name)
    if found and found.group(1) in CONTEST_TIME_LIMIT_S:
        return CONTEST_TIME_LIMIT_S[found.group(1)]
    return DEFAULT_TIME_LIMIT_S


def seconds_since_start() -> float:
    """Seconds since this process started (Linux, from ``/proc``; 0 elsewhere)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(uptime - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return 0.0


#: Starting Python and importing tacopt, up to this module (``tacopt pick`` imports it first
#: thing). Held at 3 s: a process that imported it later (a test run, a notebook) did other
#: work before, which no pick should pay for.
_STARTUP_S = min(seconds_since_start(), 3.0)


def _read(path: Path) -> tuple[Any, Any]:
    """Read ``path`` once: ``(contest problem, None)`` when it holds an IOPDDL problem (gzip, or
    JSON with ``problem.nodes``), ``(None, decoded JSON)`` for any other JSON, ``(None, None)``
    when it does not decode (:func:`load_problem` then reads it and names what is wrong)."""
    from tacopt.partitioner.problem.contest import (
        IopddlError,
        decode_file,
        is_iopddl,
        problem_from_dict,
    )
    from tacopt.partitioner.problem.json_form import decode_problem

    try:
        raw = path.read_bytes()
    except OSError:
        return None, None  # load_problem names the file and the reason
    if raw[:2] == b"\x1f\x8b":
        data = decode_file(raw, str(path))
        if not is_iopddl(data):
            raise IopddlError(f"{path}: gzip data that is not a contest problem")
    else:
        try:
            data = decode_problem(raw, str(path))
        except TacoptError:
            return None, None
    if is_iopddl(data):
        return problem_from_dict(data, source=str(path)), None
    return None, data


def _options_per_picker(options: PickOptions, given: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The options each picker gets: all of them, or when comparing, those it takes.

    When comparing, an option that no listed picker takes is an error rather than ignored.
    """
    from tacopt.partitioner.pickers import picker_options

    if not options.compare:
        return {options.pickers[0]: given}
    accepted = {name: picker_options(name) for name in options.pickers}
    for key in given:
        if not any(key in a or "*" in a for a in accepted.values()):
            listed = ", ".join(options.pickers)
            raise OptionError(f"{_OPTION_FLAGS[key]}: none of the pickers {listed} takes it")
    return {
        name: {k: v for k, v in given.items() if k in a or "*" in a} for name, a in accepted.items()
    }


_COLUMNS = ("picker", "status", "objective", "bound", "gap", "compute", "transfer", "quant",
            "pairwise", "seconds")  # fmt: skip


def _table(records: Sequence[dict[str, Any]]) -> str:
    # The pairwise column only when some plan pays pairwise costs (an IOPDDL instance does).
    pairwise = any(r.get("breakdown", {}).get("pairwise") for r in records)
    columns = [c for c in _COLUMNS if pairwise or c != "pairwise"]
    rows = [columns]
    why = []
    for r in records:
        if "error" in r:
            rows.append([r["picker"], r.get("status", "ERROR")] + ["-"] * (len(columns) - 2))
            why.append(f"{r['picker']}: {one_line(r['error'])}")
            continue
        b = r["breakdown"]
        if r.get("reason"):  # the one checker's verdict (pickers.pick): what the plan breaks
            why.append(f"{r['picker']}: {r['status']}: {one_line(r['reason'])}")
        row = [r["picker"], r["status"], _num(r["objective"]), _num(r["bound"]), _gap(r["gap"]),
               _num(b["compute"]), _num(b["transfer"]), _num(b["quant"])]  # fmt: skip
        rows.append(row + ([_num(b["pairwise"])] if pairwise else []) + [f"{r['seconds']:.3f}"])
    return "\n".join([align_columns(rows, left=2), *why])


def _units_line(cost_unit: str) -> str:
    from tacopt.partitioner.plan import unit_label

    if cost_unit == "cost":  # the problem file does not say (the default)
        return "costs in the problem's own units"
    return f"costs in {unit_label(cost_unit)}"


def _assignment(record: dict[str, Any]) -> str:
    lines = ["", "unit  device/type"]
    lines += [f"{unit}  {c['device']}/{c['type']}" for unit, c in record["assignment"].items()]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    if isinstance(value, int):  # an exact integer objective (a contest problem): every digit
        return f"{value:,}"
    return "-" if value is None else f"{value:.6g}"


def _gap(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.3g}%"
