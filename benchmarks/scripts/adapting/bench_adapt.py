"""Few-sample adaptation (issue 22): a learned model of one device adapted to another with a few
minutes of measurement there, against the same model only re-anchored and against a full learn
on the target device.

    python -m tacopt.benchmarks bench_adapt --base BASE.json --adapted ADAPTED.json \\
        --test zoo_test.jsonl [--full FULL.json]
    python -m tacopt.benchmarks bench_adapt --base BASE.json --records TARGET.jsonl --minutes 3 \\
        --test zoo_test.jsonl [--full FULL.json]

The first form evaluates a model written by ``tacopt learn --from BASE.json`` (the measurement
was live). The second adapts BASE on the records another run measured on the target device,
keeping only what the first ``--minutes`` of that run measured (records in file order, until
the time the measurement of their ops took, ``repeats`` x ``batch`` x latency summed per
record, reaches ``--minutes`` x 60 x ``--duty``; the duty cycle, measured time over wall time
of a sweep, defaults to the v5 sweep's 0.45): the same adaptation offline, for a device no
longer at hand. Test records must be of the zoo's test half (benchmarks/zoo_split.json).
Prints, per model, the figures of ``bench_learn`` on each test file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tacopt.benchmarks.scripts.learned.bench_learn import (
    SPLIT,
    fingerprint_of,
    foreign_ops,
    half_models,
    line,
)
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.model_file import read_model_doc


def first_minutes(records: list[dict], minutes: float, duty: float) -> list[dict]:
    """The op records a run had measured after ``minutes`` of wall time (see the module doc).

    >>> recs = [{"type": "op", "latency_us": 1000.0, "batch": 2, "repeats": 9}] * 5
    >>> len(first_minutes(recs, 0.001, 1.0))  # 60 ms: 18 ms per record
    4
    """
    budget_us = minutes * 60e6 * duty
    out, spent = [], 0.0
    for r in records:
        if r.get("type") != "op":
            continue
        spent += r["latency_us"] * r.get("batch", 1) * r.get("repeats", 9)
        out.append(r)
        if spent >= budget_us:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the model of the first device")
    ap.add_argument("--adapted", type=Path, help="a model from `tacopt learn --from BASE`")
    ap.add_argument("--records", type=Path, help="records measured on the target device")
    ap.add_argument("--minutes", type=float, default=3.0, help="with --records: keep this much")
    ap.add_argument("--duty", type=float, default=0.45, help="measured time / wall time")
    ap.add_argument("--full", type=Path, help="a full learn on the target device")
    ap.add_argument("--test", type=Path, nargs="+", required=True, help="test-half records")
    args = ap.parse_args(argv)
    if (args.adapted is None) == (args.records is None):
        print("bench_adapt: give --adapted or --records", file=sys.stderr)
        return 2
    test_models = {Path(f).stem for f in json.loads(SPLIT.read_text())["test"]}
    tests = {p: read_records(p) for p in args.test}
    for p, recs in tests.items():
        names = half_models(recs)
        if names - test_models or foreign_ops(recs):
            print(f"{p}: models outside the test half", file=sys.stderr)
            return 2
        print(f"test {p.name}: {len(names)} models, {fingerprint_of(recs)}")
    base = read_model_doc(args.base)
    if args.adapted is not None:
        adapted = read_model_doc(args.adapted)
        how = f"{args.adapted.name} ({adapted.get('learn', {}).get('measured_s', 0):.0f} s)"
    else:
        kept = first_minutes(read_records(args.records), args.minutes, args.duty)
        adapted = adapt(base, kept)
        how = f"{args.records.name}: first {len(kept)} ops (~{args.minutes:g} min)"
    models = {"base, re-anchored per family": base, f"adapted on {how}": adapted}
    if args.full is not None:
        models[f"full learn {args.full.name}"] = read_model_doc(args.full)
    for name, doc in models.items():
        model = LearnedCostModel(doc)
        print(f"\n{name}: {fingerprint_of(doc)}")
        for p, recs in tests.items():
            print(f"  {p.name:30s} {line(model_accuracy(model, recs))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
