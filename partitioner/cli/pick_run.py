"""What ``tacopt pick`` runs once its options are parsed (:mod:`.pick` holds the parser,
imported by every ``tacopt --help``): its options record, the problem read once (a pick problem
or an IOPDDL contest file), the pickers, the table and the outputs.
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

from tacopt.cli_options import options_of
from tacopt.errors import TacoptError, one_line, printable
from tacopt.formats import json_file_kind
from tacopt.io import all_or_nothing
from tacopt.partitioner.cli import OptionError, align_columns, load_module
from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.pickers import get_picker, pick, picker_options
from tacopt.partitioner.pickers.registry import out_of_scope
from tacopt.partitioner.plan import NoPlanError, unit_label
from tacopt.partitioner.problem import PickProblem, load_problem
from tacopt.partitioner.problem.contest import (
    IopddlError,
    decode_file,
    is_iopddl,
    problem_from_dict,
    solution_indices,
    solution_json,
)
from tacopt.partitioner.problem.json_form import decode_problem

__all__ = ["PickOptions", "contest_time_limit", "options_from_args", "run_pick"]


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


def options_from_args(args: argparse.Namespace) -> PickOptions:
    """The frozen options of a parsed command line (argparse checked the lists and numbers)."""
    compare = args.compare is not None
    return options_of(
        PickOptions, args, pickers=args.compare if compare else (args.picker,), compare=compare,
        time_limit_s=args.time_limit,
    )  # fmt: skip


_OPTION_FLAGS = {
    "time_limit_s": "--time-limit",
    "backend": "--backend",
    "method": "--method",
    "seed": "--seed",
    "threads": "--jobs",
}


def run_pick(options: PickOptions) -> int:
    """Check the options, load the problem, run the pickers, print (and maybe write) the plans."""
    entered = time.monotonic()
    contest, data = _read(options.problem)
    outputs = [("--plan", options.plan), ("--solution", options.solution)]
    kinds = {what: json_file_kind(path or "") for what, path in outputs}
    with all_or_nothing(outputs, inputs=[options.problem], writes=kinds) as out:
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


#: Starting Python and importing tacopt, up to this module (``tacopt pick`` imports it as its
#: run starts, after the parser). Held at 3 s: a process that imported it later (a test run, a
#: notebook) did other work before, which no pick should pay for.
_STARTUP_S = min(seconds_since_start(), 3.0)


def _read(path: Path) -> tuple[Any, Any]:
    """Read ``path`` once: ``(contest problem, None)`` when it holds an IOPDDL problem (gzip, or
    JSON with ``problem.nodes``), ``(None, decoded JSON)`` for any other JSON, ``(None, None)``
    when it does not decode (:func:`load_problem` then reads it and names what is wrong)."""
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
