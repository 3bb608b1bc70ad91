"""The offline fuzz campaign: mutated models (and pick problems, when available) at scale.

Runs cases ``0 .. --cases - 1`` of campaign ``--seed`` (see :mod:`tacopt.benchmarks.fuzz.models`)
through the checker and ``tacopt inspect``, and every ``--pipeline-every``-th case also through
``fuse -o``, ``partition --granularity op``, ``partition --export`` and ``rehydrate``, in worker
processes whose address space is capped (``RLIMIT_AS``). ``--problems N`` also runs the first N
mutated pick problems of the seed (``benchmarks/fuzz/problems.py``'s ``mutated_problems``, when
that module exists) through ``tacopt pick --compare`` with four pickers (in-process, not resumed).

Resumable: each finished chunk is appended to ``--state`` (JSON lines: the chunk's range, counts
per command and outcome, and its failures); a second run with the same file and seed skips what
is done. Prints the counts per outcome class and every failure (with the seed and case index that
rebuild it: ``fuzz_models.mutant(load_sources(), seed, index)``). Not a timing run.

    nice python -m tacopt.benchmarks fuzz --cases 100000 --seed 1 --state fuzz-1.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tacopt.benchmarks.fuzz.files import run_file_cases
from tacopt.benchmarks.fuzz.models import (
    FAILURES,
    OUTCOMES,
    ZOO_DIR,
    Outcome,
    default_seed,
    run_argv,
    run_cases,
)


def _done(
    state: Path, seed: int, kind: str = "models"
) -> tuple[set[int], Counter[tuple[str, str]], list[dict]]:
    """Case indices of ``kind`` already run for ``seed``, their counts and failures, from the
    state file."""
    done: set[int] = set()
    counts: Counter[tuple[str, str]] = Counter()
    failures: list[dict] = []
    if not state.is_file():
        return done, counts, failures
    for line in state.read_text().splitlines():
        row = json.loads(line)
        if row.get("seed") != seed or row.get("kind", "models") != kind:
            continue
        done.update(range(row["start"], row["stop"]))
        # "command/outcome": a file kind's command holds a slash (learned/evaluate)
        counts.update({tuple(k.rsplit("/", 1)): v for k, v in row["counts"].items()})
        failures += row["failures"]
    return done, counts, failures


def _record(state: Path | None, row: dict[str, Any]) -> None:
    if state is not None:
        with state.open("a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")


def _summarise(outcomes: list[Outcome]) -> tuple[Counter[tuple[str, str]], list[dict]]:
    counts = Counter((o.command, o.outcome) for o in outcomes)
    failures = [
        {"index": o.index, "command": o.command, "outcome": o.outcome, "detail": o.detail[:300],
         "mutation": o.mutation[:200]}
        for o in outcomes
        if o.outcome in FAILURES
    ]  # fmt: skip
    return counts, failures


#: The pickers each mutated problem goes through (as in tests/partitioner/test_fuzz_problems.py).
PICKERS = "exact,tac,greedy,first-fit"


def problem_cases(seed: int, n: int) -> Iterator[tuple[str, bytes]]:
    """(description, file bytes) of ``n`` mutated pick problems, if ``fuzz_problems`` exists."""
    try:
        # Deferred: the problem fuzzer is optional (this campaign runs without it).
        from tacopt.benchmarks.fuzz import problems as fuzz_problems
    except ImportError:
        return
    generate = getattr(fuzz_problems, "mutated_problems", None)
    if generate is None:
        return
    for k, item in enumerate(generate(seed, n)):
        if isinstance(item, tuple):
            note, data = str(item[0]), item[-1]
        else:
            note, data = f"problem {k}", getattr(item, "data", getattr(item, "text", item))
        yield note, data.encode() if isinstance(data, str) else bytes(data)


def run_problems(seed: int, n: int) -> tuple[Counter[tuple[str, str]], list[dict]]:
    """Mutated pick problems through ``tacopt pick --compare`` (in-process, classified)."""
    counts: Counter[tuple[str, str]] = Counter()
    failures: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tacopt-fuzz-problems-") as tmp:
        problem, out = Path(tmp) / "problem.json", Path(tmp) / "out"
        out.mkdir()
        for k, (note, data) in enumerate(problem_cases(seed, n)):
            problem.write_bytes(data)
            argv = ["pick", str(problem), "--compare", PICKERS, "--plan", str(out / "plan.json")]
            outcome, detail = run_argv(argv, out)
            counts["pick", outcome] += 1
            if outcome in FAILURES:
                failures.append({"index": k, "command": "pick", "outcome": outcome,
                                 "detail": detail[:300], "mutation": note[:200]})  # fmt: skip
            for stale in out.iterdir():
                stale.unlink()
    return counts, failures


def run_file_kinds(
    seed: int, n: int, kinds: list[str], state: Path | None, workers: int, chunk: int,
    timeout_s: float,
) -> tuple[Counter[tuple[str, str]], list[dict], dict[str, int]]:  # fmt: skip
    """Cases ``0 .. n - 1`` of each file kind (:mod:`~tacopt.benchmarks.fuzz.files`), resumable
    like the models; returns the counts per command and outcome, the failures and the cases run
    per kind."""
    counts: Counter[tuple[str, str]] = Counter()
    failures: list[dict] = []
    cases: dict[str, int] = {}
    for kind in kinds:
        done, c0, f0 = _done(state, seed, kind) if state else (set(), Counter(), [])
        counts.update(c0)
        failures += f0
        todo = [i for i in range(n) if i not in done]
        print(f"{kind}: {n:,} cases, {len(done):,} done before, {len(todo):,} to run", flush=True)
        start, ran = time.perf_counter(), 0
        for outcomes in run_file_cases(kind, seed, todo, workers=workers, chunk=chunk,
                                       timeout_s=timeout_s):  # fmt: skip
            c, f = _summarise(outcomes)
            counts.update(c)
            failures += f
            indices = sorted({o.index for o in outcomes})
            ran += len(indices)
            _record(state, {"seed": seed, "kind": kind, "start": indices[0],
                            "stop": indices[-1] + 1, "failures": f,
                            "counts": {f"{k[0]}/{k[1]}": v for k, v in c.items()}})  # fmt: skip
            if ran % 2000 < chunk:
                rate = ran / (time.perf_counter() - start)
                print(f"  {kind}: {ran:,} run ({rate:.0f}/s), {len(failures)} failures", flush=True)
        cases[kind] = len(done) + ran
    return counts, failures, cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=None, help="default: today's date")
    parser.add_argument("--pipeline-every", type=int, default=10, metavar="K")
    parser.add_argument("--problems", type=int, default=0, metavar="N")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=200)
    parser.add_argument("--state", type=Path, default=None, help="JSON-lines file to resume from")
    parser.add_argument("--no-zoo", action="store_true", help="bundled models only")
    parser.add_argument("--files", type=int, default=0, metavar="N",
                        help="also N cases of each file kind (learned, records, names)")
    parser.add_argument("--kinds", default="learned,records,names", help="file kinds to run")
    parser.add_argument("--case-timeout", type=float, default=30.0, metavar="S",
                        help="a file case running longer is a hang (default 30)")
    args = parser.parse_args()
    seed = default_seed() if args.seed is None else args.seed
    zoo = None if args.no_zoo else ZOO_DIR
    done, counts, failures = _done(args.state, seed) if args.state else (set(), Counter(), [])
    todo = [i for i in range(args.cases) if i not in done]
    pipeline = [i for i in todo if i % args.pipeline_every == 0]
    print(f"seed {seed}: {args.cases:,} cases, {len(done):,} done before, {len(todo):,} to run")
    start = time.perf_counter()
    ran = 0
    for chunk in run_cases(
        seed, todo, pipeline=pipeline, zoo=zoo, workers=args.workers, chunk=args.chunk
    ):
        c, f = _summarise(chunk)
        counts.update(c)
        failures += f
        indices = sorted({o.index for o in chunk})
        ran += len(indices)
        _record(args.state, {"seed": seed, "start": indices[0], "stop": indices[-1] + 1,
                             "counts": {f"{k[0]}/{k[1]}": v for k, v in c.items()},
                             "failures": f})  # fmt: skip
        if ran % 5000 < args.chunk:
            rate = ran / (time.perf_counter() - start)
            print(f"  {ran:,} cases run ({rate:.0f}/s), {len(failures)} failures", flush=True)
    if args.problems:
        c, f = run_problems(seed, args.problems)
        counts.update(c)
        failures += f
    if args.files:
        kinds = [k for k in args.kinds.split(",") if k]
        c, f, per_kind = run_file_kinds(seed, args.files, kinds, args.state, args.workers,
                                        args.chunk, args.case_timeout)  # fmt: skip
        counts.update(c)
        failures += f
        print("file cases per kind: " + ", ".join(f"{k} {n:,}" for k, n in per_kind.items()))
    print(f"\ncounts per command and outcome (seed {seed}; failures: {', '.join(OUTCOMES[2:])})")
    commands = sorted({k[0] for k in counts})
    print(f"{'command':<14}" + "".join(f"{o:>10}" for o in OUTCOMES))
    for command in commands:
        print(f"{command:<14}" + "".join(f"{counts[command, o]:>10,}" for o in OUTCOMES))
    total = {o: sum(v for k, v in counts.items() if k[1] == o) for o in OUTCOMES}
    print(f"{'all':<14}" + "".join(f"{total[o]:>10,}" for o in OUTCOMES))
    for row in failures[:50]:
        print(f"FAIL case {row['index']} {row['command']} {row['outcome']}: {row['detail']} "
              f"[{row['mutation']}]")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
