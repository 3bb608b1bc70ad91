"""Cross-check the exact picker's two methods on layered DAGs and their variants.

    python -m tacopt.benchmarks check_exact [--units 1500] [--seeds 0,1,2,3,4,5]

For every seed, the layered-DAG problem is solved as it is, with per-link prices that depend on
the source device (the ``extra`` variables), without boundaries, and without conversion costs;
each by the region certificate (``method="decompose"``) and by branch-and-bound on the whole
model (``method="monolithic"``). Both must be proven optimal with the same objective (relative
1e-6); the plan passes ``validate_plan``. Prints one line per case and exits 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from tacopt.partitioner.pickers import pick
from tacopt.partitioner.plan import validate_plan
from tacopt.partitioner.problem import Link, PickProblem
from tacopt.partitioner.problem.synthetic import layered_dag_problem

# Dearer links out of the accelerators than into them: prices depend on the source device.
LINKS = {
    ("CPU", "GPU"): Link(0.0005, 20.0),
    ("GPU", "CPU"): Link(0.002, 80.0),
    ("NPU", "CPU"): Link(0.003, 120.0),
}


def variants(problem: PickProblem) -> dict[str, PickProblem]:
    return {
        "plain": problem,
        "links": dataclasses.replace(problem, links=LINKS),
        "no-boundaries": dataclasses.replace(problem, boundaries=False),
        "no-conversions": dataclasses.replace(problem, quant_per_element=0.0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1500)
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    args = parser.parse_args(argv)
    mismatches = 0
    print(f"{'seed':>4} {'variant':15} {'decompose':>10} {'monolithic':>10} {'rounds':>6}  result")
    for seed in (int(s) for s in args.seeds.split(",")):
        for name, problem in variants(layered_dag_problem(args.units, seed=seed)).items():
            t0 = time.perf_counter()
            certified = pick(problem, "exact")
            t1 = time.perf_counter()
            monolithic = pick(problem, "exact", method="monolithic")
            t2 = time.perf_counter()
            validate_plan(problem, certified)
            same = abs(certified.objective - monolithic.objective) <= 1e-6 * max(
                1.0, abs(monolithic.objective)
            )
            ok = same and certified.status == monolithic.status == "OPTIMAL"
            mismatches += not ok
            print(
                f"{seed:4d} {name:15} {t1 - t0:9.2f}s {t2 - t1:9.2f}s "
                f"{certified.params.get('rounds', '-')!s:>6}  "
                f"{'same optimum' if ok else 'MISMATCH'} {certified.objective:.3f}"
            )
    print(f"mismatches: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
