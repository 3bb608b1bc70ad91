"""How much slower a learn's chain models run than their ops alone, by the bytes their ops read
and write per invoke: the median ratio of (model latency - invoke overhead) to the sum of its
ops' measured net latencies, per power of two of MB.

    python shape.py RECORDS.jsonl [RECORDS.jsonl ...]
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence

from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.records import (
    counted_ops,
    ops_and_bytes,
    read_records,
    records_by_key,
)


def main(paths: Sequence[str]) -> None:
    bins: dict[int, list[float]] = defaultdict(list)
    for path in paths:
        records = read_records(path)
        by_key = records_by_key(records)
        overhead = statistics.median(
            r.get("overhead_us", 0.0) for r in records if r.get("type") == "op"
        )
        for r in records:
            if r.get("type") != "model" or r.get("loop_trips") or not r.get("latency_us"):
                continue
            _, moved = ops_and_bytes(r, by_key)
            ops_sum = sum(count * net_latency(op) for _, op, count in counted_ops(r, by_key)
                          if op.get("type") == "op")  # fmt: skip
            if ops_sum > 0 and moved > 0:
                bins[math.floor(math.log2(moved / 2**20))].append(
                    (r["latency_us"] - overhead) / ops_sum
                )
    for b in sorted(bins):
        v = bins[b]
        q = statistics.quantiles(v, n=4) if len(v) > 3 else [math.nan] * 3
        print(f"2^{b:3d} MB  n={len(v):4d}  q25 {q[0]:.3f}  median {statistics.median(v):.3f}  "
              f"q75 {q[2]:.3f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
