"""Compare two runs of a study: each picker's geometric-mean ratio to exact, before and after.

    python -m tacopt.benchmarks compare benchmarks/results/shared/results.jsonl.gz NEW.jsonl

``benchmarks/run_shared_zoo.sh`` runs the shared-zoo study afresh and calls this on the
committed results and the new ones, so the README headline can be checked by re-running it.
Besides the per-picker table it counts the cases both runs share and those where exact's
objective differs (the costs are deterministic, so it should not). Exit code 1 when a ratio
differs by more than ``--tol``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tacopt.benchmarks.harness import read_records
from tacopt.benchmarks.report import picker_summary


@dataclass(frozen=True, slots=True)
class PickerComparison:
    """One picker in two runs (``None`` where a run has no ratio for it)."""

    picker: str
    old_geomean: float | None
    new_geomean: float | None
    old_cases: int
    new_cases: int

    @property
    def difference(self) -> float | None:
        """``new - old`` geometric-mean ratio, or None when either is missing."""
        if self.old_geomean is None or self.new_geomean is None:
            return None
        return self.new_geomean - self.old_geomean


def compare_runs(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> list[PickerComparison]:
    """Each picker of either run with its geometric-mean ratio to exact in both.

    Examples
    --------
    >>> old = [{"key": "a|exact", "picker": "exact", "status": "OPTIMAL", "objective": 2.0,
    ...         "ratio_to_exact": 1.0}, {"key": "a|greedy", "picker": "greedy",
    ...         "status": "HEURISTIC", "objective": 3.0, "ratio_to_exact": 1.5}]
    >>> [(c.picker, c.difference) for c in compare_runs(old, old)]
    [('exact', 0.0), ('greedy', 0.0)]
    """
    before = {s.picker: s for s in picker_summary(old)}
    after = {s.picker: s for s in picker_summary(new)}
    pickers = list(dict.fromkeys([*before, *after]))
    return [
        PickerComparison(
            p,
            before[p].geomean_ratio if p in before else None,
            after[p].geomean_ratio if p in after else None,
            before[p].cases if p in before else 0,
            after[p].cases if p in after else 0,
        )
        for p in pickers
    ]


def exact_differences(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], rel_tol: float = 1e-6
) -> tuple[int, int]:
    """(cases in both runs, of which exact's objective differs beyond ``rel_tol``)."""

    def exact(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        return {
            r["key"]: r["objective"]
            for r in records
            if r.get("picker") == "exact" and r.get("objective") is not None
        }

    a, b = exact(old), exact(new)
    shared = sorted(set(a) & set(b))
    differ = sum(1 for k in shared if not math.isclose(a[k], b[k], rel_tol=rel_tol))
    return len(shared), differ


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison of two results files; exit 1 if a ratio moved beyond ``--tol``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="results JSONL, e.g. the committed one")
    parser.add_argument("new", help="results JSONL of the new run")
    parser.add_argument("--tol", type=float, default=5e-4, help="largest accepted difference")
    args = parser.parse_args(argv)
    old, new = read_records(args.old), read_records(args.new)
    rows = compare_runs(old, new)
    print("| picker | cases (committed / new) | geomean ratio committed | new | difference |")
    print("|:--|--:|--:|--:|--:|")
    for c in rows:
        print(f"| {c.picker} | {c.old_cases} / {c.new_cases} | {_fmt(c.old_geomean, '.4f')} | "
              f"{_fmt(c.new_geomean, '.4f')} | {_fmt(c.difference, '+.4f')} |")  # fmt: skip
    shared, differ = exact_differences(old, new)
    moved = [c.picker for c in rows if c.difference is None or abs(c.difference) > args.tol]
    print(f"exact objective: {shared} cases in both runs, {differ} differ")
    if moved:
        print(f"ratios differ beyond {args.tol:g} for: {', '.join(moved)}")
        return 1
    print(f"ratios match (every difference within {args.tol:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
