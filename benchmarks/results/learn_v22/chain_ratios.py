"""The same chain models in several records files: each chain's whole latency against its ops'
sum (the in-model ratio a learn fits its scale on), the whole-model and op-sum timings of each
file against the first's, at the median over the chains every file has.

    python chain_ratios.py RECORDS.jsonl [RECORDS.jsonl ...]
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence

from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.records import (
    counted_ops,
    read_records,
    records_by_key,
)


def chain_timings(path: str) -> dict[str, tuple[float, float]]:
    """Chain model name -> (its latency net of the invoke overhead, its ops' net sum)."""
    records = read_records(path)
    by_key = records_by_key(records)
    overhead = statistics.median(r.get("overhead_us", 0.0) for r in records if r["type"] == "op")
    out: dict[str, tuple[float, float]] = {}
    for r in records:
        if r.get("type") != "model" or r.get("loop_trips") or not r.get("latency_us"):
            continue
        ops = sum(count * net_latency(op) for _, op, count in counted_ops(r, by_key)
                  if op.get("type") == "op")  # fmt: skip
        if ops > 0:
            out[r["model"]] = (r["latency_us"] - overhead, ops)
    return out


def main(paths: Sequence[str]) -> None:
    runs = [chain_timings(p) for p in paths]
    common = sorted(set.intersection(*(set(r) for r in runs)))
    first = runs[0]
    print(f"{len(common)} chains in every file")
    for path, run in zip(paths, runs, strict=True):
        ratio = statistics.median(run[c][0] / run[c][1] for c in common)
        model = statistics.median(run[c][0] / first[c][0] for c in common)
        ops = statistics.median(run[c][1] / first[c][1] for c in common)
        print(f"{path}: in-model ratio {ratio:.3f}; against the first: whole chains {model:.3f}, "
              f"op sums {ops:.3f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
