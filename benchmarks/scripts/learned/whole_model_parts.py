"""Where a learned model's whole-model error comes from: its ops or its whole-model terms.

    python -m tacopt.benchmarks whole_model_parts MODEL.json.gz RECORDS.jsonl.gz [...] \\
        [--worst 10] [--kinds 3] [--by-kind 8] [--ops 0]

For each records file (a family set measured by ``tacopt measure``, the zoo's test half), the
median whole-model error as the model prices it, and the same with every op at its *measured*
net latency (the terms alone: :func:`~tacopt.cost_models.learned.fitting.whole_model.
error_parts`); then per family (``family__name`` models,
:mod:`~tacopt.benchmarks.scripts.learned.families`) the same two medians; then the ``--worst``
models with the op kinds whose prices move them most (``--kinds``, in us and in percent of the
model's measured latency), and the kinds that cost whole models most (``--by-kind``: summed
over the models, with the median error were each priced as measured) and, ``--ops N``, the op
configurations that do (kind, shapes, how far off they are priced). A model whose error the
terms alone carry (the two errors alike) is the terms' to fix; one whose terms are right and
whose kinds are off is its ops'. Nothing is timed: it reads records.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tacopt.benchmarks.scripts.learned.families import family_of
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.whole_model import (
    ErrorParts,
    error_parts,
    in_model_net,
    measured_in_model_net,
)
from tacopt.cost_models.learned.measurement.records import read_records, records_by_key
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.model_file import read_model_doc


def _medians(parts: Sequence[ErrorParts]) -> str:
    err = [abs(p.error) * 100 for p in parts]
    terms = [abs(p.terms_error) * 100 for p in parts]
    return (f"{len(parts):3d} models  whole-model {statistics.median(err):5.1f} % (worst "
            f"{max(err):5.1f} %, over 10 %: {sum(e > 10 for e in err)})  terms alone "
            f"{statistics.median(terms):5.1f} % (worst {max(terms):5.1f} %)")  # fmt: skip


def report_lines(parts: Sequence[ErrorParts], *, worst: int, kinds: int) -> list[str]:
    """The report of one records file's :func:`error_parts` (see the module docstring)."""
    lines = [f"  {'all':12s} {_medians(parts)}"]
    families = sorted({family_of(p.model) for p in parts if "__" in p.model})
    for fam in families:
        lines.append(f"  {fam:12s} {_medians([p for p in parts if family_of(p.model) == fam])}")
    for p in sorted(parts, key=lambda p: -abs(p.error))[:worst]:
        top = ", ".join(f"{k} {us:+.1f} us ({us / p.measured_us * 100:+.1f} %)"
                        for k, us in p.kinds[:kinds])  # fmt: skip
        lines.append(f"    {p.model[:44]:44s} {p.error * 100:+6.1f} % (terms alone "
                     f"{p.terms_error * 100:+6.1f} %): {top}")  # fmt: skip
    return lines


def kind_lines(parts: Sequence[ErrorParts], *, most: int) -> list[str]:
    """The op kinds by what their prices cost whole models: the summed share of each model's
    measured latency (percentage points) and the median whole-model error were the kind priced
    as measured, the largest ``most`` first."""
    cost: dict[str, float] = {}
    for p in parts:
        for kind, us in p.kinds:
            cost[kind] = cost.get(kind, 0.0) + abs(us) / p.measured_us * 100
    median = statistics.median(abs(p.error) * 100 for p in parts)
    lines = [f"  kinds by what they cost whole models (median {median:.1f} % as priced):"]
    for kind, points in sorted(cost.items(), key=lambda kv: -kv[1])[:most]:
        fixed = statistics.median(
            abs(p.error - dict(p.kinds).get(kind, 0.0) / p.measured_us) * 100 for p in parts
        )
        lines.append(f"    {kind:34s} {points:6.1f} points; priced as measured: "
                     f"median {fixed:4.1f} %")  # fmt: skip
    return lines


def op_lines(
    parts: Sequence[ErrorParts], by_key: Mapping[str, Mapping[str, Any]], model: Any, *,
    most: int,
) -> list[str]:
    """The op configurations by what their prices cost whole models (summed share of each
    model's measured latency, percentage points), the largest ``most`` first: kind, operand
    shapes (``c``: a constant), whether the delegate took it, predicted / measured in-model net
    latency, and the models they are in."""
    cost: dict[str, float] = {}
    where: dict[str, set[str]] = {}
    for p in parts:
        for key, us in p.ops:
            cost[key] = cost.get(key, 0.0) + abs(us) / p.measured_us * 100
            where.setdefault(key, set()).add(p.model)
    lines = ["  op configurations by what they cost whole models:"]
    for key, points in sorted(cost.items(), key=lambda kv: -kv[1])[:most]:
        rec = by_key[key]
        shapes = " ".join(
            "x".join(map(str, t[0])) + ("c" if len(t) > 2 and t[2] else "")
            for t in rec.get("inputs", []) if t
        )  # fmt: skip
        ratio = in_model_net(model, rec, key=key) / measured_in_model_net(
            rec, model.fallback_overhead_us)  # fmt: skip
        lines.append(f"    {points:5.1f} points  {rec['kind']} {shapes}  delegated "
                     f"{rec.get('delegated')}  priced {ratio:.2f}x  in "
                     f"{', '.join(sorted(where[key]))}")  # fmt: skip
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="whole_model_parts",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("model", type=Path)
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--worst", type=int, default=10, help="models listed (default 10)")
    parser.add_argument("--kinds", type=int, default=3, help="kinds a model (default 3)")
    parser.add_argument("--by-kind", type=int, default=8, metavar="N",
                        help="the N kinds that cost whole models most (default 8)")  # fmt: skip
    parser.add_argument("--ops", type=int, default=0, metavar="N",
                        help="the N op configurations that cost whole models most")  # fmt: skip
    args = parser.parse_args(argv)
    model = LearnedCostModel(read_model_doc(args.model), source=str(args.model))
    for path in args.records:
        records = normalize_records(read_records(path), model.anchor_speed)
        print(f"{args.model} on {path}:")
        parts = error_parts(records, model)
        for line in report_lines(parts, worst=args.worst, kinds=args.kinds):
            print(line)
        for line in kind_lines(parts, most=args.by_kind) if args.by_kind else ():
            print(line)
        by_key = records_by_key(records)
        for line in op_lines(parts, by_key, model, most=args.ops) if args.ops else ():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
