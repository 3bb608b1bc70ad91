"""Scaling study: exact against greedy on random layered-DAG pick problems of 100 to 50,000 units.

Each size is solved for several seeds (one problem per seed) in one worker, so timings are not
disturbed by a second study on the same cores; the script prints the median solve time per
picker and size, the median ratio of greedy to exact, and writes the results, ``report.md`` and
the log-log plot ``time_vs_units.png`` into ``--out`` (resumable, like every study; the report
covers every record in ``--out``, so a second run with other sizes or more repeats adds up)::

    python -m tacopt.benchmarks scaling                       # 100 ... 50,000 units, 3 seeds
    python -m tacopt.benchmarks scaling --sizes 100,1000 --repeats 5 --out /tmp/scaling
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from tacopt.benchmarks.harness import Study, read_records, run_study
from tacopt.benchmarks.report import write_report

SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000, 50_000)
OUT = Path(__file__).resolve().parents[2] / "results" / "scaling"


def scaling_studies(
    sizes: Sequence[int], repeats: int, pickers: Sequence[str], time_limit_s: float
) -> list[Study]:
    """One study per seed over the layered-DAG zoo of ``sizes``.

    Examples
    --------
    >>> [s.seed for s in scaling_studies([100], 3, ["exact"], 60.0)]
    [0, 1, 2]
    """
    zoo = "layered:" + ",".join(str(n) for n in sizes)
    return [
        Study(zoos=(zoo,), pickers=tuple(pickers), time_limit_s=time_limit_s, seed=seed)
        for seed in range(repeats)
    ]


def median_table(records: Sequence[dict]) -> str:
    """Median seconds per (units, picker), and greedy's median ratio to exact, as Markdown."""
    pickers = list(dict.fromkeys(r["picker"] for r in records))
    sizes = sorted({r["units"] for r in records if r.get("units")})
    head = ["units", *(f"{p} median s" for p in pickers), "non-exact median ratio", "runs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "--:|" * len(head)]
    for n in sizes:
        at = [r for r in records if r.get("units") == n and r.get("seconds") is not None]
        cells = [str(n)]
        for p in pickers:
            times = [r["seconds"] for r in at if r["picker"] == p]
            cells.append(f"{statistics.median(times):.3g}" if times else "–")
        ratios = [r["ratio_to_exact"] for r in at
                  if r["picker"] != "exact" and r.get("ratio_to_exact") is not None]  # fmt: skip
        cells.append(f"{statistics.median(ratios):.4f}" if ratios else "–")
        cells.append(str(len({r["seed"] for r in at})))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tacopt.benchmarks scaling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="units per problem")
    parser.add_argument("--repeats", type=int, default=3, help="seeds per size")
    parser.add_argument("--pickers", default="exact,greedy")
    parser.add_argument("--time-limit", type=float, default=120.0, metavar="S")
    parser.add_argument("--jobs", type=int, default=1, help="1 keeps timings clean (default)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = args.out / "results.jsonl"
    for study in scaling_studies(sizes, args.repeats, args.pickers.split(","), args.time_limit):
        run_study(study, results, jobs=args.jobs, progress=True)
    # The report covers the whole results file, so runs with different sizes / repeats add up.
    records = read_records(results)
    print(median_table(records))
    title = "Scaling: exact vs greedy on layered DAGs"
    extra = "## Medians per size\n\n" + median_table(records)
    md = write_report(records, args.out, title=title, extra=extra)
    print(f"report: {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
