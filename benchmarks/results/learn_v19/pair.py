"""How well device B's op latencies follow from device A's measured ones, by kind and size:
in-sample medians of the ratio B / A per bin (an optimistic ceiling for a correction by kind x
size), and the ratio's spread per size (octaves of A's latency).

Run: ``python pair.py A.jsonl B.jsonl`` (the same models measured on both devices).
"""

import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Hashable
from typing import Any


def load(path: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    with open(path) as f:
        records = [json.loads(line) for line in f]
    return {
        (r["model"], r["key"], r.get("node", r.get("index"))): r
        for r in records
        if r.get("type") == "op" and r.get("latency_us")
    }


a, b = load(sys.argv[1]), load(sys.argv[2])
keys = sorted(set(a) & set(b), key=str)
print(len(a), len(b), len(keys))
rows = [
    (f"{a[k]['kind']}|{a[k].get('inference_type')}", a[k]["latency_us"], b[k]["latency_us"])
    for k in keys
]


def score(binner: Callable[[str, float], Hashable]) -> float:
    groups: dict[Hashable, list[float]] = defaultdict(list)
    for g, ta, tb in rows:
        groups[binner(g, ta)].append(math.log(tb / ta))
    med = {k: statistics.median(v) for k, v in groups.items()}
    hit = sum(abs(math.exp(med[binner(g, ta)]) * ta / tb - 1) <= 0.1 for g, ta, tb in rows)
    return 100 * hit / len(rows)


print(f"one ratio      {score(lambda g, t: 0):.1f}")
print(f"per kind       {score(lambda g, t: g):.1f}")
print(f"per size bin   {score(lambda g, t: round(math.log2(t))):.1f}")
print(f"kind x size    {score(lambda g, t: (g, round(math.log2(t)))):.1f}")
print(f"kind x size/2  {score(lambda g, t: (g, round(math.log2(t) * 2))):.1f}")
bins: dict[int, list[float]] = defaultdict(list)
for _, ta, tb in rows:
    bins[round(math.log2(ta))].append(tb / ta)
for k in sorted(bins):
    v = sorted(bins[k])
    n = len(v)
    q10, q50, q90 = v[n // 10], v[n // 2], v[9 * n // 10]
    print(f"t1~{2**k:8.1f}us n={n:4d} ratio q10 {q10:.2f} med {q50:.2f} q90 {q90:.2f}")
