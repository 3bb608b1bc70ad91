"""Pickers on synthetic layered-DAG problems: median wall time, status, objective, exact <= all.

Run::

    python -m tacopt.benchmarks bench_pickers --sizes 1000,10000 --seeds 0,1,2 --repeats 3
    python -m tacopt.benchmarks bench_pickers --sizes 50000 --repeats 1 --time-limit 60
    python -m tacopt.benchmarks bench_pickers --sizes 1000 --backends highs,scip,cp-sat
    python -m tacopt.benchmarks bench_pickers --sizes 0 --mincut-sizes 100000
    python -m tacopt.benchmarks bench_pickers --sizes 10000 --pickers greedy --mincut-sizes 0 \
        --methods decompose,monolithic        # the certificate against HiGHS's branch-and-bound

With ``--methods``, each exact run names its method (``exact/highs/monolithic``) and a line
gives each method's time over the last one's, problem by problem, from the same run.

Wall times include building the flat index and the model, and the final ``evaluate``; they
are the ``seconds`` each plan reports. Problems come from
:mod:`tacopt.partitioner.problem.synthetic`.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import replace

from tacopt.partitioner.pickers import pick
from tacopt.partitioner.pickers.formulation import build_model
from tacopt.partitioner.plan import Plan
from tacopt.partitioner.problem import PickProblem, index_problem
from tacopt.partitioner.problem.synthetic import layered_dag_problem, two_choice_problem


def median_run(problem: PickProblem, picker: str, repeats: int, **options: object) -> Plan:
    """The plan of the run with the median time (plans are deterministic; times are not).

    ``params["cpu_s"]`` is that run's process CPU time (user + sys), to tell load from work.
    """
    plans = []
    for _ in range(repeats):
        cpu = time.process_time()
        plan = pick(problem, picker, **options)
        plans.append(replace(plan, params={**plan.params, "cpu_s": time.process_time() - cpu}))
    return sorted(plans, key=lambda p: p.seconds)[len(plans) // 2]


def model_build_seconds(problem: PickProblem) -> tuple[float, float, int, int]:
    """(index seconds, model seconds, variables, rows) of the exact model."""
    started = time.perf_counter()
    index = index_problem(problem)
    indexed = time.perf_counter()
    model = build_model(index)
    built = time.perf_counter()
    return indexed - started, built - indexed, model.matrix.shape[1], model.matrix.shape[0]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--mincut-sizes", default="100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pickers", default="tac,greedy,first-fit")
    parser.add_argument("--backends", default="highs")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--seeds", default="0", help="comma-separated problem seeds")
    parser.add_argument("--methods", default="decompose",
                        help="exact's methods: decompose (the region certificate), monolithic")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# {os.cpu_count()} cores, load average {load:.1f}; median of {args.repeats} runs")
    print(f"{'units':>7} {'seed':>4} {'picker':<24} {'status':<10} {'objective':>14} {'gap':>8} "
          f"{'median_s':>9} {'cpu_s':>7}  exact<=all")  # fmt: skip
    seeds = [int(s) for s in args.seeds.split(",")]
    sizes = [int(s) for s in args.sizes.split(",") if int(s) > 0]
    for n, seed in ((n, seed) for n in sizes for seed in seeds):
        problem = layered_dag_problem(n, seed=seed)
        ix_s, model_s, n_vars, n_rows = model_build_seconds(problem)
        print(f"# {n} units: index {ix_s:.3f} s, model {model_s:.3f} s, "
              f"{n_vars} variables, {n_rows} rows")  # fmt: skip
        others = {name: median_run(problem, name, args.repeats)
                  for name in args.pickers.split(",")}  # fmt: skip
        methods = args.methods.split(",")
        for backend in args.backends.split(","):
            seconds = {}
            for method in methods:
                exact = median_run(problem, "exact", args.repeats, backend=backend,
                                   time_limit_s=args.time_limit, method=method)  # fmt: skip
                wins = all(exact.objective <= p.objective + 1e-6 for p in others.values())
                name = f"exact/{backend}" + (f"/{method}" if len(methods) > 1 else "")
                _row(n, seed, name, exact, "yes" if wins else "NO")
                seconds[method] = exact.seconds
            if len(methods) > 1:
                ratios = ", ".join(f"{m} {seconds[m] / seconds[methods[-1]]:.3f}x"
                                   for m in methods[:-1])  # fmt: skip
                print(f"# {n} units, seed {seed}: time over {methods[-1]}'s: {ratios}")
        for name, plan in others.items():
            _row(n, seed, name, plan, "")
    for n, seed in ((int(s), seed) for s in args.mincut_sizes.split(",") if int(s) > 0
                    for seed in seeds):  # fmt: skip
        problem = two_choice_problem(n, seed=seed)
        _row(n, seed, "mincut", median_run(problem, "mincut", args.repeats), "")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# load average at the end {load:.1f}")


def _row(n: int, seed: int, name: str, plan: Plan, verdict: str) -> None:
    gap = "-" if plan.gap is None else f"{100 * plan.gap:.3f}%"
    cpu = plan.params.get("cpu_s", float("nan"))
    print(f"{n:>7} {seed:>4} {name:<24} {plan.status:<10} {plan.objective:>14.1f} {gap:>8} "
          f"{plan.seconds:>9.3f} {cpu:>7.2f}  {verdict}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
