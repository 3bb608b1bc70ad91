"""Per-op latency ratios between two machines, by kernel family and by whether XNNPACK took the op.

Run: ``python family_ratios.py ZEN3_RECORDS.jsonl ZEN4_RECORDS.jsonl`` (the same configurations
measured on each: ``learn_v14/tune_ra.jsonl`` and ``z4_tune_b.jsonl``, unzipped). The second file's
op records carry ``delegated`` (measured since this session). Prints each family's reference
ratio (``speed``), then the ops' median and quartiles, delegated or not.
"""

import json
import statistics
import sys
from collections import defaultdict

from tacopt.cost_models.learned.measurement.speed import family, family_indices, run_speed


def ops(path: str) -> dict[str, dict]:
    with open(path) as f:
        recs = [json.loads(line) for line in f]
    return {r["key"]: r for r in recs if r.get("type") == "op"}


a, b = ops(sys.argv[1]), ops(sys.argv[2])
refs = family_indices(run_speed(b.values()), run_speed(a.values()))
print("references:", {k: round(v, 3) for k, v in refs.items()})
groups: dict[tuple[str, str], list[float]] = defaultdict(list)
for key in sorted(a.keys() & b.keys()):
    r = b[key]
    fam = family(r["kind"], r["inference_type"])
    took = {True: "delegated", False: "refused", None: "unknown"}[r.get("delegated")]
    groups[(fam, took)].append(r["latency_us"] / a[key]["latency_us"])
    if took == "refused":
        groups[(f"{r['kind']}|{r['inference_type']}", took)].append(
            r["latency_us"] / a[key]["latency_us"]
        )
for (name, took), v in sorted(groups.items()):
    q = statistics.quantiles(v, n=4) if len(v) > 3 else [min(v), statistics.median(v), max(v)]
    print(f"{name:40s} {took:9s} n {len(v):4d} median {q[1]:.3f} q25-q75 {q[0]:.2f}-{q[2]:.2f}")
