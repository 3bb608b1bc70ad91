"""``tacopt pick`` on an IOPDDL contest file (``.json`` or ``.json.gz``).

Examples::

    tacopt pick asplos-2025-iopddl-B.json.gz --solution B.solution.json
    tacopt pick example.json --compare exact,greedy,brute --json

The pickers are the contest solver's methods (exact, greedy, brute); the time limit defaults to
the contest's for a known instance (A 60 s, B 60 s, G 120 s, M 180 s, S 240 s), else 60 s.
``--solution`` writes the contest's format (a JSON list of strategy indices) of the picker's
solution (with ``--compare``, the cheapest valid one). A picker that finds no valid solution
(an infeasible problem, or none found in time) fails the command after its row is printed,
and nothing is written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tacopt.fusion.ir.errors import TacoptError
from tacopt.partitioner.cli import OptionError, align_columns
from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.iopddl import PairwiseProblem

#: The contest's time limit per instance (seconds), by the letter ending its name.
CONTEST_TIME_LIMIT_S = {"A": 60.0, "B": 60.0, "G": 120.0, "M": 180.0, "S": 240.0}
DEFAULT_TIME_LIMIT_S = 60.0


def contest_time_limit(name: str, path: Path | None = None) -> float:
    """The contest's time limit of a known instance (by problem name or file name), else the
    default.

    Examples
    --------
    >>> contest_time_limit("asplos-2025-iopddl-S")
    240.0
    >>> contest_time_limit("mine", Path("asplos-2025-iopddl-G.json.gz"))
    120.0
    >>> contest_time_limit("mine")
    60.0
    """
    for text in (name, path.name if path else ""):
        found = re.search(r"iopddl-([A-Z])(?:\.json(?:\.gz)?)?$", text)
        if found and found.group(1) in CONTEST_TIME_LIMIT_S:
            return CONTEST_TIME_LIMIT_S[found.group(1)]
    return DEFAULT_TIME_LIMIT_S


def run_contest(options: Any, problem: PairwiseProblem) -> int:
    """Solve a contest problem with the pickers of ``options`` (a ``PickOptions``)."""
    from tacopt.fusion.ir.io import all_or_nothing
    from tacopt.partitioner.iopddl import solution_json
    from tacopt.partitioner.pickers.pairwise_solver import METHODS, solve_pairwise

    for name in options.pickers:
        if name not in METHODS:
            raise OptionError(f"--picker: {name!r} does not solve contest problems; use one of "
                              f"{', '.join(METHODS)}")  # fmt: skip
    for flag, value in (("--backend", options.backend), ("--method", options.method)):
        if value is not None:
            raise OptionError(f"{flag}: not used for contest problems")
    limit = options.time_limit_s or contest_time_limit(problem.name, options.problem)
    outputs = [("--plan", options.plan_out), ("--solution", options.solution_out)]
    with all_or_nothing(outputs) as out:
        records: list[dict[str, Any]] = []
        failed: list[str] = []
        best: tuple[int, Any] | None = None
        for name in options.pickers:
            try:
                result = solve_pairwise(problem, name, limit, seed=options.seed or 0)
            except TacoptError as exc:
                if not options.compare:
                    raise
                records.append({"picker": name, "status": "ERROR", "reason": str(exc)})
                failed.append(f"{name}: {exc}")
                continue
            record = result.to_dict()
            record["problem"] = problem.name
            records.append(record)
            if result.solution is None:
                failed.append(f"{name}: {result.status}: {result.reason}")
            elif best is None or result.cost < best[0]:  # type: ignore[operator]
                best = (result.cost, result.solution)  # type: ignore[assignment]
        payload: Any = {"plans": records} if options.compare else records[0]
        if options.as_json:
            print(json.dumps(payload))
        else:
            print(_table(records))
            print(f"problem {problem.name or options.problem.name}: {problem.n_nodes} nodes, "
                  f"{problem.n_edges} edges, usage limit {problem.usage_limit}, "
                  f"time limit {limit:g} s")  # fmt: skip
        if failed:
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise PickerError(f"{failed[0]}{more}; nothing written")
        if options.plan_out is not None:
            out.write(options.plan_out, json.dumps(payload) + "\n")
        if options.solution_out is not None and best is not None:
            out.write(options.solution_out, solution_json(best[1]))
    return 0


_COLUMNS = ("picker", "status", "objective", "bound", "gap", "seconds")


def _table(records: list[dict[str, Any]]) -> str:
    rows = [list(_COLUMNS)]
    for r in records:
        gap = r.get("gap")
        rows.append([
            r["picker"], r["status"], _int(r.get("objective")), _int(r.get("bound")),
            "-" if gap is None else f"{100 * gap:.3g}%",
            "-" if "seconds" not in r else f"{r['seconds']:.2f}",
        ])  # fmt: skip
    return align_columns(rows, left=2)


def _int(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
